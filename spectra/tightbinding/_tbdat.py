"""Wannier90 ``seedname_tb.dat`` (``write_tb = .true.``, Wannier90 >= 3): lattice, H(R), r(R).

Layout (``hamiltonian_write_tb``): a free header line; the three lattice vectors (rows,
Angstrom); ``num_wann``; ``nrpts``; ``nrpts`` degeneracy weights, 15 per line; then for each
R a line ``R1 R2 R3`` followed by ``num_wann^2`` lines ``m n Re(H) Im(H)`` (m fastest); then
the same R blocks again with ``m n Re(x) Im(x) Re(y) Im(y) Re(z) Im(z)``, the position
matrix ``<0m|r|Rn>`` in Angstrom. Both are written undivided by the degeneracy weights.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..core.domain import InputError

PathLike = str | os.PathLike


class TBData(NamedTuple):
    """The content of a ``_tb.dat`` file, **divided by the degeneracy weights**.

    ``lattice`` ``(3, 3)`` rows in Angstrom; ``rvecs`` ``(nR, 3)`` int; ``ndegen`` ``(nR,)``;
    ``hr`` ``(nR, nw, nw)`` complex (eV); ``rr`` ``(nR, 3, nw, nw)`` complex, the Cartesian
    components of ``<0m|r|Rn>`` (Angstrom).
    """

    header: str
    lattice: np.ndarray
    rvecs: np.ndarray
    ndegen: np.ndarray
    hr: np.ndarray
    rr: np.ndarray


def _numbers(
    path: PathLike, rows: list[tuple[int, list[str]]], width: int, what: str
) -> np.ndarray:
    for line, tok in rows:
        if len(tok) != width:
            raise InputError(
                f"{path}:{line}", f"expected {width} numbers ({what}), found {len(tok)}"
            )
    try:
        return np.array([tok for _, tok in rows], dtype=float).reshape(len(rows), width)
    except ValueError:
        for line, tok in rows:
            try:
                np.array(tok, dtype=float)
            except ValueError:
                raise InputError(
                    f"{path}:{line}", f"{what}: {' '.join(tok)!r} is not numeric"
                ) from None
        raise  # pragma: no cover - unreachable: some row failed above


def _integers(
    path: PathLike, rows: list[tuple[int, list[str]]], values: np.ndarray, what: str
) -> np.ndarray:
    bad = np.flatnonzero(np.any(values != np.round(values), axis=1))
    if bad.size:
        line, tok = rows[int(bad[0])]
        raise InputError(f"{path}:{line}", f"{what} {' '.join(tok)!r} are not integers")
    return np.round(values).astype(np.int64)


def parse_tb(path: PathLike) -> TBData:
    """Read ``seedname_tb.dat`` (see the module docstring); errors name ``path:line``.

    The header is free text (undecodable bytes are replaced); every number is checked.
    """
    raw = Path(path).read_text(errors="replace").splitlines()
    if len(raw) < 7:
        raise InputError(str(path), "is too short for a Wannier90 _tb.dat file")
    header = raw[0].strip()
    lat_rows = [(n + 1, raw[n].split()) for n in (1, 2, 3)]
    lattice = _numbers(path, lat_rows, 3, "a lattice vector")
    if abs(np.linalg.det(lattice)) < 1e-12 * max(1.0, np.abs(lattice).max()) ** 3:
        raise InputError(f"{path}:2", "the lattice vectors are linearly dependent")
    counts = []
    for n in (4, 5):
        tok = raw[n].split()
        if len(tok) != 1 or not tok[0].isdigit() or int(tok[0]) < 1:
            what = "num_wann" if n == 4 else "nrpts"
            raise InputError(f"{path}:{n + 1}", f"must hold {what} as a positive integer")
        counts.append(int(tok[0]))
    nw, nr = counts
    rest = [(n + 1, ln.split()) for n, ln in enumerate(raw) if n >= 6 and ln.split()]
    weights: list[tuple[int, list[str]]] = []
    taken = 0
    while taken < len(rest) and sum(len(t) for _, t in weights) < nr:
        weights.append(rest[taken])
        taken += 1
    wtok = [(line, [t]) for line, tok in weights for t in tok]
    if len(wtok) != nr:
        raise InputError(str(path), f"expected {nr} degeneracy weights, found {len(wtok)}")
    ndegen = _integers(path, wtok, _numbers(path, wtok, 1, "a degeneracy weight"), "weights")[:, 0]
    if np.any(ndegen < 1):
        raise InputError(f"{path}:{wtok[int(np.argmax(ndegen < 1))][0]}", "weights must be >= 1")
    body = rest[taken:]
    per = 1 + nw * nw
    if len(body) != 2 * nr * per:
        raise InputError(
            str(path),
            f"expected 2 x {nr} R blocks of 1 + {nw}^2 lines after the weights "
            f"(H(R), then r(R)), found {len(body)} lines",
        )
    out = []
    rvecs = np.zeros((nr, 3), np.int64)
    for part, width in ((0, 4), (1, 8)):
        blocks = body[part * nr * per : (part + 1) * nr * per]
        heads = blocks[::per]
        r = _integers(path, heads, _numbers(path, heads, 3, "R1 R2 R3"), "R vector")
        if part == 0:
            rvecs = r
        elif not np.array_equal(r, rvecs):
            bad = int(np.argmax(np.any(r != rvecs, axis=1)))
            raise InputError(f"{path}:{heads[bad][0]}", "the r(R) blocks list other R than H(R)")
        rows = [row for i in range(nr) for row in blocks[i * per + 1 : (i + 1) * per]]
        vals = _numbers(path, rows, width, "m n and values")
        mn = _integers(path, rows, vals[:, :2], "m n") - 1
        expect = np.stack(np.meshgrid(np.arange(nw), np.arange(nw), indexing="xy"), -1)
        expect = np.tile(expect.reshape(-1, 2), (nr, 1))
        if not np.array_equal(mn, expect):
            bad = int(np.argmax(np.any(mn != expect, axis=1)))
            raise InputError(
                f"{path}:{rows[bad][0]}",
                f"expected m n = {expect[bad, 0] + 1} {expect[bad, 1] + 1}",
            )
        cplx = vals[:, 2::2] + 1j * vals[:, 3::2]  # (nr * nw^2, 1 or 3), n slow, m fast
        mat = cplx.reshape(nr, nw, nw, -1).transpose(0, 3, 2, 1)  # (nr, c, m, n)
        out.append(mat / ndegen[:, None, None, None])
    if len({tuple(r) for r in rvecs.tolist()}) != nr:
        raise InputError(str(path), "an R vector appears twice")
    return TBData(header, lattice, rvecs, ndegen, out[0][:, 0], out[1])


def write_tb(
    path: PathLike,
    lattice: np.ndarray,
    rvecs: np.ndarray,
    hr: np.ndarray,
    rr: np.ndarray,
    *,
    ndegen: np.ndarray | None = None,
    header: str = "written by spectra",
) -> None:
    """Write ``seedname_tb.dat`` as Wannier90's ``write_tb`` does (``hr``, ``rr`` are the
    divided matrices; they are multiplied back by ``ndegen``, default all 1).

    >>> import numpy as np, tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "x_tb.dat")
    >>> rr = np.zeros((1, 3, 1, 1), complex); rr[0, 0] = 0.5
    >>> write_tb(f, np.eye(3), np.zeros((1, 3), int), np.ones((1, 1, 1)), rr)
    >>> float(parse_tb(f).rr[0, 0, 0, 0].real)
    0.5
    """
    rv = np.asarray(rvecs, np.int64)
    nr, nw = len(rv), hr.shape[-1]
    deg = np.ones(nr, np.int64) if ndegen is None else np.asarray(ndegen, np.int64)
    lines = [header]
    lines += [" ".join(f"{x:22.15f}" for x in row) for row in np.asarray(lattice, float)]
    lines += [f"{nw:12d}", f"{nr:12d}"]
    degs = [f"{d:5d}" for d in deg]
    lines += ["".join(degs[i : i + 15]) for i in range(0, nr, 15)]
    for part in (0, 1):
        for i in range(nr):
            lines += ["", "".join(f"{x:5d}" for x in rv[i])]
            for n in range(nw):
                for m in range(nw):
                    if part == 0:
                        v = [hr[i, m, n] * deg[i]]
                    else:
                        v = [rr[i, c, m, n] * deg[i] for c in range(3)]
                    nums = " ".join(f"{z.real:22.15e} {z.imag:22.15e}" for z in v)
                    lines.append(f"{m + 1:5d}{n + 1:5d}   {nums}")
    Path(path).write_text("\n".join(lines) + "\n")


__all__ = ["TBData", "parse_tb", "write_tb"]
