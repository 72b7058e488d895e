"""Shared helpers for the tight-binding tests: random models and their PythTB twins."""

from __future__ import annotations

import numpy as np
import pythtb

from spectra.tightbinding import Model

#: Tolerances per k dtype: float64 is compared to 1e-10 (the issue's bar), float32 loosely.
TOL = {np.float64: 1e-10, np.float32: 2e-4}


def random_model(
    rng: np.random.Generator, dim: int, norb: int, nhop: int = 12, nspin: int = 1, reach: int = 2
) -> Model:
    """A random Hermitian model with complex hoppings (no duplicates) and random positions."""
    lat = np.eye(dim) + 0.3 * rng.standard_normal((dim, dim))
    m = Model(lat, rng.random((norb, dim)), nspin=nspin)
    if nspin == 1:
        m.set_onsite(rng.standard_normal(norb))
    else:
        for i in range(norb):
            a = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2))
            m.set_onsite(a + a.conj().T, i)
    seen = set()
    while len(seen) < nhop:
        i, j = (int(x) for x in rng.integers(0, norb, 2))
        r = tuple(int(x) for x in rng.integers(-reach, reach + 1, dim))
        if i == j and not any(r):
            continue
        key = min((i, j, r), (j, i, tuple(-x for x in r)))
        if key in seen:
            continue
        seen.add(key)
        if nspin == 1:
            t = complex(rng.standard_normal(), rng.standard_normal())
        else:
            t = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2))
        m.add_hopping(t, i, j, r)
    return m


def to_pythtb(m: Model) -> pythtb.tb_model:
    """The same model in PythTB, built from the model's blocks entry by entry."""
    p = pythtb.tb_model(m.dim_k, m.dim, m.lattice, m.orbitals, per=list(m.periodic), nspin=m.nspin)
    rv, hr, _ = m.blocks()
    ns = m.nspin
    zero = next(i for i, r in enumerate(rv) if not r.any())
    onsite = [hr[zero][i * ns : (i + 1) * ns, i * ns : (i + 1) * ns] for i in range(m.norb)]
    p.set_onsite([np.real(o[0, 0]) if ns == 1 else o for o in onsite])
    seen = set()
    for r, b in zip(rv, hr, strict=True):
        for i in range(m.norb):
            for j in range(m.norb):
                blk = b[i * ns : (i + 1) * ns, j * ns : (j + 1) * ns]
                if not np.any(blk) or (i == j and not r.any()):
                    continue
                key = min((i, j, tuple(r)), (j, i, tuple(-r)))
                if key in seen:
                    continue
                seen.add(key)
                p.set_hop(blk[0, 0] if ns == 1 else blk, i, j, r.tolist())
    return p


def pythtb_bands(p: pythtb.tb_model, k: np.ndarray) -> np.ndarray:
    """PythTB energies as ``(nk, nstates)``."""
    return np.asarray(p.solve_all(k)).T
