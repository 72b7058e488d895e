"""Write a :class:`Model` as Wannier90 files (``_hr.dat``, ``_centres.xyz``, ``.win``,
``_tb.dat``)."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import numpy as np

from ..core.domain import InputError
from ._model import Model
from ._tbdat import write_tb

PathLike = str | os.PathLike


def seed_name(path: Path) -> str:
    """``seedname`` of ``seedname_hr.dat`` / ``_tb.dat`` / ``.win`` (else the stem)."""
    for tail in ("_hr.dat", "_tb.dat"):
        if path.name.endswith(tail):
            return path.name[: -len(tail)]
    return path.stem


def write_wannier90(
    model: Model,
    path: PathLike,
    *,
    centres: bool = True,
    header: str | None = None,
    tb: bool = False,
    win: str = "",
) -> None:
    """Write ``model`` as ``seedname_hr.dat`` (all degeneracy weights 1, full precision),
    plus ``seedname_centres.xyz`` and ``seedname.win`` (``num_wann``, ``unit_cell_cart``,
    ``spinors`` for a spinor model, and the extra text ``win``) when ``centres``, and
    ``seedname_tb.dat`` (lattice, H(R), and the position matrix ``r(R)`` with the centres
    on its R = 0 diagonal) when ``tb``.

    Models of fewer than 3 periodic dimensions are padded to 3D. Non-orthogonal models
    cannot be written (hr.dat has no overlap).

    >>> import tempfile, os
    >>> from spectra.tightbinding import graphene
    >>> d = tempfile.mkdtemp()
    >>> write_wannier90(graphene(), os.path.join(d, "g_hr.dat"), tb=True)
    >>> sorted(os.listdir(d))
    ['g.win', 'g_centres.xyz', 'g_hr.dat', 'g_tb.dat']
    """
    if not model.is_orthogonal:
        raise InputError(
            "model", "is non-orthogonal (has an overlap S(R)), which Wannier90 hr.dat cannot hold"
        )
    if model.nspin != 1:
        model = _flatten_spin(model)
    path = Path(path)
    rv, hr, _ = model.blocks()
    dim = model.dim
    if dim > 3:
        raise InputError("model", f"has dim={dim}: Wannier90 files are 3D")
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
    lat = np.eye(3)
    lat[:dim, :dim] = model.lattice
    orb = np.zeros((model.norb, 3))
    orb[:, :dim] = model.orbitals
    cart = orb @ lat
    seed = path.parent / seed_name(path)
    if tb:
        rr = np.zeros((len(r3), 3, nw, nw), complex)
        zero = np.flatnonzero(~r3.any(1))
        rr[zero[0]][:, np.arange(nw), np.arange(nw)] = cart.T
        write_tb(f"{seed}_tb.dat", lat, r3, hr, rr, header=lines[0])
    if centres:
        xyz = [f"{len(cart)}", "Wannier centres, written by spectra"]
        xyz += [f"X {c[0]:20.12f}{c[1]:20.12f}{c[2]:20.12f}" for c in cart]
        Path(f"{seed}_centres.xyz").write_text("\n".join(xyz) + "\n")
        cell = "\n".join(f"{a[0]:20.12f}{a[1]:20.12f}{a[2]:20.12f}" for a in lat)
        spin = "spinors = .true.\n" if getattr(model, "spinors", False) else ""
        Path(f"{seed}.win").write_text(
            f"num_wann = {nw}\n{spin}begin unit_cell_cart\nang\n{cell}\nend unit_cell_cart\n" + win
        )


def _flatten_spin(model: Model) -> Model:
    orb = np.repeat(model.orbitals, model.nspin, axis=0)
    flat = Model(model.lattice, orb, periodic=model.periodic, convention=model.convention)
    rv, hr, _ = model.blocks()
    flat.set_blocks(rv, hr)
    return flat


__all__ = ["seed_name", "write_wannier90"]
