"""Model, H(k) and bands: closed forms, PythTB, conventions, spin, overlaps, chunking, errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

from spectra.tightbinding import Model, chain, cubic, graphene, ssh

from .helpers import TOL, pythtb_bands, random_model, to_pythtb


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def graphene_closed_form(k: np.ndarray, t: float, delta: float) -> np.ndarray:
    f = 1 + np.exp(2j * np.pi * k[:, 0]) + np.exp(2j * np.pi * k[:, 1])
    e = np.sqrt(delta**2 + t**2 * np.abs(f) ** 2)
    return np.stack([-e, e], -1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("convention", ["lattice", "orbital"])
def test_graphene_closed_form(rng, dtype, convention):
    t, delta = -rng.uniform(0.5, 3), rng.uniform(0, 0.5)
    k = rng.random((200, 2)).astype(dtype)
    e = graphene(t, delta).bands(k, convention=convention)
    assert e.dtype == dtype and e.shape == (200, 2)
    ref = graphene_closed_form(k.astype(np.float64), t, delta)
    assert np.abs(e - ref).max() < TOL[dtype] * 10 * abs(t)


def test_chain_and_two_orbital_chain_closed_form(rng):
    k = rng.random((100, 1))
    t, eps = rng.standard_normal(), rng.standard_normal()
    np.testing.assert_allclose(
        chain(t, eps).bands(k)[:, 0], eps + 2 * t * np.cos(2 * np.pi * k[:, 0]), atol=1e-12
    )
    v, w, d = rng.standard_normal(3)
    e = ssh(v, w, d).bands(k)
    ref = np.sqrt(d**2 + np.abs(v + w * np.exp(-2j * np.pi * k[:, 0])) ** 2)
    np.testing.assert_allclose(e, np.stack([-ref, ref], -1), atol=1e-12)
    # a flat list of k works for a 1D model
    np.testing.assert_allclose(ssh(v, w, d).bands(k[:, 0]), e, atol=1e-14)


def test_cubic_closed_form(rng):
    k = rng.random((50, 3))
    ref = -2 * np.cos(2 * np.pi * k).sum(1)
    np.testing.assert_allclose(cubic().bands(k)[:, 0], ref, atol=1e-12)


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("nspin", [1, 2])
def test_random_models_match_pythtb(rng, dim, nspin):
    m = random_model(rng, dim, norb=4, nhop=10, nspin=nspin)
    p = to_pythtb(m)
    k = rng.uniform(-1, 1, (40, dim))
    ref = pythtb_bands(p, k).reshape(40, -1)
    for conv in ("lattice", "orbital"):
        assert np.abs(m.bands(k, convention=conv) - ref).max() < 1e-10


def test_orbital_convention_states_match_pythtb(rng):
    m = random_model(rng, 2, norb=3, nhop=8)
    p = to_pythtb(m)
    k = rng.random((30, 2))
    w, v = m.eigh(k, convention="orbital")
    ew, ev = p.solve_all(k, eig_vectors=True)  # ev: (nband, nk, norb), rows are states
    np.testing.assert_allclose(w, ew.T, atol=1e-10)
    # the same states up to a phase per band: |<pythtb|ours>| = 1
    ov = np.einsum("bki,kib->kb", ev.conj(), v)
    np.testing.assert_allclose(np.abs(ov), 1.0, atol=1e-9)
    # PythTB's H(k) is exactly ours in the orbital convention
    h = m.hamiltonian(k, convention="orbital")
    href = np.stack([p._gen_ham(kk) for kk in k])
    np.testing.assert_allclose(h, href, atol=1e-12)


def test_conventions_differ_by_the_orbital_phase(rng):
    m = random_model(rng, 3, norb=3, nhop=9)
    k = rng.random((10, 3))
    hl = m.hamiltonian(k, convention="lattice")
    ho = m.hamiltonian(k, convention="orbital")
    d = np.exp(2j * np.pi * k @ m.orbitals.T)
    np.testing.assert_allclose(ho, d.conj()[:, :, None] * hl * d[:, None, :], atol=1e-12)
    # the lattice convention is periodic in k, the orbital one is not (in general)
    g = np.array([1, 0, 0])
    np.testing.assert_allclose(m.hamiltonian(k + g, convention="lattice"), hl, atol=1e-11)
    assert np.abs(m.hamiltonian(k + g, convention="orbital") - ho).max() > 1e-3


def test_hamiltonian_is_the_direct_bloch_sum(rng):
    m = random_model(rng, 2, norb=3, nhop=7)
    rv, hr, _ = m.blocks()
    k = rng.random((5, 2))
    ref = np.array(
        [sum(np.exp(2j * np.pi * kk @ r) * b for r, b in zip(rv, hr, strict=True)) for kk in k]
    )
    np.testing.assert_allclose(m.hamiltonian(k), ref, atol=1e-12)
    np.testing.assert_allclose(m.hamiltonian(k), np.conj(np.swapaxes(ref, 1, 2)), atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_torch_in_torch_out(rng, dtype):
    m = graphene(-1.3, 0.2)
    k = torch.tensor(rng.random((64, 2)), dtype=dtype)
    e = m.bands(k)
    assert isinstance(e, torch.Tensor) and e.dtype == dtype
    w, v = m.eigh(k)
    assert v.dtype == (torch.complex64 if dtype == torch.float32 else torch.complex128)
    h = m.hamiltonian(k)
    resid = (h @ v - v * w.unsqueeze(-2).to(v.dtype)).abs().max()
    assert resid < (1e-4 if dtype == torch.float32 else 1e-12)
    ref = graphene_closed_form(k.double().numpy(), -1.3, 0.2)
    assert np.abs(e.double().numpy() - ref).max() < (1e-4 if dtype == torch.float32 else 1e-12)


def test_batch_shape_and_single_k(rng):
    m = graphene()
    k = rng.random((3, 4, 2))
    e = m.bands(k)
    assert e.shape == (3, 4, 2)
    np.testing.assert_allclose(e.reshape(12, 2), m.bands(k.reshape(12, 2)), atol=1e-14)
    assert m.bands([0.0, 0.0]).shape == (1, 2)
    assert m.bands(np.zeros((0, 2))).shape == (0, 2)


def test_chunking_is_exact(rng):
    m = random_model(rng, 2, norb=5, nhop=12)
    k = rng.random((257, 2))
    full_w, full_v = m.eigh(k)
    small_w, small_v = m.eigh(k, max_memory=20_000)  # a few k-points per chunk
    np.testing.assert_allclose(small_w, full_w, atol=1e-13)
    np.testing.assert_allclose(small_v, full_v, atol=1e-12)  # same gauge
    np.testing.assert_allclose(m.bands(k, max_memory=5_000), full_w, atol=1e-13)


def test_one_orbital_and_spin_doubling(rng):
    m = chain(0.7, 0.1)
    k = rng.random((9, 1))
    assert m.bands(k).shape == (9, 1)
    s = m.with_spin()
    np.testing.assert_allclose(s.bands(k), np.repeat(m.bands(k), 2, axis=1), atol=1e-13)


def test_spin_matrix_hopping_matches_pythtb(rng):
    sx = np.array([[0, 1], [1, 0]])
    sy = np.array([[0, -1j], [1j, 0]])
    m = Model(np.eye(2), [[0, 0], [0.5, 0.5]], nspin=2)
    m.set_onsite([0.3 * np.eye(2), 0.2 * sx])
    m.add_hopping(0.4j * sy + 0.1 * sx, 0, 1, [0, 0])
    m.add_hopping(-1.0, 0, 0, [1, 0])
    m.add_hopping(0.25 * sx, 1, 1, [0, 1])
    k = rng.random((25, 2))
    ref = pythtb_bands(to_pythtb(m), k)
    np.testing.assert_allclose(m.bands(k), ref, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nonorthogonal_generalized(rng, dtype):
    m = random_model(rng, 2, norb=3, nhop=6)
    m.add_overlap(0.1 + 0.05j, 0, 1, [0, 0])
    m.add_overlap(0.08, 1, 2, [1, 0])
    m.add_overlap(-0.05j, 2, 2, [0, 1])
    m.set_overlap_onsite(1.2, 0)
    assert not m.is_orthogonal
    k = rng.random((30, 2)).astype(dtype)
    w, v = m.eigh(k)
    h = m.hamiltonian(k.astype(np.float64))
    s = m.overlap(k.astype(np.float64))
    ref = np.array([scipy.linalg.eigh(a, b, eigvals_only=True) for a, b in zip(h, s, strict=True)])
    assert np.abs(w - ref).max() < TOL[dtype] * 50
    if dtype == np.float64:  # S-orthonormal states
        np.testing.assert_allclose(
            np.einsum("kia,kij,kjb->kab", v.conj(), s, v),
            np.broadcast_to(np.eye(3), (30, 3, 3)),
            atol=1e-10,
        )


def test_overlap_identity_for_orthogonal_model():
    m = graphene()
    s = m.overlap(np.zeros((2, 2)))
    np.testing.assert_allclose(s, np.broadcast_to(np.eye(2), (2, 2, 2)))


def test_set_blocks_roundtrip_and_hermiticity_check(rng):
    m = random_model(rng, 2, norb=3, nhop=7)
    rv, hr, _ = m.blocks()
    twin = Model(m.lattice, m.orbitals)
    twin.set_blocks(rv, hr)
    k = rng.random((10, 2))
    np.testing.assert_allclose(twin.bands(k), m.bands(k), atol=1e-13)
    bad = hr.copy()
    bad[0, 0, 1] += 0.5
    with pytest.raises(ValueError, match="not Hermitian"):
        twin.set_blocks(rv, bad)
    with pytest.raises(ValueError, match="partner"):
        nonzero = next(i for i, r in enumerate(rv) if r.any())
        twin.set_blocks(np.delete(rv, nonzero, 0), np.delete(hr, nonzero, 0))


def test_errors_are_clear():
    m = Model(np.eye(2), [[0, 0], [0.5, 0]])
    m.add_hopping(1.0, 0, 1, [1, 0])
    with pytest.raises(ValueError, match="already given"):
        m.add_hopping(2.0, 0, 1, [1, 0])
    with pytest.raises(ValueError, match="already given"):
        m.add_hopping(2.0, 1, 0, [-1, 0])  # the implied Hermitian partner
    m.add_hopping(2.0, 1, 0, [-1, 0], replace=True)
    np.testing.assert_allclose(m.hamiltonian([[0.0, 0.0]])[0, 0, 1], 2.0)
    with pytest.raises(ValueError, match="on-site"):
        m.add_hopping(1.0, 0, 0, [0, 0])
    with pytest.raises(IndexError, match="out of range"):
        m.add_hopping(1.0, 0, 2, [0, 0])
    with pytest.raises(ValueError, match="integer"):
        m.add_hopping(1.0, 0, 1, [0.5, 0])
    with pytest.raises(ValueError, match="2 integer components"):
        m.add_hopping(1.0, 0, 1, [0, 0, 1])
    with pytest.raises(ValueError, match="real"):
        m.set_onsite(1j, 0)
    with pytest.raises(ValueError, match="NaN"):
        m.add_hopping(np.nan, 0, 1, [0, 1])
    with pytest.raises(ValueError, match="one per orbital"):
        m.set_onsite([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="scalar"):
        m.add_hopping(np.eye(2), 0, 1, [0, 1])
    with pytest.raises(ValueError, match=r"shape \(nk, 2\)"):
        m.bands(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="NaN"):
        m.bands(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="convention"):
        m.bands([[0.0, 0.0]], convention="pythtb")
    with pytest.raises(ValueError, match="linearly dependent"):
        Model([[1, 0], [2, 0]], [[0, 0]])
    with pytest.raises(ValueError, match="orbitals"):
        Model(np.eye(2), [[0, 0, 0]])
    ribbon = Model(np.eye(2), [[0, 0]], periodic=[0])
    with pytest.raises(ValueError, match="non-periodic"):
        ribbon.add_hopping(1.0, 0, 0, [0, 1])


def _derived(kind):
    from spectra.tightbinding import cut, graphene, supercell

    g = graphene(-1.0, 0.2)
    if kind == "with_spin":
        return g.with_spin(), (0, 1, [0, 0])
    if kind == "supercell":
        return supercell(g, [2, 1]), (0, 1, [0, 0])
    if kind == "cut":
        return cut(g, 1, 3), (0, 1, [0, 0])
    if kind == "copy":
        return g.copy(), (0, 1, [-1, 0])
    rv, hr, _ = g.blocks()
    twin = g._like()
    twin.set_blocks(rv, hr)
    return twin, (1, 0, [1, 0])


@pytest.mark.parametrize("kind", ["with_spin", "supercell", "cut", "copy", "set_blocks"])
def test_derived_models_keep_refusing_duplicate_hoppings(kind):
    m, (i, j, r) = _derived(kind)
    r = np.asarray(r)[: m.dim_k] if m.dim_k < m.dim else r
    assert np.any(m.hamiltonian(np.zeros((1, m.dim_k))))  # the hopping is there
    with pytest.raises(ValueError, match="already given"):
        m.add_hopping(-0.5, i, j, r)
    with pytest.raises(ValueError, match="already given"):  # and its Hermitian partner
        m.add_hopping(-0.5, j, i, -np.asarray(r))
    before = m.bands(np.zeros((1, m.dim_k)))
    m.add_hopping(-0.5, i, j, r, replace=True)
    assert not np.allclose(m.bands(np.zeros((1, m.dim_k))), before)


def test_non_finite_terms_say_not_finite():
    from spectra.tightbinding import graphene

    g = graphene()
    for bad in (np.nan, np.inf, complex(0, np.nan)):
        with pytest.raises(ValueError, match="not finite"):
            g.set_onsite(bad, 0)
        with pytest.raises(ValueError, match="not finite"):
            g.add_hopping(bad, 0, 1, [1, 1])
    with pytest.raises(ValueError, match="not finite"):
        g.set_onsite([0.0, np.nan])
    s = g.with_spin()
    with pytest.raises(ValueError, match="not finite"):
        s.set_onsite(np.array([[np.nan, 0], [0, 1.0]]), 0)
    with pytest.raises(ValueError, match="not finite"):
        g.add_overlap(np.inf, 0, 1, [1, 1])


@pytest.mark.parametrize("convention", ["lattice", "orbital"])
def test_bloch_sums_read_the_arrays_converted_once_with_the_same_bits(convention: str) -> None:
    """``BlochData.tensors`` converts the model's arrays once per (dtype, device): the
    Bloch sums that read them are bitwise those of the public ``bloch_sum`` on the arrays,
    for float64 and float32 k-points, one k-point and many; a pickled copy (a Dask
    worker's) carries no converted tensors and sums the same."""
    import pickle

    from spectra.tightbinding import bloch_sum
    from spectra.tightbinding._bloch import hamiltonian_chunk

    m = graphene(delta=0.3)
    m.add_overlap(0.1, 0, 1, [0, 0])
    data = m.data()
    assert data.tensors(torch.float64, torch.device("cpu")) is data.tensors(
        torch.float64, torch.device("cpu")
    )
    assert data.tensors(torch.float32, "cpu") is not data.tensors(torch.float64, "cpu")
    for dtype in (torch.float64, torch.float32):
        for k in (torch.tensor([[0.1, 0.2]], dtype=dtype), torch.rand(37, 2, dtype=dtype)):
            h, s = hamiltonian_chunk(k, data, convention)
            assert s is not None
            assert torch.equal(h, bloch_sum(k, data.rvecs, data.hr, data.positions, convention))
            assert torch.equal(s, bloch_sum(k, data.rvecs, data.sr, data.positions, convention))
            copy = pickle.loads(pickle.dumps(data))
            assert copy.__dict__["_tensors"] == {}
            assert torch.equal(hamiltonian_chunk(k, copy, convention)[0], h)
    one = m.eigh([0.1, 0.2], convention=convention)
    many = m.eigh(np.array([[0.3, 0.4], [0.1, 0.2]]), convention=convention)
    np.testing.assert_allclose(one[0][0], many[0][1], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"NaN/Inf at k-point indices \[1\]"):
        m.eigh(torch.tensor([[0.0, 0.1], [np.inf, 0.0]]))
