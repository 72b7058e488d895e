"""Test inputs with known spectra, and comparisons that respect degeneracy."""

from __future__ import annotations

import numpy as np
import torch

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


def tol(dtype: torch.dtype) -> float:
    return 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-10


def random_unitary(batch, n, dtype, gen):
    z = torch.randn(*batch, n, n, dtype=torch.complex128 if dtype.is_complex else torch.float64,
                    generator=gen)
    q, r = torch.linalg.qr(z)
    d = torch.diagonal(r, dim1=-2, dim2=-1)
    return (q * (d / d.abs()).unsqueeze(-2)).to(dtype)


def with_spectrum(w: torch.Tensor, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Hermitian matrices ``Q diag(w) Q^H`` with the given eigenvalues (batch of w rows)."""
    gen = torch.Generator().manual_seed(seed)
    q = random_unitary(w.shape[:-1], w.shape[-1], torch.complex128 if dtype.is_complex
                       else torch.float64, gen)
    a = q @ torch.diag_embed(w.to(q.dtype)) @ q.mH
    a = 0.5 * (a + a.mH)
    return a.to(dtype)


def random_hermitian(batch, n, dtype, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    real = torch.float64 if not dtype.is_complex else torch.complex128
    x = torch.randn(*batch, n, n, dtype=real, generator=gen)
    return (0.5 * (x + x.mH)).to(dtype)


def projector_distance(v1, v2, w, gap_tol):
    """Max distance between spectral projectors of clusters of eigenvalues within gap_tol.

    Compares invariant subspaces, not individual vectors, so it is meaningful at
    repeated eigenvalues. Inputs are NumPy arrays for one matrix.
    """
    n = w.shape[-1]
    groups, start = [], 0
    for i in range(1, n + 1):
        if i == n or w[i] - w[i - 1] > gap_tol:
            groups.append((start, i))
            start = i
    worst = 0.0
    for s, e in groups:
        p1 = v1[:, s:e] @ v1[:, s:e].conj().T
        p2 = v2[:, s:e] @ v2[:, s:e].conj().T
        worst = max(worst, float(np.abs(p1 - p2).max()))
    return worst
