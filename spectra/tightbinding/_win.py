"""Wannier90 ``seedname.win``: the facts a ``_hr.dat`` lacks (cell, spinors, k-path, E_F).

The syntax follows the Wannier90 user guide: keywords are case-insensitive, a value is
separated from its keyword by ``=``, ``:`` or blanks, ``!`` and ``#`` start comments, blocks
``begin name`` ... ``end name`` may come in any order, and unknown keywords are ignored. A
known keyword that is malformed (or given twice) raises
:class:`~spectra.core.domain.InputError` naming ``file:line``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.domain import InputError

#: Bohr radius in Angstrom, the value Wannier90 (``constants.F90``, CODATA 2006) converts with.
BOHR = 0.52917721092

_TRUE = {"t", "true", ".true.", "t.", ".t", ".t."}
_FALSE = {"f", "false", ".false.", "f.", ".f", ".f."}
PathLike = str | os.PathLike
_KEY = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:[=:]\s*|\s+|$)(.*)$")


@dataclass(frozen=True)
class KPathSpec:
    """A ``kpoint_path`` block: ``path`` (``"L,G,X|K,G"``) through ``points`` (reduced
    coordinates of the 3-D reciprocal lattice), as :func:`~spectra.tightbinding.kpath`
    takes them; a label used for several points names the later ones ``label@2``, ..."""

    path: str
    points: dict[str, np.ndarray]


@dataclass(frozen=True)
class Win:
    """What spectra reads from a ``.win`` file (``None``: absent).

    ``unit_cell`` is in Angstrom (a ``bohr`` unit line is converted); ``atoms`` are
    ``(symbol, Cartesian Angstrom position)`` from ``atoms_cart`` or ``atoms_frac``;
    ``fermi_energy`` is in eV.
    """

    path: Path
    num_wann: int | None = None
    unit_cell: np.ndarray | None = None
    spinors: bool = False
    fermi_energy: float | None = None
    kpoint_path: KPathSpec | None = None
    atoms: list[tuple[str, np.ndarray]] = field(default_factory=list)


def _strip(line: str) -> str:
    return re.split(r"[!#]", line, maxsplit=1)[0].strip()


def _floats(path: PathLike, line: int, tokens: list[str], what: str) -> list[float]:
    try:
        values = [float(t.replace("d", "e").replace("D", "e")) for t in tokens]
    except ValueError:
        raise InputError(f"{path}:{line}", f"{what}: {' '.join(tokens)!r} is not numeric") from None
    if not all(np.isfinite(values)):
        raise InputError(f"{path}:{line}", f"{what} holds NaN/Inf")
    return values


def _rows(
    path: PathLike, name: str, body: list[tuple[int, str]], width: int, labelled: bool
) -> tuple[str | None, list[tuple[int, list[str]]]]:
    """Split a block into an optional unit line and rows of ``width`` tokens."""
    unit = None
    rows = [(n, text.split()) for n, text in body]
    if rows and len(rows[0][1]) == 1 and rows[0][1][0].lower() in ("bohr", "ang", "angstrom"):
        unit = rows.pop(0)[1][0].lower()
    for n, tok in rows:
        if len(tok) != width:
            raise InputError(
                f"{path}:{n}",
                f"{name}: expected {width} entries per line"
                + (" (label and numbers)" if labelled else "")
                + f", found {len(tok)}",
            )
    return unit, rows


def _cell(path: PathLike, body: list[tuple[int, str]]) -> np.ndarray:
    unit, rows = _rows(path, "unit_cell_cart", body, 3, False)
    if len(rows) != 3:
        where = f"{path}:{body[-1][0]}" if body else str(path)
        raise InputError(where, f"unit_cell_cart needs 3 lattice vectors, found {len(rows)}")
    cell = np.array([_floats(path, n, tok, "unit_cell_cart") for n, tok in rows])
    if abs(np.linalg.det(cell)) < 1e-12 * max(1.0, np.abs(cell).max()) ** 3:
        raise InputError(f"{path}:{rows[0][0]}", "unit_cell_cart vectors are linearly dependent")
    return cell * (BOHR if unit == "bohr" else 1.0)


def _atoms(
    path: PathLike, name: str, body: list[tuple[int, str]], cell: np.ndarray | None
) -> list[tuple[str, np.ndarray]]:
    unit, rows = _rows(path, name, body, 4, True)
    out = []
    for n, tok in rows:
        pos = np.array(_floats(path, n, tok[1:], name))
        if name == "atoms_frac":
            if cell is None:
                raise InputError(f"{path}:{n}", "atoms_frac needs a unit_cell_cart block")
            pos = pos @ cell
        elif unit == "bohr":
            pos = pos * BOHR
        out.append((tok[0], pos))
    return out


def _kpath(path: PathLike, body: list[tuple[int, str]]) -> KPathSpec:
    points: dict[str, np.ndarray] = {}
    legs: list[tuple[str, str]] = []
    for n, text in body:
        tok = text.split()
        if len(tok) != 8:
            raise InputError(
                f"{path}:{n}",
                f"kpoint_path: expected 'label k1 k2 k3 label k1 k2 k3', found {len(tok)} entries",
            )
        ends = []
        for label, coords in ((tok[0], tok[1:4]), (tok[4], tok[5:8])):
            if "," in label or "|" in label or "@" in label:
                raise InputError(f"{path}:{n}", f"kpoint_path label {label!r} holds , | or @")
            k = np.array(_floats(path, n, coords, "kpoint_path"))
            # one label may name several equivalent points (X at -0.5 and at 0.5): those
            # get keys label@2, label@3, ... (shown as the label)
            same = [key for key in points if key.split("@")[0] == label]
            key = next((q for q in same if np.allclose(points[q], k, atol=1e-8)), None)
            if key is None:
                key = label if not same else f"{label}@{len(same) + 1}"
                points[key] = k
            ends.append(key)
        legs.append((ends[0], ends[1]))
    if not legs:
        raise InputError(str(path), "the kpoint_path block is empty")
    parts = [[legs[0][0], legs[0][1]]]
    for a, b in legs[1:]:
        if a == parts[-1][-1]:
            parts[-1].append(b)
        else:
            parts.append([a, b])
    return KPathSpec("|".join(",".join(p) for p in parts), points)


def _logical(path: PathLike, line: int, key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise InputError(f"{path}:{line}", f"{key} = {value!r} is not a logical (.true./.false.)")


def read_win(path: PathLike) -> Win:
    """Parse ``path`` (a ``seedname.win``): see :class:`Win` for what is kept.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "pt.win")
    >>> _ = open(f, "w").write("Num_Wann : 18\\nspinors = T  ! SOC\\nbegin unit_cell_cart\\n"
    ...     "bohr\\n0 3.7 3.7\\n3.7 0 3.7\\n3.7 3.7 0\\nend unit_cell_cart\\n")
    >>> w = read_win(f)
    >>> w.num_wann, w.spinors, round(float(w.unit_cell[0, 1]), 6)
    (18, True, 1.957956)
    """
    lines = Path(path).read_text(errors="replace").splitlines()
    scalars: dict[str, tuple[int, str]] = {}
    blocks: dict[str, list[tuple[int, str]]] = {}
    i = 0
    while i < len(lines):
        text = _strip(lines[i])
        i += 1
        if not text:
            continue
        head = text.split()
        if head[0].lower() == "begin":
            if len(head) < 2:
                raise InputError(f"{path}:{i}", "'begin' without a block name")
            name, start, body = head[1].lower(), i, []
            while i < len(lines):
                inner = _strip(lines[i])
                i += 1
                tok = inner.split()
                if tok and tok[0].lower() == "end":
                    if len(tok) < 2 or tok[1].lower() != name:
                        raise InputError(f"{path}:{i}", f"block {name!r} ends with {inner!r}")
                    break
                if inner:
                    body.append((i, inner))
            else:
                raise InputError(f"{path}:{start}", f"block {name!r} has no 'end {name}'")
            if name in blocks:
                raise InputError(f"{path}:{start}", f"block {name!r} is given twice")
            blocks[name] = body
            continue
        match = _KEY.match(text)
        if match is None:
            continue  # not a keyword line (Wannier90 would refuse it; we ignore it)
        key, value = match.group(1).lower(), match.group(2).strip()
        if key in scalars and key in ("num_wann", "spinors", "fermi_energy"):
            raise InputError(
                f"{path}:{i}", f"{key} is given twice (first on line {scalars[key][0]})"
            )
        scalars.setdefault(key, (i, value))
    num_wann = None
    if "num_wann" in scalars:
        line, value = scalars["num_wann"]
        if not re.fullmatch(r"\+?\d+", value) or int(value) < 1:
            raise InputError(f"{path}:{line}", f"num_wann = {value!r} is not a positive integer")
        num_wann = int(value)
    spinors = False
    if "spinors" in scalars:
        line, value = scalars["spinors"]
        spinors = _logical(path, line, "spinors", value)
    fermi = None
    if "fermi_energy" in scalars:
        line, value = scalars["fermi_energy"]
        tok = value.split()
        if len(tok) != 1:
            raise InputError(f"{path}:{line}", f"fermi_energy = {value!r} is not one number")
        fermi = _floats(path, line, tok, "fermi_energy")[0]
    cell = _cell(path, blocks["unit_cell_cart"]) if "unit_cell_cart" in blocks else None
    if "atoms_cart" in blocks and "atoms_frac" in blocks:
        raise InputError(str(path), "gives both atoms_cart and atoms_frac")
    atoms: list[tuple[str, np.ndarray]] = []
    for name in ("atoms_cart", "atoms_frac"):
        if name in blocks:
            atoms = _atoms(path, name, blocks[name], cell)
    kp = _kpath(path, blocks["kpoint_path"]) if "kpoint_path" in blocks else None
    return Win(Path(path), num_wann, cell, spinors, fermi, kp, atoms)


__all__ = ["BOHR", "KPathSpec", "Win", "read_win"]
