"""Supercells fold onto primitive bands; ribbons/slabs match PythTB's cut_piece."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from spectra.tightbinding import cut, graphene, haldane, supercell

from .helpers import pythtb_bands, random_model, to_pythtb


def folded_primitive_bands(model, matrix, kbig):
    """Primitive bands at every k = (K + n) inv(M)^T, n over the distinct cosets."""
    minv_t = np.linalg.inv(np.asarray(matrix, float)).T
    det = round(abs(np.linalg.det(matrix)))
    dim = len(matrix)
    out = []
    for kk in kbig:
        ks = []
        for n in itertools.product(range(-det, det + 1), repeat=dim):
            k = (kk + np.array(n)) @ minv_t
            if not any(np.allclose(np.mod(k - q + 0.5, 1) - 0.5, 0, atol=1e-9) for q in ks):
                ks.append(k)
        assert len(ks) == det
        out.append(np.sort(model.bands(np.array(ks)).ravel()))
    return np.array(out)


@pytest.mark.parametrize("matrix", [[[2, 0], [0, 1]], [[2, 1], [-1, 1]], [[1, 1], [-1, 2]]])
def test_supercell_bands_fold_onto_primitive(matrix):
    rng = np.random.default_rng(7)
    m = random_model(rng, 2, norb=2, nhop=8)
    big = supercell(m, matrix)
    assert big.norb == m.norb * round(abs(np.linalg.det(matrix)))
    kbig = rng.random((6, 2))
    ref = folded_primitive_bands(m, matrix, kbig)
    for conv in ("lattice", "orbital"):
        np.testing.assert_allclose(big.bands(kbig, convention=conv), ref, atol=1e-10)


def test_supercell_3d_and_matches_pythtb():
    rng = np.random.default_rng(8)
    m = random_model(rng, 3, norb=2, nhop=6, reach=1)
    mat = [[1, 1, 0], [0, 2, 0], [0, 0, 1]]
    big = supercell(m, mat)
    k = rng.random((8, 3))
    ref = pythtb_bands(to_pythtb(m).make_supercell(mat), k)
    np.testing.assert_allclose(big.bands(k), ref, atol=1e-10)
    np.testing.assert_allclose(big.orbitals, to_pythtb(m).make_supercell(mat).get_orb(), atol=1e-12)


def test_supercell_keeps_overlap_and_spin():
    m = graphene().with_spin()
    m.add_overlap(0.1, 0, 1, [0, 0])
    big = supercell(m, 2)
    assert big.nstates == 16 and not big.is_orthogonal
    k = np.array([[0.0, 0.0], [0.25, 0.5]])
    ref = folded_primitive_bands(m, np.diag([2, 2]), k)
    np.testing.assert_allclose(big.bands(k), ref, atol=1e-10)


@pytest.mark.parametrize("direction", [0, 1])
def test_ribbon_matches_pythtb_cut_piece(direction):
    m = haldane(mass=0.2, phi=0.9)
    ribbon = cut(m, direction, 7)
    assert ribbon.dim_k == 1 and ribbon.nstates == 14
    p = to_pythtb(m).cut_piece(7, direction, glue_edgs=False)
    k = np.linspace(-0.5, 0.5, 21)[:, None]
    np.testing.assert_allclose(ribbon.bands(k), pythtb_bands(p, k), atol=1e-10)
    # a flake: cut both directions, a finite molecule with k of zero length
    flake = cut(ribbon, 1 - direction, 3)
    assert flake.dim_k == 0
    pf = p.cut_piece(3, 1 - direction, glue_edgs=False)
    np.testing.assert_allclose(
        flake.bands(np.zeros((1, 0)))[0], np.sort(pf.solve_all()), atol=1e-10
    )


def test_slab_from_3d():
    rng = np.random.default_rng(9)
    m = random_model(rng, 3, norb=2, nhop=6, reach=1)
    slab = cut(m, 2, 4)
    p = to_pythtb(m).cut_piece(4, 2, glue_edgs=False)
    k = rng.random((5, 2))
    np.testing.assert_allclose(slab.bands(k), pythtb_bands(p, k), atol=1e-10)


def test_builder_errors():
    m = graphene()
    with pytest.raises(ValueError, match="singular"):
        supercell(m, [[1, 1], [1, 1]])
    with pytest.raises(ValueError, match="integer"):
        supercell(m, [[1.5, 0], [0, 1]])
    with pytest.raises(ValueError, match="positive integer"):
        cut(m, 0, 0)
    ribbon = cut(m, 0, 3)
    with pytest.raises(ValueError, match="not periodic"):
        cut(ribbon, 0, 2)
    with pytest.raises(ValueError, match="leave"):
        supercell(ribbon, [[2, 0], [0, 1]])
