"""Wannier90 ``seedname_hr.dat``, ``_wsvec.dat`` and ``_centres.xyz`` parsers.

The numbers are read strictly (errors are :class:`~spectra.core.domain.InputError` naming
``path:line``); the header line is free text (undecodable bytes are replaced).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..core.domain import InputError

PathLike = str | os.PathLike


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
    text = Path(path).read_text(errors="replace").splitlines()
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
        (i + 1, ln.split())
        for i, ln in enumerate(Path(path).read_text(errors="replace").splitlines())
        if i > 0
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
    lines = Path(path).read_text(errors="replace").splitlines()
    xs = [
        (n + 1, ln.split())
        for n, ln in enumerate(lines)
        if n >= 2 and ln.split() and ln.split()[0].upper() == "X"
    ]
    if len(xs) < nw:
        raise InputError(str(path), f"holds {len(xs)} Wannier centres ('X' lines), need {nw}")
    for line, tok in xs[:nw]:
        if len(tok) < 4 or not all(_is_float(t) for t in tok[1:4]):
            raise InputError(_where(path, line), "expected 'X x y z' (three numbers)")
    out = np.array([tok[1:4] for _, tok in xs[:nw]], dtype=float)
    if not np.all(np.isfinite(out)):
        raise InputError(str(path), "Wannier centres hold NaN/Inf")
    return out


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


__all__ = ["parse_centres", "parse_hr", "parse_wsvec"]
