"""Read a Wannier90 run into a :class:`Model`: a folder, ``_hr.dat`` or ``_tb.dat``, with the
``.win``, ``_centres.xyz`` and ``_wsvec.dat`` next to it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.domain import InputError
from ._hrdat import _apply_wsvec, parse_centres, parse_hr, parse_wsvec
from ._model import Model
from ._tbdat import parse_tb
from ._w90write import seed_name, write_wannier90
from ._win import Win, read_win

PathLike = str | os.PathLike


def parse_win_cell(path: PathLike) -> np.ndarray | None:
    """``unit_cell_cart`` (Angstrom) from a ``.win`` file, or None when absent."""
    return read_win(path).unit_cell


def _resolve(path: Path) -> tuple[Path, str]:
    """``(data file, "hr" | "tb")`` for a folder, a ``.win``, an ``_hr.dat`` or a ``_tb.dat``."""
    if path.is_dir():
        files = sorted(path.glob("*_tb.dat")) + sorted(path.glob("*_hr.dat"))
        seeds = sorted({seed_name(f) for f in files})
        if len(seeds) != 1:
            found = ", ".join(seeds) or "none"
            raise InputError(
                str(path), f"must hold the files of one Wannier90 seedname (found: {found})"
            )
        return (files[0], "tb" if files[0].name.endswith("_tb.dat") else "hr")
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if path.suffix == ".win":
        for tail, kind in (("_tb.dat", "tb"), ("_hr.dat", "hr")):
            cand = path.parent / f"{path.stem}{tail}"
            if cand.exists():
                return cand, kind
        raise InputError(str(path), f"has no {path.stem}_tb.dat or {path.stem}_hr.dat next to it")
    return path, "tb" if path.name.endswith("_tb.dat") else "hr"


def detect_periodic(rvecs: np.ndarray, blocks: np.ndarray) -> list[int]:
    """The lattice directions along which some non-zero ``H(R)`` reaches (at least one).

    The others are not periodic (the vacuum of a layer, the cross-section of a chain),
    whichever lattice vector and Cartesian axis they are.

    >>> import numpy as np
    >>> detect_periodic(np.array([[0, 0, 0], [0, 1, 0], [0, -1, 0]]), np.ones((3, 1, 1)))
    [1]
    """
    live = np.abs(blocks).reshape(len(blocks), -1).max(1, initial=0) > 0
    used = np.flatnonzero(np.abs(rvecs[live]).sum(0) > 0)
    return [int(i) for i in used] or [0]


def detect_dim(rvecs: np.ndarray, blocks: np.ndarray) -> int:
    """The number of leading lattice directions that carry hoppings (at least 1).

    >>> import numpy as np
    >>> detect_dim(np.array([[0, 0, 0], [1, 0, 0], [-1, 0, 0]]), np.ones((3, 1, 1)))
    1
    """
    return max(detect_periodic(rvecs, blocks)) + 1


def periodic_frame(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lattice (p, p), frame (3, p))`` for ``p`` periodic lattice vectors ``rows`` ``(p, 3)``:
    their coordinates in an orthonormal basis ``frame`` of their span (``rows = lattice @
    frame.T``), so lengths and angles, hence reciprocal vectors, k-path lengths and cell
    areas, do not depend on how the Cartesian axes were oriented.

    When the vectors lie in the span of ``p`` Cartesian axes (a layer in the x-y, y-z or x-z
    plane), those axes are the frame and the coordinates are the file's own.

    >>> import numpy as np
    >>> lat, frame = periodic_frame(np.array([[2.0, 0, 0], [0, 0, 3.0]]))
    >>> lat.tolist(), frame.T.tolist()
    ([[2.0, 0.0], [0.0, 3.0]], [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    """
    p, full = rows.shape
    scale = max(float(np.abs(rows).max()), 1e-300)
    axes = np.flatnonzero(np.abs(rows).max(0) > 1e-10 * scale)
    if len(axes) == p:
        return rows[:, axes].copy(), np.eye(full)[:, axes]
    q, r = np.linalg.qr(rows.T)
    sign = np.where(np.diag(r) < 0, -1.0, 1.0)
    q, r = q * sign, r * sign[:, None]
    return r.T.copy(), q


