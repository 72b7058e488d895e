"""The deterministic eigenvector gauge: the largest-magnitude entry is made real and positive.

The pivot of each column is its largest-magnitude entry; where several entries are within a
relative ``default_tolerance(dtype)`` of that magnitude (common in symmetric graphs, where
entries are equal up to round-off) the first of them is the pivot, so near-ties resolve the
same way on every device, chunking and strategy, where a strict ``argmax`` would follow
round-off. Real columns are scaled by the pivot's sign, complex ones by its inverse phase.
"""

from __future__ import annotations

import torch

from ._arrays import default_tolerance


def _pivot_first_near_max(vectors: torch.Tensor) -> torch.Tensor:
    """Index ``(..., 1, m)`` of the first entry within tolerance of each column's peak."""
    mag = vectors.abs()
    peak = mag.amax(-2, keepdim=True)
    near = mag >= peak * (1 - default_tolerance(vectors.dtype))
    return near.to(torch.uint8).argmax(-2, keepdim=True)


def _complex_phase_(vectors: torch.Tensor) -> torch.Tensor:
    """Multiply complex columns in place by ``conj(p)/|p|`` using real arithmetic only.

    torch's vectorized complex kernels round differently depending on where an element
    sits in memory (SIMD body vs tail), so ``vectors * phase`` could differ in the last bit
    between a batch and a slice of it. Separate real multiplies and adds round the same
    everywhere: results stay bitwise independent of chunking.
    """
    pivot = vectors.gather(-2, _pivot_first_near_max(vectors))
    pr, pi = pivot.real, pivot.imag
    size = torch.sqrt(pr * pr + pi * pi)
    nonzero = size > 0
    safe = torch.where(nonzero, size, torch.ones_like(size))
    cr = torch.where(nonzero, pr / safe, torch.ones_like(pr))
    ci = torch.where(nonzero, -pi / safe, torch.zeros_like(pi))
    parts = torch.view_as_real(vectors)
    vr, vi = parts[..., 0].clone(), parts[..., 1].clone()
    parts[..., 0] = vr * cr - vi * ci
    parts[..., 1] = vr * ci + vi * cr
    return vectors


def gauge_phase(vectors: torch.Tensor) -> torch.Tensor:
    """Per-column factor (sign, or unit phase) that puts ``vectors`` in the spectra gauge.

    Returns shape ``(..., 1, m)``; zero columns get factor 1.
    """
    with torch.no_grad():
        if vectors.is_complex():
            pivot = vectors.gather(-2, _pivot_first_near_max(vectors))
            size = pivot.abs()
            return torch.where(size > 0, pivot.conj() / torch.where(size > 0, size, 1), 1)
        # real: the sign of the largest-magnitude entry is that of the max or of the min;
        # one fused reduction, no |v| temporary (allocation dominated the cost at small n)
        lo, hi = torch.aminmax(vectors, dim=-2, keepdim=True)
        sign = torch.where(hi >= -lo, 1.0, -1.0).to(vectors.dtype)
        peak = torch.maximum(hi, -lo)
        tie = (hi + lo).abs() <= default_tolerance(vectors.dtype) * peak
        tie &= peak > 0
        if bool(tie.any()):
            # opposite-sign near-ties: the first near-peak entry decides (rare in double,
            # ~1% of columns in single precision): resolve only those columns
            where_tie = tie.squeeze(-2).nonzero(as_tuple=True)  # (batch..., column)
            cols = vectors.movedim(-1, -2)[where_tie]  # (T, n)
            first = _pivot_first_near_max(cols.unsqueeze(-1))  # (T, 1, 1)
            pivot = cols.gather(-1, first.squeeze(-1)).squeeze(-1)
            sign = sign.clone()
            sign.squeeze(-2)[where_tie] = torch.where(pivot < 0, -1.0, 1.0).to(sign.dtype)
        return sign


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
    if vectors.is_complex():
        if vectors.requires_grad:
            return vectors * gauge_phase(vectors)
        return _complex_phase_(vectors.clone())
    return vectors * gauge_phase(vectors)


def fix_gauge_(vectors: torch.Tensor) -> torch.Tensor:
    """In-place :func:`fix_gauge` for solver outputs the core owns (no autograd history)."""
    if vectors.numel() == 0:
        return vectors
    if vectors.is_complex():
        return _complex_phase_(vectors)
    return vectors.mul_(gauge_phase(vectors))
