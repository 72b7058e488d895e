"""Wannier90 ``seedname_hr.dat`` (with ``_wsvec.dat``, ``_centres.xyz``, ``.win``) I/O."""

from __future__ import annotations

import datetime
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..core.domain import InputError
from ._model import Model

PathLike = str | os.PathLike


def _seed(path: Path) -> str:
    name = path.name
    return name[: -len("_hr.dat")] if name.endswith("_hr.dat") else path.stem


def _where(path: PathLike, line: int) -> str:
    return f"{path}:{line}"


def _is_integer(tokens: np.ndarray) -> np.ndarray:
    """Elementwise: does each string token spell an integer (optional sign, digits only)?"""
    body = np.char.lstrip(tokens.astype(str), "+-")
    return np.char.isdigit(body)


def _refuse_non_integers(
    path: PathLike, tokens: np.ndarray, line_of: np.ndarray, names: list[str]
) -> None:
    """Raise :class:`InputError` at the first token (row-major) that is not an integer.

    ``tokens`` is ``(rows, len(names))``; ``line_of[row]`` its 1-based line number.
    """
    ok = _is_integer(tokens)
    if bool(ok.all()):
        return
    row, col = (int(i) for i in np.argwhere(~ok)[0])
    raise InputError(
        _where(path, int(line_of[row])),
        f"{names[col]} {str(tokens[row, col])!r} is not an integer",
        hint="Wannier90 writes R vectors, orbital indices and weights as integers; "
        "refusing rather than truncating",
    )


