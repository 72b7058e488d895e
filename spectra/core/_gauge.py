"""The deterministic eigenvector gauge: the largest-magnitude entry is made real and positive."""

from __future__ import annotations

import torch

from ._arrays import default_tolerance


def gauge_phase(vectors: torch.Tensor) -> torch.Tensor:
    """Per-column factor (sign, or unit phase) that puts ``vectors`` in the spectra gauge.

    The pivot of each column is its first entry whose magnitude is within a relative
    ``default_tolerance(dtype)`` of the column's largest magnitude: near-ties between
    entries (common in symmetric graphs) then resolve the same way on every device and
    chunking, where a strict ``argmax`` would follow round-off. Returns shape
    ``(..., 1, m)``; zero columns get factor 1 (real) or 0 (complex, harmless).
    """
    with torch.no_grad():
        mag = vectors.abs()
        peak = mag.amax(-2, keepdim=True)
        near = mag >= peak * (1 - default_tolerance(vectors.dtype))
        idx = near.to(torch.uint8).argmax(-2, keepdim=True)
        pivot = vectors.gather(-2, idx)
        if vectors.is_complex():
            size = pivot.abs()
            return torch.where(size > 0, pivot.conj() / torch.where(size > 0, size, 1), 1)
        return torch.where(pivot < 0, -1.0, 1.0).to(vectors.dtype)


def fix_gauge(vectors: torch.Tensor) -> torch.Tensor:
    """Return ``vectors`` with each column multiplied by its gauge factor (out of place).

    The factor is treated as a constant under autograd: exact for real signs; for complex
    phases only gauge-invariant losses get exact gradients, as with ``torch.linalg.eigh``.

    >>> import torch
    >>> fix_gauge(torch.tensor([[0.6, 0.8], [-0.8, 0.6]], dtype=torch.float64))
    tensor([[-0.6000,  0.8000],
            [ 0.8000,  0.6000]], dtype=torch.float64)
    """
    if vectors.numel() == 0:
        return vectors
    return vectors * gauge_phase(vectors)
