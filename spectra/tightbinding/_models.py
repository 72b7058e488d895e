"""Textbook models: chain, SSH chain, graphene, Haldane, cubic s-band."""

from __future__ import annotations

import numpy as np

from ._model import Model

HEXAGONAL = np.array([[1.0, 0.0], [0.5, np.sqrt(3.0) / 2.0]])
HONEYCOMB = np.array([[1.0 / 3.0, 1.0 / 3.0], [2.0 / 3.0, 2.0 / 3.0]])


def chain(t: float = -1.0, onsite: float = 0.0) -> Model:
    """One orbital per cell, nearest-neighbour hopping: ``E(k) = onsite + 2 t cos(2 pi k)``.

    >>> import numpy as np
    >>> from spectra.tightbinding import chain
    >>> np.allclose(chain().bands([[0.25]]), 0.0)
    True
    """
    m = Model([[1.0]], [[0.0]])
    m.set_onsite(onsite)
    m.add_hopping(t, 0, 0, [1])
    return m


def ssh(v: float = 0.5, w: float = 1.0, delta: float = 0.0) -> Model:
    """Su-Schrieffer-Heeger chain (two sites, intra-cell ``v``, inter-cell ``w``, staggered
    on-site ``+-delta``): ``E = +-sqrt(delta^2 + |v + w exp(-2 pi i k)|^2)``.

    >>> import numpy as np
    >>> from spectra.tightbinding import ssh
    >>> np.allclose(ssh(0.5, 1.0).bands([[0.0]]), [[-1.5, 1.5]])
    True
    """
    m = Model([[1.0]], [[0.0], [0.5]])
    m.set_onsite([delta, -delta])
    m.add_hopping(v, 0, 1, [0])
    m.add_hopping(w, 1, 0, [1])
    return m


def graphene(t: float = -1.0, delta: float = 0.0) -> Model:
    """Graphene (honeycomb, lattice constant 1), nearest-neighbour ``t``, on-site ``+-delta``:
    ``E = +-sqrt(delta^2 + t^2 |1 + exp(2 pi i k1) + exp(2 pi i k2)|^2)``.

    >>> import numpy as np
    >>> from spectra.tightbinding import graphene
    >>> np.allclose(graphene().bands([[2 / 3, 1 / 3]]), 0.0)
    True
    """
    m = Model(HEXAGONAL, HONEYCOMB)
    m.set_onsite([-delta, delta])
    for r in ([0, 0], [-1, 0], [0, -1]):
        m.add_hopping(t, 0, 1, r)
    return m


def haldane(t1: float = -1.0, t2: float = 0.15, phi: float = np.pi / 2, mass: float = 0.0) -> Model:
    """Haldane's model (PythTB's example geometry): graphene with on-site ``-+mass`` and
    complex second-neighbour hopping ``t2 exp(+-i phi)``; Chern insulator (C = +-1) for
    ``|mass| < 3 sqrt(3) |t2 sin(phi)|``, trivial beyond.

    >>> from spectra.tightbinding import haldane
    >>> haldane().nstates
    2
    """
    m = Model(HEXAGONAL, HONEYCOMB)
    m.set_onsite([-mass, mass])
    m.add_hopping(t1, 0, 1, [0, 0])
    m.add_hopping(t1, 1, 0, [1, 0])
    m.add_hopping(t1, 1, 0, [0, 1])
    t2c = t2 * np.exp(1j * phi)
    m.add_hopping(t2c, 0, 0, [1, 0])
    m.add_hopping(t2c, 1, 1, [1, -1])
    m.add_hopping(t2c, 1, 1, [0, 1])
    m.add_hopping(np.conj(t2c), 1, 1, [1, 0])
    m.add_hopping(np.conj(t2c), 0, 0, [1, -1])
    m.add_hopping(np.conj(t2c), 0, 0, [0, 1])
    return m


def cubic(t: float = -1.0) -> Model:
    """Simple-cubic s band: ``E = 2 t (cos 2 pi k1 + cos 2 pi k2 + cos 2 pi k3)``.

    >>> import numpy as np
    >>> from spectra.tightbinding import cubic
    >>> np.allclose(cubic().bands([[0.0, 0.0, 0.0]]), -6.0)
    True
    """
    m = Model(np.eye(3), [[0.0, 0.0, 0.0]])
    for r in np.eye(3, dtype=int):
        m.add_hopping(t, 0, 0, r)
    return m


__all__ = ["chain", "cubic", "graphene", "haldane", "ssh"]
