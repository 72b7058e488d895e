"""k paths through named points and Monkhorst-Pack grids."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spectra.tightbinding import graphene, kpath, monkhorst_pack, special_points

DATA = Path(__file__).resolve().parents[2] / "data"

HEX = np.array([[1.0, 0.0], [0.5, np.sqrt(3) / 2]])
FCC = 0.5 * np.array([[0.0, 1, 1], [1, 0, 1], [1, 1, 0]])


def cart(lattice, k):
    return np.asarray(k) @ (2 * np.pi * np.linalg.inv(lattice).T)


def bz_distance(lattice, k):
    """Distance from k to the nearest reciprocal lattice vector other than its own cell."""
    dim = len(lattice)
    recip = 2 * np.pi * np.linalg.inv(lattice).T
    grid = np.stack(np.meshgrid(*[np.arange(-2, 3)] * dim, indexing="ij"), -1).reshape(-1, dim)
    g = grid @ recip
    kc = cart(lattice, k)
    d = np.linalg.norm(kc[None] - g, axis=1)
    return np.sort(d)


@pytest.mark.parametrize(
    "lattice",
    [
        HEX,
        np.array([[1.0, 0.0], [-0.5, np.sqrt(3) / 2]]),
        2.46 * np.array([[0.5, -np.sqrt(3) / 2], [0.5, np.sqrt(3) / 2]]),
    ],
)
def test_hexagonal_points_are_zone_corner_and_edge(lattice):
    kind, pts, _ = special_points(lattice)
    assert kind == "hexagonal2d"
    a = np.linalg.norm(lattice[0])
    # K is equidistant from Gamma and two other reciprocal points (a zone corner), at 4 pi/3a
    dk = bz_distance(lattice, pts["K"])
    np.testing.assert_allclose(dk[:3], 4 * np.pi / (3 * a), rtol=1e-12)
    dm = bz_distance(lattice, pts["M"])
    np.testing.assert_allclose(dm[:2], 2 * np.pi / (np.sqrt(3) * a), rtol=1e-12)


def test_fcc_points_geometry():
    for lat in (FCC * 3.57, 3.57 * np.array([[0.5, 0.5, 0], [0, 0.5, 0.5], [0.5, 0, 0.5]])):
        kind, pts, _ = special_points(lat)
        assert kind == "fcc"
        a = 3.57
        k = {n: np.abs(cart(lat, p)) / (2 * np.pi / a) for n, p in pts.items()}
        np.testing.assert_allclose(np.sort(k["X"]), [0, 0, 1], atol=1e-12)
        np.testing.assert_allclose(k["L"], [0.5] * 3, atol=1e-12)
        np.testing.assert_allclose(np.sort(k["W"]), [0, 0.5, 1], atol=1e-12)
        np.testing.assert_allclose(np.sort(k["K"]), [0, 0.75, 0.75], atol=1e-12)


@pytest.mark.parametrize(
    "lattice, kind",
    [
        (np.eye(1) * 3, "chain"),
        (np.eye(2) * 2, "square"),
        (np.diag([1.0, 2.0]), "rectangular"),
        (np.eye(3), "cubic"),
        (0.5 * np.array([[-1.0, 1, 1], [1, -1, 1], [1, 1, -1]]), "bcc"),
        (np.diag([1.0, 1.0, 2.0]), "tetragonal"),
        (np.diag([1.0, 2.0, 3.0]), "orthorhombic"),
        (np.array([[1.0, 0, 0], [0.5, np.sqrt(3) / 2, 0], [0, 0, 5]]), "hexagonal"),
    ],
)
def test_lattice_detection_and_default_paths(lattice, kind):
    found, pts, default = special_points(lattice)
    assert found == kind
    p = kpath(lattice, None, 80)
    assert p.k.shape == (80, len(lattice))
    names = [n for part in default.split("|") for n in part.split(",")]
    assert all(n in pts for n in names)


def test_kpath_even_spacing_and_ticks():
    p = kpath(HEX, "G,K,M,G", 301)
    assert p.labels == ["Γ", "K", "M", "Γ"]
    np.testing.assert_allclose(p.k[0], 0)
    np.testing.assert_allclose(p.k[-1], 0)
    steps = np.linalg.norm(np.diff(cart(HEX, p.k), axis=0), axis=1)
    np.testing.assert_allclose(np.diff(p.distance), steps, atol=1e-12)  # cumulative Cartesian
    assert steps.max() / steps.min() < 1.1  # evenly spaced across legs
    lengths = [4 * np.pi / 3, 2 * np.pi / 3, 2 * np.pi / np.sqrt(3)]
    np.testing.assert_allclose(p.ticks, np.concatenate([[0], np.cumsum(lengths)]), rtol=1e-12)
    for t, name in zip(p.ticks, p.labels, strict=True):  # each tick sits on its named point
        i = int(np.argmin(np.abs(p.distance - t)))
        assert abs(p.distance[i] - t) < 1e-12
        ref = {"Γ": [0, 0], "K": [2 / 3, 1 / 3], "M": [0.5, 0.5]}[name]
        np.testing.assert_allclose(p.k[i], ref, atol=1e-12)


def test_kpath_breaks_user_points_and_model():
    p = kpath(FCC, "G,X|K,G", 50)
    assert p.labels == ["Γ", "X|K", "Γ"]
    assert p.k.shape == (50, 3)
    assert np.sum(np.diff(p.distance) == 0) == 1  # the jump adds no distance
    q = kpath(np.eye(2), [[0, 0], [0.5, 0], [0.5, 0.5]], 21)
    assert len(q.labels) == 3 and q.k.shape == (21, 2)
    r = kpath(np.eye(2), "G,Q", 11, points={"Q": [0.25, 0.25]})
    np.testing.assert_allclose(r.k[-1], [0.25, 0.25])
    s = kpath(graphene(), "Γ,K", 5)
    assert s.labels == ["Γ", "K"]


def test_kpath_errors():
    with pytest.raises(ValueError, match="unknown k-point"):
        kpath(HEX, "G,Z", 20)
    with pytest.raises(ValueError, match="npoints"):
        kpath(HEX, "G,K,M,G", 3)
    with pytest.raises(ValueError, match="no standard"):
        kpath(np.array([[1.0, 0.3], [0.1, 1.7]]), None, 10)
    with pytest.raises(ValueError, match="reduced coordinates"):
        kpath(HEX, [[0, 0], [0.5, 0.5, 0]], 10)


@pytest.mark.parametrize("grid", [[4], [3, 2], [2, 3, 5]])
def test_monkhorst_pack(grid):
    k = monkhorst_pack(grid)
    assert k.shape == (int(np.prod(grid)), len(grid))
    for axis, q in enumerate(grid):  # each axis holds the MP set (2r - q - 1)/(2q), r = 1..q
        vals = np.unique(np.round(k[:, axis], 12))
        np.testing.assert_allclose(vals, [(2 * r - q - 1) / (2 * q) for r in range(1, q + 1)])
    np.testing.assert_allclose(k.sum(0), 0, atol=1e-12)  # symmetric about Gamma
    # C order: reshape recovers the grid, last axis fastest
    cube = k.reshape(*grid, len(grid))
    assert np.all(np.diff(cube[..., -1], axis=-1) > 0)
    g = monkhorst_pack(grid, gamma_centered=True)
    np.testing.assert_allclose(g[0], 0)
    with pytest.raises(ValueError, match="positive"):
        monkhorst_pack([0, 2])


def test_bands_and_eigh_accept_a_kpath_and_units_propagate():
    from spectra.tightbinding import cut, supercell

    g = graphene()
    g.units = "eV"
    path = kpath(g, "G,K,M,G", 30)
    np.testing.assert_array_equal(g.bands(path), g.bands(path.k))
    w, v = g.eigh(path)
    np.testing.assert_allclose(w, g.bands(path.k), atol=1e-14)
    assert v.shape == (30, 2, 2)
    np.testing.assert_array_equal(g.hamiltonian(path), g.hamiltonian(path.k))
    for derived in (g.copy(), g.with_spin(), supercell(g, 2), cut(g, 0, 3)):
        assert derived.units == "eV"
    assert "units='eV'" in repr(g)


def test_pythtb_convention_on_a_slab_uses_the_periodic_rows_metric():
    """A slab whose in-plane vector leans out of the plane: PythTB's metric uses the full
    periodic rows; so does spectra's (both conventions, up to the 2 pi)."""
    import pythtb

    from spectra.tightbinding import Model

    lat = [[1.0, 0.0, 0.4], [0.3, 1.2, -0.2], [0.0, 0.0, 5.0]]
    orb = [[0.0, 0.0, 0.0], [0.5, 0.5, 0.1]]
    p = pythtb.tb_model(2, 3, lat, orb, per=[0, 1])
    p.set_hop(-1.0, 0, 1, [0, 0, 0])
    p.set_hop(-0.5, 0, 0, [1, 0, 0])
    m = Model(lat, orb, periodic=[0, 1])
    m.add_hopping(-1.0, 0, 1, [0, 0, 0])
    m.add_hopping(-0.5, 0, 0, [1, 0, 0])
    nodes = [[0.0, 0.0], [0.5, 0.0], [0.5, 0.5], [0.0, 0.0]]
    k_vec, k_dist, k_node = p.k_path(nodes, 57, report=False)
    ours = kpath(m, nodes, 57, convention="pythtb")
    np.testing.assert_allclose(ours.k, k_vec, atol=1e-14)
    np.testing.assert_allclose(ours.distance, k_dist, atol=1e-13)
    np.testing.assert_allclose(kpath(m, nodes, 57).ticks, 2 * np.pi * k_node, rtol=1e-12)
    np.testing.assert_allclose(m.bands(ours), p.solve_all(k_vec).T, atol=1e-12)
    with pytest.raises(ValueError, match="convention"):
        kpath(m, nodes, 57, convention="wannier")
    with pytest.raises(ValueError, match="breaks"):
        kpath(graphene(), "G,K|M,G", 40, convention="pythtb")


def test_plot_bands_into_given_axes_with_units():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from spectra.tightbinding import Model, plot_bands

    m = Model.from_wannier90(DATA / "graphene_hr.dat")
    path = kpath(m, "G,K,M,G", 40)
    fig, (a, b, c) = plt.subplots(1, 3)
    out = plot_bands(path, m.bands(path), ax=a, units=m.units)
    assert out is fig and a.get_ylabel() == "E (eV)" and len(a.lines) >= 2
    energy = np.linspace(-9, 9, 50)
    plot_bands(path, m.bands(path), ax=(b, c), dos=(energy, np.ones(50)), units="Hartree")
    assert b.get_ylabel() == "E (Hartree)" and "Hartree" in c.get_xlabel()
    with pytest.raises(ValueError, match="pair"):
        plot_bands(path, graphene().bands(path), ax=a, dos=(energy, np.ones(50)))
    plt.close(fig)