def parse_hr(path: PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(R (nR, 3) int, ndegen (nR,), H(R) (nR, nw, nw) complex, undivided)`` from hr.dat.

    Errors are :class:`~spectra.core.domain.InputError` (a ``ValueError``) naming
    ``path:line``; non-integer R components, orbital indices or weights are refused.
    """
    text = Path(path).read_text().splitlines()
    if len(text) < 3:
        raise InputError(str(path), "is too short for a Wannier90 hr.dat file")
    for line in (2, 3):
        tok = text[line - 1].split()
        if not tok or not _is_integer(np.array(tok[:1])).all():
            raise InputError(
                _where(path, line), "must hold num_wann (line 2) and nrpts (line 3) as integers"
            )
    nw, nr = int(text[1].split()[0]), int(text[2].split()[0])
    if nw < 1 or nr < 1:
        raise InputError(str(path), f"num_wann={nw} and nrpts={nr} must be positive")
    # degeneracy weights: 15 per line, as many lines as it takes
    weights: list[str] = []
    wline: list[int] = []
    lineno = 3
    while len(weights) < nr and lineno < len(text):
        tok = text[lineno].split()
        lineno += 1
        weights += tok
        wline += [lineno] * len(tok)
    if len(weights) < nr:
        raise InputError(str(path), f"expected {nr} degeneracy weights, found {len(weights)}")
    if len(weights) > nr:
        raise InputError(
            _where(path, wline[nr]), f"holds more than the {nr} degeneracy weights (nrpts)"
        )
    wtok = np.array(weights).reshape(nr, 1)
    _refuse_non_integers(path, wtok, np.array(wline), ["degeneracy weight"])
    ndegen = wtok[:, 0].astype(np.int64)
    if np.any(ndegen < 1):
        bad = int(np.argmax(ndegen < 1))
        raise InputError(_where(path, wline[bad]), "degeneracy weights must be >= 1")
    body = [(i + 1, ln.split()) for i, ln in enumerate(text[lineno:], start=lineno) if ln.split()]
    need = nr * nw * nw
    for line, tok in body:
        if len(tok) != 7:
            raise InputError(
                _where(path, line), f"expected 7 numbers 'R1 R2 R3 m n Re Im', found {len(tok)}"
            )
    if len(body) != need:
        raise InputError(
            str(path),
            f"expected {nr} x {nw}^2 = {need} lines of 'R1 R2 R3 m n Re Im', found {len(body)}",
        )
    line_of = np.array([line for line, _ in body])
    tokens = np.array([tok for _, tok in body])
    _refuse_non_integers(path, tokens[:, :5], line_of, ["R1", "R2", "R3", "m", "n"])
    ints = tokens[:, :5].astype(np.int64).reshape(nr, nw * nw, 5)
    try:
        vals = tokens[:, 5:].astype(float)
    except ValueError:
        row = next(i for i, t in enumerate(tokens[:, 5:]) if not all(_is_float(x) for x in t))
        raise InputError(_where(path, int(line_of[row])), "Re/Im is not a number") from None
    rvecs = ints[:, 0, :3]
    moved = np.any(ints[:, :, :3] != ints[:, :1, :3], axis=-1).ravel()
    if moved.any():
        raise InputError(
            _where(path, int(line_of[np.argmax(moved)])),
            "R changes inside a block of num_wann^2 lines",
        )
    mn = ints[:, :, 3:5].reshape(-1, 2) - 1
    out = np.any((mn < 0) | (mn >= nw), axis=-1)
    if out.any():
        raise InputError(
            _where(path, int(line_of[np.argmax(out)])), f"orbital index outside 1..{nw}"
        )
    seen = set()
    for i, r in enumerate(map(tuple, rvecs)):
        if r in seen:
            raise InputError(
                _where(path, int(line_of[i * nw * nw])), f"the R vector {r} appears twice"
            )
        seen.add(r)
    cells = mn[:, 0] * nw + mn[:, 1] + np.repeat(np.arange(nr), nw * nw) * nw * nw
    if len(np.unique(cells)) != cells.size:
        _, first = np.unique(cells, return_index=True)
        dup = sorted(set(range(cells.size)) - set(first.tolist()))[0]
        raise InputError(
            _where(path, int(line_of[dup])), "the pair (m, n) appears twice in this R block"
        )
    hr = np.zeros((nr, nw, nw), complex)
    ir = np.repeat(np.arange(nr), nw * nw)
    hr[ir, mn[:, 0], mn[:, 1]] = vals[:, 0] + 1j * vals[:, 1]
    return rvecs, ndegen, hr


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def parse_wsvec(path: PathLike, nw: int) -> dict[tuple[int, int, int, int, int], np.ndarray]:
    """``{(R1, R2, R3, m, n): T (nT, 3)}`` (0-based m, n) from ``seedname_wsvec.dat``.

    Every entry must list at least one shift ``T`` (a count of 0 would delete a hopping);
    all numbers must be integers. Errors name ``path:line``.
    """
    lines = [
        (i + 1, ln.split()) for i, ln in enumerate(Path(path).read_text().splitlines()) if i > 0
    ]
    lines = [(n, t) for n, t in lines if t]
    out: dict[tuple[int, int, int, int, int], np.ndarray] = {}
    i = 0

    def ints(k: int, count: int, what: str) -> list[int]:
        if k >= len(lines):
            raise InputError(str(path), f"ends early: expected {what} after the last line")
        line, tok = lines[k]
        if len(tok) < count or not _is_integer(np.array(tok[:count])).all():
            raise InputError(_where(path, line), f"expected {what} ({count} integers)")
        return [int(x) for x in tok[:count]]

    while i < len(lines):
        r1, r2, r3, m, n = ints(i, 5, "'R1 R2 R3 m n'")
        (nt,) = ints(i + 1, 1, "the number of shifts")
        if nt < 1:
            raise InputError(
                _where(path, lines[i + 1][0]),
                f"lists {nt} shifts for R=({r1}, {r2}, {r3}), m={m}, n={n}",
                hint="an entry needs at least one shift T; 0 would silently delete the hopping",
            )
        if not (1 <= m <= nw and 1 <= n <= nw):
            raise InputError(_where(path, lines[i][0]), f"orbital index outside 1..{nw}")
        shifts = np.array([ints(i + 2 + j, 3, "a shift 'T1 T2 T3'") for j in range(nt)])
        out[(r1, r2, r3, m - 1, n - 1)] = shifts.reshape(nt, 3)
        i += 2 + nt
    return out


def parse_centres(path: PathLike, nw: int) -> np.ndarray:
    """Cartesian Wannier centres ``(nw, 3)``: the ``X`` lines of ``seedname_centres.xyz``."""
    lines = Path(path).read_text().splitlines()[2:]
    xs = [ln.split()[1:4] for ln in lines if ln.split() and ln.split()[0].upper() == "X"]
    if len(xs) < nw:
        raise ValueError(f"{path}: {len(xs)} Wannier centres ('X' lines), need {nw}")
    return np.array(xs[:nw], dtype=float)


def parse_win_cell(path: PathLike) -> np.ndarray | None:
    """``unit_cell_cart`` (Angstrom) from a ``.win`` file, or None when absent."""
    text = Path(path).read_text()
    block = re.search(
        r"begin\s+unit_cell_cart(.*?)end\s+unit_cell_cart", text, re.IGNORECASE | re.DOTALL
    )
    if block is None:
        return None
    rows = [
        ln.split()
        for ln in block.group(1).splitlines()
        if ln.split() and not ln.strip().startswith(("!", "#"))
    ]
    scale = 1.0
    if rows and len(rows[0]) == 1:
        unit = rows.pop(0)[0].lower()
        scale = 0.52917721092 if unit.startswith("bohr") else 1.0
    return np.array(rows[:3], dtype=float) * scale


def read_wannier90(
    path: PathLike,
    *,
    lattice: Any = None,
    centres: Any = None,
    wsvec: Any = None,
    dim: int | None = None,
    auto: bool = True,
    tol: float = 1e-5,
) -> Model:
    """A :class:`Model` from Wannier90's ``seedname_hr.dat``.

    Parameters
    ----------
    path : the ``_hr.dat`` file. ``H(R)`` is divided by its degeneracy weight.
    lattice : ``(3, 3)`` lattice vectors (rows, Angstrom), or a ``.win`` path; default: the
        ``unit_cell_cart`` of ``seedname.win`` next to the file when ``auto``, else identity.
    centres : Cartesian centres ``(nw, 3)`` or a ``_centres.xyz`` path; default:
        ``seedname_centres.xyz`` when ``auto`` and present, else all at the origin.
    wsvec : a ``_wsvec.dat`` path (``use_ws_distance``): each ``H(R)_mn / ndegen`` is spread
        evenly over ``R + T`` for the listed shifts ``T``; default: ``seedname_wsvec.dat``
        when ``auto`` and present.
    dim : keep the first ``dim`` directions (e.g. 2 for a layer written as 3D); the others
        must carry no hopping. Default: detected from the R vectors that carry hoppings
        (trailing directions without any are dropped, as ``spectra bands`` does), so a
        graphene file gives a 2-D model.
    tol : the file is rounded to ~1e-6, so ``H(-R) = H(R)^H`` is checked to this tolerance
        and then enforced exactly.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from spectra.tightbinding import graphene, read_wannier90, write_wannier90
    >>> d = tempfile.mkdtemp(); f = os.path.join(d, "g_hr.dat")
    >>> write_wannier90(graphene(), f)
    >>> m = read_wannier90(f)
    >>> m.dim_k, m.units
    (2, 'eV')
    >>> np.allclose(m.bands([[0.1, 0.2]]), graphene().bands([[0.1, 0.2]]))
    True
    """
    path = Path(path)
    seed = path.parent / _seed(path)
    rvecs, ndegen, hr = parse_hr(path)
    nw = hr.shape[-1]
    if lattice is None and auto and Path(f"{seed}.win").exists():
        lattice = parse_win_cell(f"{seed}.win")
    elif isinstance(lattice, (str, os.PathLike)):
        lattice = parse_win_cell(lattice)
        if lattice is None:
            raise ValueError("no unit_cell_cart block in the given .win file")
    lat = np.eye(3) if lattice is None else np.asarray(lattice, float)
    if lat.shape != (3, 3):
        raise ValueError(f"lattice must be (3, 3), got {lat.shape}")
    if centres is None and auto and Path(f"{seed}_centres.xyz").exists():
        centres = f"{seed}_centres.xyz"
    if isinstance(centres, (str, os.PathLike)):
        centres = parse_centres(centres, nw)
    cart = np.zeros((nw, 3)) if centres is None else np.asarray(centres, float)
    if cart.shape != (nw, 3):
        raise ValueError(f"centres must be ({nw}, 3), got {cart.shape}")
    if wsvec is None and auto and Path(f"{seed}_wsvec.dat").exists():
        wsvec = f"{seed}_wsvec.dat"
    blocks = hr / ndegen[:, None, None]
    if wsvec is not None:
        rvecs, blocks = _apply_wsvec(rvecs, blocks, parse_wsvec(wsvec, nw))
    reduced = cart @ np.linalg.inv(lat)
    if dim is None:
        dim = detect_dim(rvecs, blocks)
    if isinstance(dim, bool) or dim not in (1, 2, 3):
        raise ValueError(f"dim must be 1, 2 or 3, got {dim!r}")
    if dim < 3:
        extra = np.abs(rvecs[:, dim:]).sum(1) > 0
        if np.any(extra & (np.abs(blocks).max((1, 2)) > 0)):
            raise ValueError(f"dim={dim}: the file has hoppings along directions >= {dim}")
        rvecs, blocks = rvecs[~extra, :dim], blocks[~extra]
        lat, reduced = lat[:dim, :dim], reduced[:, :dim]
    model = Model(lat, reduced, units="eV")
    model.set_blocks(rvecs, blocks, tol=tol)
    return model


def detect_dim(rvecs: np.ndarray, blocks: np.ndarray) -> int:
    """The number of leading lattice directions that carry hoppings (at least 1).

    Trailing directions along which no non-zero ``H(R)`` reaches are not periodic (the
    vacuum of a layer, the cross-section of a chain).

    >>> import numpy as np
    >>> detect_dim(np.array([[0, 0, 0], [1, 0, 0], [-1, 0, 0]]), np.ones((3, 1, 1)))
    1
    """
    live = np.abs(blocks).reshape(len(blocks), -1).max(1, initial=0) > 0
    used = np.flatnonzero(np.abs(rvecs[live]).sum(0) > 0)
    return max(int(used.max()) + 1 if used.size else 1, 1)


def _apply_wsvec(
    rvecs: np.ndarray, blocks: np.ndarray, shifts: dict[tuple[int, int, int, int, int], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    nw = blocks.shape[-1]
    out: dict[tuple[int, ...], np.ndarray] = {}
    for r, blk in zip(rvecs, blocks, strict=True):
        for m in range(nw):
            for n in range(nw):
                t = shifts.get((int(r[0]), int(r[1]), int(r[2]), m, n))
                if t is None:
                    t = np.zeros((1, 3), dtype=int)
                for shift in t:
                    key = tuple(int(x) for x in r + shift)
                    out.setdefault(key, np.zeros((nw, nw), complex))[m, n] += blk[m, n] / len(t)
    keys = sorted(out)
    return np.array(keys, dtype=np.int64), np.stack([out[k] for k in keys])


def write_wannier90(
    model: Model, path: PathLike, *, centres: bool = True, header: str | None = None
) -> None:
    """Write ``model`` as ``seedname_hr.dat`` (all degeneracy weights 1, full precision),
    plus ``seedname_centres.xyz`` and ``seedname.win`` (``unit_cell_cart``) when ``centres``.

    Models of fewer than 3 periodic dimensions are padded to 3D. Non-orthogonal models
    cannot be written (hr.dat has no overlap).
    """
    if not model.is_orthogonal:
        raise ValueError("Wannier90 hr.dat has no overlap: cannot write a non-orthogonal model")
    if model.nspin != 1:
        model = _flatten_spin(model)
    path = Path(path)
    rv, hr, _ = model.blocks()
    dim = model.dim
    if dim > 3:
        raise ValueError("Wannier90 files are 3D")
    r3 = np.zeros((rv.shape[0], 3), dtype=np.int64)
    r3[:, :dim] = rv
    nw = model.nstates
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%d%b%Y at %H:%M:%S")
    lines = [header or f"written by spectra on {stamp}", f"{nw:12d}", f"{len(r3):12d}"]
    ones = ["    1"] * len(r3)
    lines += ["".join(ones[i : i + 15]) for i in range(0, len(ones), 15)]
    mm, nn = np.meshgrid(np.arange(nw), np.arange(nw), indexing="xy")  # m fastest
    for r, blk in zip(r3, hr, strict=True):
        vals = blk[mm.ravel(), nn.ravel()]
        lines += [
            f"{r[0]:5d}{r[1]:5d}{r[2]:5d}{m + 1:5d}{n + 1:5d}{v.real:24.16e}{v.imag:24.16e}"
            for m, n, v in zip(mm.ravel(), nn.ravel(), vals, strict=True)
        ]
    path.write_text("\n".join(lines) + "\n")
    if centres:
        lat = np.eye(3)
        lat[:dim, :dim] = model.lattice
        orb = np.zeros((model.norb, 3))
        orb[:, :dim] = model.orbitals
        cart = orb @ lat
        seed = path.parent / _seed(path)
        xyz = [f"{len(cart)}", "Wannier centres, written by spectra"]
        xyz += [f"X {c[0]:20.12f}{c[1]:20.12f}{c[2]:20.12f}" for c in cart]
        Path(f"{seed}_centres.xyz").write_text("\n".join(xyz) + "\n")
        cell = "\n".join(f"{a[0]:20.12f}{a[1]:20.12f}{a[2]:20.12f}" for a in lat)
        Path(f"{seed}.win").write_text(
            f"num_wann = {nw}\nbegin unit_cell_cart\nang\n{cell}\nend unit_cell_cart\n"
        )


def _flatten_spin(model: Model) -> Model:
    orb = np.repeat(model.orbitals, model.nspin, axis=0)
    flat = Model(model.lattice, orb, periodic=model.periodic, convention=model.convention)
    rv, hr, _ = model.blocks()
    flat.set_blocks(rv, hr)
    return flat


__all__ = [
    "detect_dim",
    "parse_centres",
    "parse_hr",
    "parse_win_cell",
    "parse_wsvec",
    "read_wannier90",
    "write_wannier90",
]
