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
from ._dos import dos, fermi_level, integrated_dos
from ._kpoints import KPath, kpath, monkhorst_pack, special_points
from ._model import CONVENTIONS, Model
from ._models import chain, cubic, graphene, haldane, ssh
from ._plot import plot_bands
from ._pyscf import Bands, fock_overlap, pyscf_bands
from ._tbdat import TBData, parse_tb, write_tb
from ._topology import berry_flux, berry_phase, chern_number, wilson_loop
from ._wannier90 import read_wannier90, write_wannier90
from ._win import Win, read_win

__all__ = [
    "CONVENTIONS",
    "Bands",
    "BlochData",
    "KPath",
    "Model",
    "TBData",
    "Win",
    "berry_flux",
    "berry_phase",
    "bloch_sum",
    "chain",
    "chern_number",
    "cubic",
    "cut",
    "dos",
    "fermi_level",
    "fock_overlap",
    "graphene",
    "haldane",
    "hamiltonian_chunk",
    "integrated_dos",
    "kpath",
    "monkhorst_pack",
    "parse_tb",
    "plot_bands",
    "pyscf_bands",
    "read_wannier90",
    "read_win",
    "solve_chunk",
    "special_points",
    "ssh",
    "supercell",
    "wilson_loop",
    "write_tb",
    "write_wannier90",
]
