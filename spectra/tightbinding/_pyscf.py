"""PySCF bridge: band energies of a converged periodic SCF in one generalized core call."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..core import eigh
from ..core.domain import InputError

#: PySCF's energy for orbitals dropped by canonical orthogonalization
#: (``pyscf.pbc.scf.hf.INVALID_ORBITAL_ENERGY``).
INVALID_ORBITAL_ENERGY = 1e30


class Bands(NamedTuple):
    """``(mo_energy (nk, nao), mo_coeff (nk, nao, nao))``, as ``kmf.get_bands`` returns;
    ``units`` is ``"Hartree"`` (PySCF's energy unit, for :func:`plot_bands`)."""

    mo_energy: np.ndarray
    mo_coeff: np.ndarray

    @property
    def units(self) -> str:
        """PySCF's energy unit, ``"Hartree"``."""
        return "Hartree"


def _require_pyscf() -> Any:
    try:
        import pyscf  # noqa: F401
        from pyscf.scf import hf
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("pyscf_bands needs PySCF: pip install torch-spectra[chem]") from exc
    return hf


def lindep_threshold() -> float | None:
    """The overlap eigenvalue threshold PySCF's canonical orthogonalization uses
    (``pyscf.scf.hf.overlap_zero_eigenvalue_threshold``, 1e-6 by default), or None when
    PySCF is configured not to drop directions."""
    hf = _require_pyscf()
    if not getattr(hf, "remove_overlap_zero_eigenvalue", True):
        return None
    return float(getattr(hf, "overlap_zero_eigenvalue_threshold", 1e-6))


def fock_overlap(kmf: Any, kpts: Any, *, dm: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """``(F(k), S(k))`` at the band k-points, as ``get_bands`` builds them, once for all k:
    ``F = hcore(k) + veff(k)`` with the SCF density, ``S`` from ``kmf.get_ovlp``.

    For a pseudopotential cell with PySCF's default FFTDF, the non-local pseudopotential
    is built batched over the k-points (the same sums by PySCF's kernels, several k-points
    per call instead of one), and for restricted LDA/GGA Kohn-Sham the local
    pseudopotential, Hartree and xc potentials are summed on the grid and integrated once
    per k (``get_bands`` evaluates the band AOs three times); anything else uses
    ``kmf.get_hcore`` and ``kmf.get_veff(..., kpts_band=k)``
    (:func:`~spectra.tightbinding._pyscf_hcore.fock_kpts`)."""
    _require_pyscf()
    from ._pyscf_hcore import fock_kpts

    kb = np.asarray(kpts, dtype=float).reshape(-1, 3)
    cell = kmf.cell
    if dm is None:
        dm = kmf.make_rdm1()
    fock = fock_kpts(kmf, dm, kb)
    ovlp = kmf.get_ovlp(cell, kb)
    return np.asarray(fock), np.asarray(ovlp)


def pyscf_bands(
    kmf: Any,
    kpts: Any,
    *,
    lindep: float | str | None = "pyscf",
    lindep_fill: float = INVALID_ORBITAL_ENERGY,
    **eigh_kw: Any,
) -> Bands:
    """Bands of a converged PySCF periodic SCF (KRHF/KRKS) at absolute ``kpts`` (1/Bohr).

    Builds ``F(k)`` and ``S(k)`` for all band k-points with PySCF (as ``kmf.get_bands``)
    and solves ``F c = e S c`` for all of them in one batched generalized core call, with
    PySCF's canonical orthogonalization: overlap directions with eigenvalue at or below
    ``lindep`` (PySCF's threshold by default) are dropped and those orbitals get energy
    ``lindep_fill`` (1e30, as PySCF) and zero coefficients. ``lindep=None`` uses a plain
    Cholesky reduction.

    Returns
    -------
    Bands ``(mo_energy, mo_coeff)``: ``(nk, nao)`` and ``(nk, nao, nao)``, or with a
    leading spin axis for unrestricted SCF (a 1D ``kpts`` gives one k-point, as PySCF).

    Examples
    --------
    >>> from pyscf.pbc import gto, scf  # doctest: +SKIP
    >>> e, c = pyscf_bands(kmf, cell.get_abs_kpts(kpath(cell.a, "G,X,L", 50).k))  # doctest: +SKIP
    """
    single = np.ndim(kpts) == 1
    fock, ovlp = fock_overlap(kmf, kpts)
    threshold = lindep_threshold() if lindep == "pyscf" else lindep
    if threshold is not None and not isinstance(threshold, (int, float)):
        raise InputError("lindep", f"must be a float, None or 'pyscf', got {lindep!r}")
    if ovlp.shape != fock.shape:  # unrestricted: one overlap for both spins
        ovlp = np.ascontiguousarray(np.broadcast_to(ovlp, fock.shape))
    w, v = eigh(fock, ovlp, lindep=threshold, lindep_fill=lindep_fill, **eigh_kw)
    if single:
        w, v = w[..., 0, :], v[..., 0, :, :]
    return Bands(w, v)


__all__ = ["INVALID_ORBITAL_ENERGY", "Bands", "fock_overlap", "lindep_threshold", "pyscf_bands"]
