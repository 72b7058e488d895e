"""``hcore(k)`` for many band k-points at once: PySCF's FFTDF pseudopotential, batched over k.

``kmf.get_bands`` spends most of its time in ``FFTDF.get_pp``, whose non-local GTH part is
built one k-point at a time (``vppnl_by_k``: a Fourier transform of the AOs at ``G + k`` and
of the projectors on the whole mesh, per k and per atom). The same sums are done here with
PySCF's own kernels (``pyscf.gto.ft_ao.ft_ao`` at ``G + k``, the projectors'
``eval_gto``, ``pseudo.pp._qli``), for a chunk of k-points per call and once per element
instead of once per atom, so the result equals ``get_hcore`` to rounding. Anything this
path does not cover (other density fitting, all-electron cells, ECPs, low-dimensional
cells, a subclass that overrides ``get_hcore``) falls back to ``kmf.get_hcore``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.domain import rows_within

#: bytes of the per-chunk work arrays (AO transforms and projectors on the mesh)
CHUNK_BYTES = 2**27


def fast_path_applies(kmf: Any) -> bool:
    """Whether :func:`hcore_kpts` reproduces ``kmf.get_hcore`` for this SCF object."""
    from pyscf.pbc.df import fft
    from pyscf.pbc.scf import khf

    cell = kmf.cell
    df: Any = getattr(kmf, "with_df", None)
    method = getattr(type(kmf), "get_hcore", None)
    if method is not khf.get_hcore or type(df) is not fft.FFTDF:
        return False
    return (
        fft.FFTDF.get_pp is getattr(fft, "get_pp", None)
        and df.cell is cell
        and bool(cell.pseudo)
        and len(cell._ecpbas) == 0
        and cell.dimension == 3
        and getattr(cell, "low_dim_ft_type", None) != "inf_vacuum"
        and "MultiGrid" not in type(getattr(kmf, "_numint", None)).__name__
    )


def _local(df: Any, kpts: np.ndarray) -> np.ndarray:
    """The local pseudopotential on the real-space grid, as ``FFTDF.get_pp``."""
    from pyscf import lib
    from pyscf.pbc import tools
    from pyscf.pbc.gto import pseudo

    cell, mesh = df.cell, df.mesh
    gv = cell.get_Gv(mesh)
    si = cell.get_SI(mesh=mesh)
    vloc_g = -np.einsum("ij,ij->j", si, pseudo.get_vlocG(cell, gv))
    vloc_r = tools.ifft(vloc_g, mesh).real
    nao = cell.nao_nr()
    out = np.zeros((len(kpts), nao, nao), complex)
    for ao_ks_etc, p0, p1 in df.aoR_loop(df.grids, kpts):
        for k, ao in enumerate(ao_ks_etc[0]):
            out[k] += lib.dot(ao.T.conj() * vloc_r[p0:p1], ao)
    return out


def _projectors(cell: Any, gk: np.ndarray, g_rad: np.ndarray) -> dict[str, list[Any]]:
    """Per element: ``[(p0, p1, nl, l, hl)], stacked (nproj, npoints)`` of the GTH
    non-local projectors at the points ``gk`` (``vppnl_by_k``'s ``pYlm``)."""
    from pyscf import gto
    from pyscf.pbc.gto import pseudo

    fake = gto.Mole()
    fake._atm = np.zeros((1, gto.ATM_SLOTS), dtype=np.int32)
    fake._bas = np.zeros((1, gto.BAS_SLOTS), dtype=np.int32)
    ptr = gto.PTR_ENV_START
    fake._env = np.zeros(ptr + 10)
    fake._bas[0, gto.NPRIM_OF] = 1
    fake._bas[0, gto.NCTR_OF] = 1
    fake._bas[0, gto.PTR_EXP] = ptr + 3
    fake._bas[0, gto.PTR_COEFF] = ptr + 4
    out: dict[str, list[Any]] = {}
    for ia in range(cell.natm):
        symb = cell.atom_symbol(ia)
        if symb not in cell._pseudo or symb in out:
            continue
        blocks, rows, p1 = [], [], 0
        for l, proj in enumerate(cell._pseudo[symb][5:]):
            rl, nl, hl = proj
            if nl > 0:
                fake._bas[0, gto.ANG_OF] = l
                fake._env[ptr + 3] = 0.5 * rl**2
                fake._env[ptr + 4] = rl ** (l + 1.5) * np.pi**1.25
                ylm = fake.eval_gto("GTOval", gk)  # (npoints, 2l + 1)
                for k in range(nl):
                    qkl = pseudo.pp._qli(g_rad * rl, l, k)
                    rows.append(ylm.T * qkl)
                p0, p1 = p1, p1 + nl * (2 * l + 1)
                blocks.append((p0, p1, nl, l, np.asarray(hl)))
        if blocks:
            out[symb] = [blocks, np.concatenate(rows).astype(complex)]
    return out


def _nonlocal(cell: Any, mesh: Any, kpts: np.ndarray) -> np.ndarray:
    """``vppnl_by_k`` of ``FFTDF.get_pp`` for all ``kpts``, in chunks of k-points."""
    from pyscf import lib
    from pyscf.gto.ft_ao import ft_ao

    gv = cell.get_Gv(mesh)
    si = cell.get_SI(mesh=mesh)
    ng, nao, nk = len(gv), cell.nao_nr(), len(kpts)
    nproj = sum(
        2 * l + 1 for p in cell._pseudo.values() for l, (_, nl, _) in enumerate(p[5:]) if nl
    )
    per_k = ng * (nao + 2 * max(nproj, 1) + 8) * 16
    step = rows_within(CHUNK_BYTES, per_k, nk)  # the core's model, on a fixed budget
    out = np.zeros((nk, nao, nao), complex)
    for s in range(0, nk, step):
        kc = kpts[s : s + step]
        nc = len(kc)
        gk = (gv[None] + kc[:, None]).reshape(-1, 3)
        g_rad = lib.norm(gk, axis=1)
        aok = (ft_ao(cell, gk) * (1 / cell.vol) ** 0.5).reshape(nc, ng, nao)
        proj = _projectors(cell, gk, g_rad)
        for ia in range(cell.natm):
            symb = cell.atom_symbol(ia)
            if symb not in proj:
                continue
            blocks, rows = proj[symb]
            spg = rows.reshape(len(rows), nc, ng) * si[ia].conj()  # (p, nc, ng)
            spg_ao = np.einsum("pkg,kgq->kpq", spg, aok, optimize=True)  # (nc, p, nao)
            for p0, p1, nl, l, hl in blocks:
                blk = spg_ao[:, p0:p1].reshape(nc, nl, 2 * l + 1, nao)
                tmp = np.einsum("ij,kjmp->kimp", hl, blk)
                out[s : s + nc] += np.einsum("kimp,kimq->kpq", blk.conj(), tmp)
    return out / cell.vol


def _combine(kmf: Any, kpts: np.ndarray, local: np.ndarray) -> np.ndarray:
    """``local + V_nl + T`` as ``get_hcore`` adds them (real at the Gamma point)."""
    from pyscf.pbc.lib.kpts_helper import is_zero

    cell = kmf.cell
    vnl = _nonlocal(cell, kmf.with_df.mesh, kpts)
    gamma = np.array([is_zero(k) for k in kpts])
    local[gamma] = local[gamma].real + vnl[gamma].real
    local[~gamma] += vnl[~gamma]
    return local + np.asarray(cell.pbc_intor("int1e_kin", 1, 1, kpts))


def hcore_kpts(kmf: Any, kpts: np.ndarray) -> np.ndarray:
    """``kmf.get_hcore(cell, kpts)`` for ``(nk, 3)`` absolute ``kpts``, batched over k
    (:func:`fast_path_applies`), else PySCF's own."""
    if not fast_path_applies(kmf):
        return np.asarray(kmf.get_hcore(kmf.cell, kpts))
    return _combine(kmf, kpts, _local(kmf.with_df, kpts))


def fock_kpts(kmf: Any, dm: Any, kpts: np.ndarray) -> np.ndarray:
    """``hcore(k) + veff(k)`` at the band ``kpts``: for restricted LDA/GGA Kohn-Sham on
    FFTDF, the local potentials summed on the grid and integrated once per k
    (:func:`~spectra.tightbinding._pyscf_local.local_fock`); otherwise :func:`hcore_kpts`
    plus ``kmf.get_veff(..., kpts_band=kpts)``."""
    from ._pyscf_local import local_fock

    local = local_fock(kmf, dm, kpts)
    if local is not None:
        return _combine(kmf, kpts, local)
    veff = kmf.get_veff(kmf.cell, dm, kpts=kmf.kpts, kpts_band=kpts)
    return hcore_kpts(kmf, kpts) + np.asarray(veff)


__all__ = ["fast_path_applies", "fock_kpts", "hcore_kpts"]
