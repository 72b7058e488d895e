"""Tight-binding band structures: H(k) for every k at once, one batched core call.

>>> import numpy as np
>>> from spectra.tightbinding import Model
>>> g = Model([[1.0, 0.0], [0.5, 3 ** 0.5 / 2]], [[1 / 3, 1 / 3], [2 / 3, 2 / 3]])
>>> for R in ([0, 0], [-1, 0], [0, -1]):
...     g.add_hopping(-1.0, 0, 1, R)
>>> np.round(g.bands([[0.0, 0.0]]), 6)
array([[-3.,  3.]])
"""

from ._bloch import BlochData, bloch_sum, hamiltonian_chunk, solve_chunk
from ._builders import cut, supercell
from ._model import CONVENTIONS, Model

__all__ = [
    "CONVENTIONS",
    "BlochData",
    "Model",
    "bloch_sum",
    "cut",
    "hamiltonian_chunk",
    "solve_chunk",
    "supercell",
]
