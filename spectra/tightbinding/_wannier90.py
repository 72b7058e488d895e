"""Wannier90 ``seedname_hr.dat`` (with ``_wsvec.dat``, ``_centres.xyz``, ``.win``) I/O."""

from __future__ import annotations

import datetime
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ._model import Model

PathLike = str | os.PathLike


def _seed(path: Path) -> str:
    name = path.name
    return name[: -len("_hr.dat")] if name.endswith("_hr.dat") else path.stem


def parse_hr(path: PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(R (nR, 3) int, ndegen (nR,), H(R) (nR, nw, nw) complex, undivided)`` from hr.dat."""
    text = Path(path).read_text().splitlines()
    if len(text) < 3:
        raise ValueError(f"{path}: too short for a Wannier90 hr.dat file")
    try:
        nw = int(text[1].split()[0])
        nr = int(text[2].split()[0])
    except (IndexError, ValueError) as exc:
        raise ValueError(f"{path}: lines 2-3 must hold num_wann and nrpts") from exc
    if nw < 1 or nr < 1:
        raise ValueError(f"{path}: num_wann={nw} and nrpts={nr} must be positive")
    tokens = " ".join(text[3:]).split()
    if len(tokens) < nr:
        raise ValueError(f"{path}: expected {nr} degeneracy weights")
    ndegen = np.array(tokens[:nr], dtype=np.int64)
    if np.any(ndegen < 1):
        raise ValueError(f"{path}: degeneracy weights must be >= 1")
    body = tokens[nr:]
    need = nr * nw * nw * 7
    if len(body) != need:
        raise ValueError(
            f"{path}: expected {nr} x {nw}^2 lines of 'R1 R2 R3 m n Re Im' "
            f"({need} numbers), found {len(body)} numbers"
        )
    rows = np.array(body, dtype=float).reshape(nr, nw * nw, 7)
    rvecs = rows[:, 0, :3].astype(np.int64)
    if np.any(rows[:, :, :3] != rows[:, :1, :3]):
        raise ValueError(f"{path}: R changes inside a block of num_wann^2 lines")
    m = rows[:, :, 3].astype(np.int64) - 1
    n = rows[:, :, 4].astype(np.int64) - 1
    if m.min() < 0 or n.min() < 0 or m.max() >= nw or n.max() >= nw:
        raise ValueError(f"{path}: orbital indices outside 1..{nw}")
    hr = np.zeros((nr, nw, nw), complex)
    ir = np.repeat(np.arange(nr), nw * nw)
    hr[ir, m.ravel(), n.ravel()] = (rows[:, :, 5] + 1j * rows[:, :, 6]).ravel()
    if len({tuple(r) for r in rvecs}) != nr:
        raise ValueError(f"{path}: an R vector appears twice")
    return rvecs, ndegen, hr


def parse_wsvec(path: PathLike, nw: int) -> dict[tuple[int, int, int, int, int], np.ndarray]:
    """``{(R1, R2, R3, m, n): T (nT, 3)}`` (0-based m, n) from ``seedname_wsvec.dat``."""
    lines = [ln.split() for ln in Path(path).read_text().splitlines()[1:] if ln.strip()]
    out: dict[tuple[int, int, int, int, int], np.ndarray] = {}
    i = 0
    try:
        while i < len(lines):
            r1, r2, r3, m, n = (int(x) for x in lines[i][:5])
            nt = int(lines[i + 1][0])
            shifts = np.array([[int(x) for x in lines[i + 2 + j][:3]] for j in range(nt)])
            out[(r1, r2, r3, m - 1, n - 1)] = shifts.reshape(nt, 3)
            i += 2 + nt
    except (IndexError, ValueError) as exc:
        raise ValueError(f"{path}: malformed _wsvec.dat near line {i + 2}") from exc
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
    dim: int = 3,
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
        must carry no hopping.
    tol : the file is rounded to ~1e-6, so ``H(-R) = H(R)^H`` is checked to this tolerance
        and then enforced exactly.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from spectra.tightbinding import graphene, read_wannier90, write_wannier90
    >>> d = tempfile.mkdtemp(); f = os.path.join(d, "g_hr.dat")
    >>> write_wannier90(graphene(), f)
    >>> m = read_wannier90(f, dim=2)
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
    if dim not in (1, 2, 3):
        raise ValueError(f"dim must be 1, 2 or 3, got {dim}")
    if dim < 3:
        extra = np.abs(rvecs[:, dim:]).sum(1) > 0
        if np.any(extra & (np.abs(blocks).max((1, 2)) > 0)):
            raise ValueError(f"dim={dim}: the file has hoppings along directions >= {dim}")
        rvecs, blocks = rvecs[~extra, :dim], blocks[~extra]
        lat, reduced = lat[:dim, :dim], reduced[:, :dim]
    model = Model(lat, reduced)
    model.set_blocks(rvecs, blocks, tol=tol)
    return model


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
    "parse_centres",
    "parse_hr",
    "parse_win_cell",
    "parse_wsvec",
    "read_wannier90",
    "write_wannier90",
]
