"""PySCF bridge: diamond (gth-szv) bands equal kmf.get_bands, including dropped directions."""

from __future__ import annotations

import numpy as np
import pytest
from pyscf.pbc import dft, gto
from pyscf.scf import hf as mol_hf

from spectra.tightbinding import fock_overlap, kpath, pyscf_bands
from spectra.tightbinding._pyscf import lindep_threshold


@pytest.fixture(scope="module")
def diamond():
    cell = gto.Cell()
    cell.atom = "C 0 0 0; C 0.8925 0.8925 0.8925"
    cell.a = [[0, 1.785, 1.785], [1.785, 0, 1.785], [1.785, 1.785, 0]]
    cell.basis = "gth-szv"
    cell.pseudo = "gth-pade"
    cell.mesh = [11, 11, 11]
    cell.verbose = 0
    cell.build()
    kmf = dft.KRKS(cell, cell.make_kpts([2, 1, 1]))
    kmf.xc = "lda"
    kmf.conv_tol = 1e-10
    kmf.kernel()
    assert kmf.converged
    return cell, kmf


def test_bands_equal_get_bands(diamond):
    cell, kmf = diamond
    path = kpath(cell.lattice_vectors(), "L,G,X,W", 8)
    kpts = cell.get_abs_kpts(path.k)
    e, c = pyscf_bands(kmf, kpts)
    ref_e, ref_c = kmf.get_bands(kpts)
    ref_e = np.asarray(ref_e)
    assert e.shape == ref_e.shape == (8, cell.nao)
    assert np.abs(e - ref_e).max() < 1e-8
    # coefficients: S-orthonormal eigenvectors of the same F(k), S(k)
    f, s = fock_overlap(kmf, kpts)
    np.testing.assert_allclose(f @ c, s @ c * e[:, None, :], atol=1e-8)
    np.testing.assert_allclose(
        np.einsum("kia,kij,kjb->kab", c.conj(), s, c),
        np.broadcast_to(np.eye(cell.nao), (8, cell.nao, cell.nao)),
        atol=1e-8,
    )
    # the same subspaces as PySCF's (a gauge-free comparison): projectors per band
    ref_c = np.asarray(ref_c)
    p_ours = np.einsum("kia,kja->kaij", c, c.conj())
    p_ref = np.einsum("kia,kja->kaij", ref_c, ref_c.conj())
    gaps = np.diff(e, axis=1)
    simple = np.concatenate(
        [gaps[:, :1] > 1e-4, (gaps[:, 1:] > 1e-4) & (gaps[:, :-1] > 1e-4), gaps[:, -1:] > 1e-4],
        axis=1,
    )
    np.testing.assert_allclose(p_ours[simple], p_ref[simple], atol=1e-6)


def test_single_kpoint_like_get_bands(diamond):
    cell, kmf = diamond
    k = cell.get_abs_kpts([0.1, 0.2, 0.3])
    e, c = pyscf_bands(kmf, k)
    ref_e, _ = kmf.get_bands(k)
    assert e.shape == (cell.nao,) and c.shape == (cell.nao, cell.nao)
    assert np.abs(e - np.asarray(ref_e)).max() < 1e-8


def test_dropped_overlap_directions_match_pyscf(diamond, monkeypatch):
    cell, kmf = diamond
    kpts = cell.get_abs_kpts(np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.25, 0.3, 0.1]]))
    _, s = fock_overlap(kmf, kpts)
    from spectra.core import reference_eigh

    sval = np.stack([reference_eigh(x)[0] for x in s])
    # a threshold between overlap eigenvalues, so that some directions are dropped
    thr = float(0.5 * (np.sort(sval.ravel())[3] + np.sort(sval.ravel())[4]))
    monkeypatch.setattr(mol_hf, "overlap_zero_eigenvalue_threshold", thr)
    assert lindep_threshold() == thr
    e, c = pyscf_bands(kmf, kpts)
    ref_e, _ref_c = kmf.get_bands(kpts)
    ref_e = np.asarray(ref_e)
    dropped = ref_e == 1e30
    assert dropped.any() and (e[dropped] == 1e30).all()
    assert np.abs(e[~dropped] - ref_e[~dropped]).max() < 1e-8
    assert np.all(c[np.broadcast_to(dropped[:, None, :], c.shape)] == 0)


