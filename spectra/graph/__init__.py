"""Graph spectral features for many graphs at once, through one batched eigh call.

Dense batched Laplacians (:func:`laplacian`), all eigenpairs of many graphs
(:func:`laplacian_eigh`), Laplacian positional encodings (:func:`laplacian_pe` and the PyG
transform :class:`LaplacianPE`), heat-kernel features (:func:`heat_kernel_diagonal`),
Laplacian eigenmaps (:func:`spectral_embedding`) and spectral clustering
(:func:`spectral_clustering`). Only :class:`LaplacianPE` needs torch-geometric
(``pip install torch-spectra[graph]``); it is imported on first use.

>>> import torch
>>> from spectra.graph import laplacian_pe
>>> edges = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]])
>>> out = laplacian_pe(edges, k=2, batch=torch.tensor([0, 0, 0, 1, 1]))
>>> out.pe.shape, out.mask.tolist()
(torch.Size([5, 2]), [[True, True], [True, False]])
"""

from __future__ import annotations

from typing import Any

from ._embedding import spectral_clustering, spectral_embedding
from ._heat import heat_kernel_diagonal, heat_kernel_from_spectrum
from ._kmeans import batched_kmeans
from ._laplacian import laplacian
from ._magnetic import MagneticPEResult, magnetic_laplacian, magnetic_laplacian_pe
from ._options import PEAttrs, PEColumns
from ._pe import LaplacianPEResult, laplacian_pe, multiplicity_groups
from ._random_walk import random_walk_pe
from ._spectrum import LaplacianSpectrum, laplacian_eigh

__all__ = [
    "LaplacianPE",
    "LaplacianPEResult",
    "LaplacianSpectrum",
    "MagneticLaplacianPE",
    "MagneticPEResult",
    "PEAttrs",
    "PEColumns",
    "RandomWalkPE",
    "batched_kmeans",
    "heat_kernel_diagonal",
    "heat_kernel_from_spectrum",
    "laplacian",
    "laplacian_eigh",
    "laplacian_pe",
    "magnetic_laplacian",
    "magnetic_laplacian_pe",
    "multiplicity_groups",
    "random_walk_pe",
    "spectral_clustering",
    "spectral_embedding",
]


def __getattr__(name: str) -> Any:
    if name == "LaplacianPE":
        from ._transform import LaplacianPE

        return LaplacianPE
    if name == "MagneticLaplacianPE":
        from ._magnetic_transform import MagneticLaplacianPE

        return MagneticLaplacianPE
    if name == "RandomWalkPE":
        from ._random_walk_transform import RandomWalkPE

        return RandomWalkPE
    raise AttributeError(f"module 'spectra.graph' has no attribute {name!r}")
