"""Selecting ``k`` eigenpairs: the exact slice of the full ascending decomposition."""

from __future__ import annotations

import torch

from .._errors import InputError


def _own(x: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
    """``x`` in storage of its own when it is a slice of ``full`` (so ``full`` can be freed)."""
    if x.shape == full.shape:
        return x
    return x.clone(memory_format=torch.contiguous_format)


def kept_count(w: torch.Tensor, fill: float) -> torch.Tensor:
    """Per matrix, how many eigenvalues are not the ``lindep`` fill (dropped directions)."""
    dropped = torch.isnan(w) if fill != fill else w == fill
    return (~dropped).sum(-1)


def select_k(
    w: torch.Tensor,
    v: torch.Tensor | None,
    k: int | None,
    largest: bool,
    active: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The ``k`` smallest (or largest) eigenpairs of ascending ``w``, ``v`` (columns).

    ``active`` (per matrix) counts the leading eigenpairs that are real ones: with
    ``lindep`` the dropped directions come last and ``largest`` must skip them. The result
    owns its memory: a k-slice does not keep the full eigenvector storage alive.

    >>> w = torch.tensor([1.0, 2.0, 3.0])
    >>> select_k(w, None, 2, True)[0]
    tensor([2., 3.])
    """
    if k is None:
        return w, v
    n = w.shape[-1]
    if not largest or active is None:
        lo, hi = (n - k, n) if largest else (0, k)
        return _own(w[..., lo:hi], w), (_own(v[..., lo:hi], v) if v is not None else None)
    short = active < k
    if bool(short.any()):
        where = [tuple(i) for i in torch.nonzero(short).tolist()] if short.ndim else [()]
        raise InputError(
            "k",
            f"= {k} exceeds the number of directions of b kept by lindep",
            where,
            hint="lower k or lindep",
        )
    idx = (active.unsqueeze(-1) - k + torch.arange(k, device=w.device)).long()
    ws = w.gather(-1, idx)
    if v is None:
        return ws, None
    return ws, v.gather(-1, idx.unsqueeze(-2).expand(*v.shape[:-1], k))
