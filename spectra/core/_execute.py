"""Execute a :class:`Plan` on a flat ``(B, n, n)`` batch."""

from __future__ import annotations

import torch

from ._arrays import real_dtype
from ._plan import Plan
from ._strategies import STRATEGIES


def orthonormality_error(v: torch.Tensor) -> torch.Tensor:
    """Per-matrix ``max |V^H V - I|``."""
    eye = torch.eye(v.shape[-1], dtype=v.dtype, device=v.device)
    return (v.mH @ v - eye).abs().flatten(-2).amax(-1)


def verify_tolerance(n: int, dtype: torch.dtype) -> float:
    """Loss of orthonormality that marks a failed solve (far above LAPACK's ~n eps)."""
    return max(1e-3, 100 * n * torch.finfo(real_dtype(dtype)).eps) if real_dtype(dtype) == \
        torch.float32 else max(1e-8, 100 * n * torch.finfo(torch.float64).eps)


def _recompute_failures(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor) -> None:
    """Redo matrices whose eigenvectors are not orthonormal (or not finite) on the CPU."""
    err = orthonormality_error(v)
    bad = ~(err <= verify_tolerance(a.shape[-1], a.dtype)) | ~torch.isfinite(w).all(-1)
    if bool(bad.any()):
        idx = torch.nonzero(bad).flatten()
        wc, vc = torch.linalg.eigh(a[idx].cpu())
        w[idx] = wc.to(w.device)
        v[idx] = vc.to(v.device)


def execute(p: Plan, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Solve the flat batch ``a`` (shape ``(p.batch, p.n, p.n)``) as ``p`` says."""
    solve = STRATEGIES[p.strategy].solve
    chunks = p.chunks()
    if len(chunks) == 1:
        w, v = solve(a, p.vectors, p.workers)
        if p.verify and v is not None:
            _recompute_failures(a, w, v)
        return w, v
    w = torch.empty((p.batch, p.n), dtype=real_dtype(a.dtype), device=a.device)
    v = torch.empty_like(a) if p.vectors else None
    for start, stop in chunks:
        wi, vi = solve(a[start:stop], p.vectors, p.workers)
        if p.verify and vi is not None:
            _recompute_failures(a[start:stop], wi, vi)
        w[start:stop] = wi
        if v is not None:
            v[start:stop] = vi
    return w, v
