"""Independent references for the Stiefel tests (torch SVD and SciPy are allowed here)."""

from __future__ import annotations

import torch

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
REAL = [torch.float32, torch.float64]


def tol(dtype: torch.dtype) -> float:
    return 2e-5 if dtype in (torch.float32, torch.complex64) else 1e-12


def svd_polar(y: torch.Tensor) -> torch.Tensor:
    """Reference polar factor ``U V^H`` from torch's SVD."""
    u, _, vh = torch.linalg.svd(y, full_matrices=False)
    return u @ vh


def haar(*shape: int, dtype=torch.float64, generator=None) -> torch.Tensor:
    """Reference random points from torch's QR (independent of spectra)."""
    g = torch.randn(*shape, dtype=dtype, generator=generator)
    q, r = torch.linalg.qr(g)
    d = torch.diagonal(r, dim1=-2, dim2=-1)
    return q * (d / d.abs()).unsqueeze(-2)


def tangent(x: torch.Tensor, generator=None) -> torch.Tensor:
    """A random tangent vector at ``x`` (projection written out independently)."""
    z = torch.randn(x.shape, dtype=x.dtype, generator=generator)
    s = x.mH @ z
    return z - x @ (s + s.mH) / 2


def orth_err(x: torch.Tensor) -> float:
    eye = torch.eye(x.shape[-1], dtype=x.dtype)
    return float((x.mH @ x - eye).abs().max()) if x.numel() else 0.0
