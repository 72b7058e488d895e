"""Random and adversarial test batches with known spectra (used by ``spectra check`` and tests)."""

from __future__ import annotations

import torch


def _wide(dtype: torch.dtype) -> torch.dtype:
    return torch.complex128 if dtype.is_complex else torch.float64


def random_unitary(
    batch: tuple[int, ...], n: int, dtype: torch.dtype, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Haar-distributed orthogonal/unitary matrices (QR of a Gaussian with phase fix)."""
    z = torch.randn(*batch, n, n, dtype=_wide(dtype), generator=generator)
    q, r = torch.linalg.qr(z)
    d = torch.diagonal(r, dim1=-2, dim2=-1)
    d = torch.where(d.abs() > 0, d / d.abs().clamp_min(1e-300), torch.ones_like(d))
    return (q * d.unsqueeze(-2)).to(dtype)


def with_spectrum(w: torch.Tensor, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Hermitian ``Q diag(w) Q^H`` with the eigenvalues in the rows of ``w`` (built in double)."""
    gen = torch.Generator().manual_seed(seed)
    q = random_unitary(tuple(w.shape[:-1]), w.shape[-1], _wide(dtype), gen)
    a = q @ torch.diag_embed(w.to(q.dtype)) @ q.mH
    return (0.5 * (a + a.mH)).to(dtype)


def random_hermitian(
    batch: tuple[int, ...], n: int, dtype: torch.dtype, seed: int = 0
) -> torch.Tensor:
    """``(X + X^H) / 2`` for a Gaussian ``X`` (GOE/GUE-like spectra)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*batch, n, n, dtype=_wide(dtype), generator=gen)
    return (0.5 * (x + x.mH)).to(dtype)


def adversarial_spectra(n: int) -> dict[str, torch.Tensor]:
    """Named eigenvalue patterns of length ``n`` that break careless solvers."""
    ar = torch.arange(n, dtype=torch.float64)
    half = (n + 1) // 2
    return {
        "repeated": torch.cat([torch.ones(half), 2 * torch.ones(n - half)]).double(),
        "clustered": 1.0 + 1e-9 * ar,
        "wide-range": torch.logspace(-8, 8, n, dtype=torch.float64)
        * torch.where(ar % 2 == 0, 1.0, -1.0).double(),
        "zero-matrix": torch.zeros(n, dtype=torch.float64),
    }