def _lattice(lattice: Any, tb: Any, win: Win | None, where: str) -> np.ndarray:
    if isinstance(lattice, (str, os.PathLike)):
        lattice = read_win(lattice).unit_cell
        if lattice is None:
            raise InputError(str(where), "the given .win file has no unit_cell_cart block")
    if lattice is None and tb is not None:
        lattice = tb.lattice
        if (
            win is not None
            and win.unit_cell is not None
            and not np.allclose(win.unit_cell, tb.lattice, atol=1e-4, rtol=0)
        ):
            raise InputError(str(win.path), f"unit_cell_cart differs from the lattice in {where}")
    if lattice is None and win is not None:
        lattice = win.unit_cell
    lat = np.eye(3) if lattice is None else np.asarray(lattice, float)
    if lat.shape != (3, 3):
        raise InputError("lattice", f"must be (3, 3), got {lat.shape}")
    return lat


def read_wannier90(
    path: PathLike,
    *,
    lattice: Any = None,
    centres: Any = None,
    wsvec: Any = None,
    win: Any = None,
    dim: int | None = None,
    periodic: Sequence[int] | None = None,
    auto: bool = True,
    tol: float = 1e-5,
) -> Model:
    """A :class:`Model` from a Wannier90 run, read as the code leaves it in its folder.

    Parameters
    ----------
    path : a folder holding one seedname's files, ``seedname.win``, ``seedname_hr.dat`` or
        ``seedname_tb.dat`` (Wannier90 >= 3 ``write_tb``: lattice, H(R) and the position
        matrix in one file; preferred when a folder has both). ``H(R)`` (and ``r(R)``) are
        divided by their degeneracy weights.
    lattice : ``(3, 3)`` lattice vectors (rows, Angstrom) or a ``.win`` path; default: the
        ``_tb.dat`` lattice, else the ``.win`` ``unit_cell_cart`` (``bohr``/``ang``), else
        identity.
    centres : Cartesian centres ``(nw, 3)`` or a ``_centres.xyz`` path; default: the
        diagonal ``<0n|r|0n>`` of a ``_tb.dat``, else ``seedname_centres.xyz`` when
        present, else all at the origin.
    wsvec : a ``_wsvec.dat`` path (``use_ws_distance``): each ``H(R)_mn / ndegen`` is spread
        evenly over ``R + T`` for the listed shifts ``T``; default: ``seedname_wsvec.dat``.
    win : a ``.win`` path, or False to ignore it; default ``seedname.win`` when present. It
        gives ``num_wann`` (checked), ``spinors`` (then :attr:`Model.electrons_per_band` is
        1: each spinor band holds one electron), ``kpoint_path`` (the default of
        :meth:`Model.kpath` and ``spectra bands``), ``fermi_energy``, the cell.
    dim : keep the first ``dim`` lattice directions; ``periodic``: keep these (e.g.
        ``[0, 2]``). Default: the directions along which hoppings reach (the vacuum of a
        layer or a chain is dropped, whichever lattice vector it is). A model of fewer
        than 3 periodic directions is expressed in an orthonormal frame of their span
        (:func:`periodic_frame`), so rotating the file's Cartesian axes changes nothing.
    tol : the file is rounded, so ``H(-R) = H(R)^H`` is checked to this tolerance and
        then enforced exactly.

    Notes
    -----
    Positions: the Berry-phase tools (and the ``"orbital"`` convention) use the Wannier
    centres, the diagonal ``<0n|r|0n>`` (the tight-binding approximation of the position
    operator, as PythTB and TBmodels); a ``_tb.dat``'s full ``r(R)`` is kept on
    :attr:`Model.position_matrix` (Cartesian Angstrom, the file's axes) and not used.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from spectra.tightbinding import graphene, read_wannier90, write_wannier90
    >>> d = tempfile.mkdtemp(); f = os.path.join(d, "g_hr.dat")
    >>> write_wannier90(graphene(), f)
    >>> m = read_wannier90(d)  # the folder
    >>> m.dim_k, m.units, m.electrons_per_band
    (2, 'eV', 2.0)
    >>> np.allclose(m.bands([[0.1, 0.2]]), graphene().bands([[0.1, 0.2]]))
    True
    """
    data, kind = _resolve(Path(path))
    seed = data.parent / seed_name(data)
    info: Win | None = None
    if win is None and auto and Path(f"{seed}.win").exists():
        win = f"{seed}.win"
    if win is not None and win is not False:
        info = read_win(win)
    tb = parse_tb(data) if kind == "tb" else None
    if tb is not None:
        rvecs, ndegen, hr, rr = tb.rvecs, tb.ndegen, tb.hr, tb.rr
        blocks = hr
    else:
        rvecs, ndegen, raw = parse_hr(data)
        blocks, rr = raw / ndegen[:, None, None], None
    nw = blocks.shape[-1]
    if info is not None and info.num_wann is not None and info.num_wann != nw:
        raise InputError(
            str(info.path), f"says num_wann = {info.num_wann}, but {data.name} has {nw}"
        )
    lat = _lattice(lattice, tb, info, data.name)
    if centres is None and rr is not None:
        zero = np.flatnonzero(~rvecs.any(1))
        if zero.size:
            centres = np.diagonal(rr[zero[0]], axis1=-2, axis2=-1).real.T
    if centres is None and auto and Path(f"{seed}_centres.xyz").exists():
        centres = f"{seed}_centres.xyz"
    if isinstance(centres, (str, os.PathLike)):
        centres = parse_centres(centres, nw)
    cart = np.zeros((nw, 3)) if centres is None else np.asarray(centres, float)
    if cart.shape != (nw, 3):
        raise InputError("centres", f"must be ({nw}, 3), got {cart.shape}")
    if wsvec is None and auto and Path(f"{seed}_wsvec.dat").exists():
        wsvec = f"{seed}_wsvec.dat"
    if wsvec is not None:
        shifts = parse_wsvec(wsvec, nw)
        r0 = rvecs
        rvecs, blocks = _apply_wsvec(r0, blocks, shifts)
        if rr is not None:
            rr = np.stack([_apply_wsvec(r0, rr[:, c], shifts)[1] for c in range(3)], 1)
    per = _periodic(rvecs, blocks, dim, periodic)
    extra = np.abs(np.delete(rvecs, per, axis=1)).sum(1) > 0
    if np.any(extra & (np.abs(blocks).max((1, 2)) > 0)):
        raise InputError(str(data), f"has hoppings along lattice directions outside periodic={per}")
    rvecs, blocks = rvecs[~extra][:, per], blocks[~extra]
    reduced = cart @ np.linalg.inv(lat)
    if len(per) == 3:
        model = Model(lat, reduced, units="eV")
    else:
        small, _ = periodic_frame(lat[per])
        model = Model(small, reduced[:, per], units="eV")
    model.set_blocks(rvecs, blocks, tol=tol)
    model.source = str(data)
    if rr is not None:
        model.position_matrix = (rvecs, rr[~extra])
    if info is not None:
        model.spinors = info.spinors
        model.fermi_energy = info.fermi_energy
        if info.kpoint_path is not None:
            named = {k: v[per] for k, v in info.kpoint_path.points.items()}
            model.path_spec = (info.kpoint_path.path, named)
    return model


def _periodic(
    rvecs: np.ndarray, blocks: np.ndarray, dim: int | None, periodic: Sequence[int] | None
) -> list[int]:
    if dim is not None and periodic is not None:
        raise InputError("dim", "give dim or periodic, not both")
    if dim is not None:
        if isinstance(dim, bool) or dim not in (1, 2, 3):
            raise InputError("dim", f"must be 1, 2 or 3, got {dim!r}")
        return list(range(dim))
    if periodic is not None:
        per = sorted({int(p) for p in periodic})
        if not per or any(p < 0 or p > 2 for p in per):
            raise InputError("periodic", f"must list directions among 0, 1, 2, got {periodic!r}")
        return per
    return detect_periodic(rvecs, blocks)


__all__ = [
    "detect_dim",
    "detect_periodic",
    "parse_centres",
    "parse_hr",
    "parse_win_cell",
    "parse_wsvec",
    "periodic_frame",
    "read_wannier90",
    "write_wannier90",
]