def test_bands_carry_hartree_units_and_still_unpack():
    from spectra.tightbinding import Bands

    b = Bands(np.zeros((2, 3)), np.zeros((2, 3, 3)))
    energy, coeff = b
    assert b.units == "Hartree" and energy.shape == (2, 3)
    assert coeff.shape == (2, 3, 3) and len(b) == 2


def test_batched_hcore_equals_get_hcore(diamond):
    from spectra.tightbinding._pyscf_hcore import CHUNK_BYTES, fast_path_applies, hcore_kpts

    cell, kmf = diamond
    assert fast_path_applies(kmf)
    kpts = cell.get_abs_kpts(np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.5], [0.1, 0.2, 0.3]]))
    ref = np.asarray(kmf.get_hcore(cell, kpts))
    np.testing.assert_allclose(hcore_kpts(kmf, kpts), ref, rtol=0, atol=1e-12)
    assert CHUNK_BYTES > 0


def test_batched_hcore_in_several_chunks(diamond, monkeypatch):
    from spectra.tightbinding import _pyscf_hcore

    cell, kmf = diamond
    kpts = cell.get_abs_kpts(np.random.default_rng(0).random((5, 3)))
    monkeypatch.setattr(_pyscf_hcore, "CHUNK_BYTES", 1)  # one k-point per chunk
    one = _pyscf_hcore.hcore_kpts(kmf, kpts)
    monkeypatch.undo()
    np.testing.assert_allclose(one, _pyscf_hcore.hcore_kpts(kmf, kpts), rtol=0, atol=1e-12)
    np.testing.assert_allclose(one, np.asarray(kmf.get_hcore(cell, kpts)), rtol=0, atol=1e-12)


def test_bands_to_1e9_hartree_and_fallback_for_an_overridden_hcore(diamond):
    import copy

    from spectra.tightbinding._pyscf_hcore import fast_path_applies

    cell, kmf = diamond
    kpts = cell.get_abs_kpts(kpath(cell.lattice_vectors(), "L,G,X,W,K,G", 12).k)
    e, _ = pyscf_bands(kmf, kpts)
    assert np.abs(e - np.asarray(kmf.get_bands(kpts)[0])).max() < 1e-9

    class Shifted(type(kmf)):  # hcore + 0.1 S: every band moves up by 0.1 Ha
        def get_hcore(self, cell=None, kpts=None):
            return super().get_hcore(cell, kpts) + 0.1 * np.asarray(self.get_ovlp(cell, kpts))

    shifted = copy.copy(kmf)
    shifted.__class__ = Shifted
    assert not fast_path_applies(shifted)
    e2, _ = pyscf_bands(shifted, kpts)
    assert np.abs(e2 - (e + 0.1)).max() < 1e-9
    assert np.abs(e2 - np.asarray(shifted.get_bands(kpts)[0])).max() < 1e-9


@pytest.mark.parametrize("xc", ["lda", "pbe"])
def test_one_pass_local_potential_equals_pyscf_veff(diamond, xc):
    import copy

    from spectra.tightbinding._pyscf_local import _applies

    cell, kmf = diamond
    other = copy.copy(kmf)  # any density works: the SCF one, with another functional
    other.xc = xc
    assert _applies(other, np.asarray(other.make_rdm1())) == xc.upper().replace("PBE", "GGA")
    kpts = cell.get_abs_kpts(np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.5], [0.1, 0.2, 0.3]]))
    dm = other.make_rdm1()
    ref = np.asarray(other.get_hcore(cell, kpts)) + np.asarray(
        other.get_veff(cell, dm, kpts=other.kpts, kpts_band=kpts)
    )
    f, _ = fock_overlap(other, kpts)
    np.testing.assert_allclose(f, ref, rtol=0, atol=1e-11)


def test_one_pass_is_not_used_for_hybrids(diamond):
    import copy

    from spectra.tightbinding._pyscf_local import _applies

    _, kmf = diamond
    hybrid = copy.copy(kmf)
    hybrid.xc = "pbe0"
    assert _applies(hybrid, np.asarray(hybrid.make_rdm1())) is None
