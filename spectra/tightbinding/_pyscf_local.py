"""The local part of ``F(k)`` (pseudopotential, Hartree, LDA/GGA exchange-correlation) in one
pass over the real-space grid per band k-point.

``kmf.get_bands`` evaluates the AOs at the band k-points on the whole FFT grid three times
(``get_pp``'s local part, ``get_j``, ``nr_rks``) and the SCF density twice. All three are
integrals of the AOs against potentials on the same uniform grid, so the potentials are
summed first and integrated once: ``v(r) = v_loc(r) + v_H(r) + w v_xc(r)`` (plus, for a
GGA, the gradient term of PySCF's ``_vxc_mat``), the density and the potentials built by
PySCF's own functions (``_gen_rho_evaluator``, ``tools.get_coulG``, ``eval_xc_eff``) exactly
as ``FFTDF.get_pp``, ``fft_jk.get_j_kpts`` and ``numint.nr_rks`` build them. Restricted
Kohn-Sham only (no hybrid, no NLC, uniform grids equal to the FFTDF mesh); otherwise
:func:`local_fock` returns None and the caller uses PySCF's functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _applies(kmf: Any, dm: np.ndarray) -> str | None:
    """The xc type (``"LDA"``/``"GGA"``) when :func:`local_fock` reproduces PySCF, else None."""
    from pyscf.pbc.dft import gen_grid, krks
    from pyscf.pbc.dft import numint as pnumint

    from ._pyscf_hcore import fast_path_applies

    if not fast_path_applies(kmf) or getattr(type(kmf), "get_veff", None) is not krks.get_veff:
        return None
    ni, df = kmf._numint, kmf.with_df
    if type(ni) is not pnumint.KNumInt or type(df._numint) is not pnumint.KNumInt:
        return None
    if type(kmf.grids) is not gen_grid.UniformGrids or dm.ndim != 3:
        return None
    if ni.libxc.is_hybrid_xc(kmf.xc) or kmf.do_nlc():
        return None
    xctype = ni._xc_type(kmf.xc)
    if xctype not in ("LDA", "GGA"):
        return None
    kmf.initialize_grids(kmf.cell, dm, kmf.kpts)
    if not np.array_equal(np.asarray(kmf.grids.mesh), np.asarray(df.mesh)):
        return None
    if kmf.grids.cell is not kmf.cell or df.grids.cell is not kmf.cell:
        return None
    return str(xctype)


def local_fock(kmf: Any, dm: Any, kpts: np.ndarray) -> np.ndarray | None:
    """``vloc(k) + J(k) + Vxc(k)`` at the band ``kpts`` ``(nk, 3)``, or None (see module)."""
    from pyscf.pbc import tools
    from pyscf.pbc.gto import pseudo

    dm = np.asarray(dm)
    xctype = _applies(kmf, dm)
    if xctype is None:
        return None
    cell, df, ni, grids = kmf.cell, kmf.with_df, kmf._numint, kmf.grids
    mesh = df.mesh
    deriv = 0 if xctype == "LDA" else 1
    ngrids = int(np.prod(mesh))
    # the SCF density on the grid (as nr_rks and get_j_kpts: ni's rho evaluator)
    make_rho, _, nao = ni._gen_rho_evaluator(cell, dm[None], 1, False)
    rho = np.zeros((4, ngrids) if deriv else ngrids)
    for ao_etc, p0, p1 in df.aoR_loop(grids, kmf.kpts, deriv):
        rho[..., p0:p1] = make_rho(0, ao_etc[0], ao_etc[2], xctype).real
    weight = cell.vol / ngrids
    rho0 = rho[0] if deriv else rho
    v_h = tools.ifft(tools.get_coulG(cell, mesh=mesh) * tools.fft(rho0, mesh), mesh).real * weight
    vxc = ni.eval_xc_eff(kmf.xc, rho, 1, xctype=xctype, spin=0)[1]
    wv = np.asarray(vxc).reshape(-1, ngrids) * weight  # (1 or 4, ngrids)
    gv = cell.get_Gv(mesh)
    si = cell.get_SI(mesh=mesh)
    v_loc = tools.ifft(-np.einsum("ij,ij->j", si, pseudo.get_vlocG(cell, gv)), mesh).real
    scalar = v_loc + v_h + wv[0]
    out = np.zeros((len(kpts), nao, nao), complex)
    for ao_etc, p0, p1 in df.aoR_loop(grids, kpts, deriv):
        for k, ao in enumerate(ao_etc[0]):
            a0 = ao[0] if deriv else ao
            out[k] += a0.conj().T @ (a0 * scalar[p0:p1, None])
            if deriv:  # GGA: ao0^H sum_x wv_x d_x ao, plus its conjugate transpose
                grad = np.einsum("xp,xpi->pi", wv[1:4, p0:p1], ao[1:4])
                g = a0.conj().T @ grad
                out[k] += g + g.conj().T
    return out


__all__ = ["local_fock"]
