"""One dense batch (``(..., n, n)``, with or without ``b``) through the solvers, gauge fixed
and ``k`` selected."""

from __future__ import annotations

from typing import Any

import torch

from .._options import Options
from .._request import Request
from ._gauge import fix_gauge
from ._select import kept_count, select_k
from ._solve import solve_canonical, solve_cholesky, solve_standard


def solve_dense(
    a: torch.Tensor,
    b: torch.Tensor | None,
    request: Request,
    opts: Options,
    pre: Any = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Eigenpairs of ``a`` (``A v = w B v`` with ``b``) for ``request`` (its ``k`` already
    checked against ``n``): the standard problem checks its blocks with ``pre`` inside the
    workers; ``request.lindep`` drops ``b``'s near-null space."""
    active = None
    vectors, k, largest, lindep = request.vectors, request.k, request.largest, request.lindep
    if b is None:
        w, v = solve_standard(a, vectors, opts, pre=pre, gauge=True)
    else:
        shape = torch.broadcast_shapes(a.shape, b.shape)
        a, b = a.expand(shape), b.expand(shape)
        if lindep is None:
            w, v = solve_cholesky(a, b, vectors, opts)  # gauged where it is computed
        else:
            w, v = solve_canonical(a, b, vectors, opts, lindep, request.lindep_fill)
            active = kept_count(w, request.lindep_fill) if largest and k is not None else None
            if v is not None:
                v = fix_gauge(v)
    return select_k(w, v, k, largest, active)
