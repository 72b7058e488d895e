"""One dense batch (``(..., n, n)``, with or without ``b``) through the solvers, gauge fixed
and ``k`` selected."""

from __future__ import annotations

import math
from typing import Any

import torch

from .._options import Options
from .._request import Request
from ._autograd import is_tracked
from ._checks import InputRejected, PairCheck, check_finite, check_hermitian, quick_check
from ._execute import Pre, execute
from ._gauge import fix_gauge
from ._plan import plan
from ._select import kept_count, select_k
from ._solve import (
    gauge_block_,
    push_to_top,
    solve_canonical,
    solve_cholesky,
    solve_standard,
)

Result = tuple[torch.Tensor, "torch.Tensor | None"]


def solve_dense(
    a: torch.Tensor,
    b: torch.Tensor | None,
    request: Request,
    opts: Options,
    pre: Any = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Eigenpairs of ``a`` (``A v = w B v`` with ``b``) for ``request`` (its ``k`` already
    checked against ``n``): the standard problem checks its blocks with ``pre`` inside the
    workers, the generalized one its blocks of ``a`` and ``b`` with ``pre``'s tolerance
    (``pre.tol``; :func:`quick_check`, finite too) where they are solved, and names what
    is wrong itself; ``request.lindep`` drops ``b``'s near-null space."""
    active = None
    vectors, k, largest = request.vectors, request.k, request.largest
    if b is None:
        part = solve_window(a, vectors, opts, k, largest, pre=pre)
        if part is not None:
            return part  # only the k wanted eigenpairs were computed
        w, v = solve_standard(a, vectors, opts, pre=pre, gauge=True)
    else:
        tol = getattr(pre, "tol", None)
        try:
            w, v, active = _generalized(a, b, request, opts, pre is not None, tol)
        except InputRejected:  # name what is wrong: a's indices first, then b's
            for x, name in ((a, "a"), (b, "b")):
                check_finite(x, name)
                check_hermitian(x, tol, name)
            raise  # pragma: no cover - the detailed checks always find what the quick one did
    return select_k(w, v, k, largest, active)


def _generalized(
    a: torch.Tensor, b: torch.Tensor, request: Request, opts: Options, check: bool, tol: Any
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """``A v = w B v`` (``b`` broadcast against ``a``), and the kept counts of ``lindep``'s
    path where ``k`` needs them; with ``check``, the values of ``a`` and ``b`` are checked
    on the way (:class:`InputRejected`): where the blocks are solved for the Cholesky path,
    here for an operand that broadcasts (once, not once per matrix it serves) and on the
    canonical path."""
    shape = torch.broadcast_shapes(a.shape, b.shape)
    if shape[-1] == 0:  # pairs of 0 x 0 matrices: the standard path's empty results
        w, v = solve_standard(a.expand(shape), request.vectors, opts)
        return w, v, None
    batch = math.prod(shape[:-2])
    pair = None
    if check:
        whole = [math.prod(x.shape[:-2]) == batch for x in (a, b)]
        if request.lindep is not None:
            whole = [False, False]
        for x, in_workers in zip((a, b), whole, strict=True):
            if not in_workers:
                quick_check(x.detach(), tol, finite=True)
        pair = PairCheck(tol, *whole)
    a, b = a.expand(shape), b.expand(shape)
    if request.lindep is None:
        w, v = solve_cholesky(a, b, request.vectors, opts, pair)  # gauged where computed
        return w, v, None
    fill = request.lindep_fill
    w, v = solve_canonical(a, b, request.vectors, opts, request.lindep, fill)
    active = kept_count(w, fill) if request.largest and request.k is not None else None
    return w, (fix_gauge(v) if v is not None else None), active


def solve_window(
    a: torch.Tensor,
    vectors: bool,
    opts: Options,
    k: int | None,
    largest: bool,
    pre: Pre | None = None,
    inactive: torch.Tensor | None = None,
) -> Result | None:
    """The ``k`` smallest (``largest``) eigenpairs of the Hermitian batch ``a`` by a partial
    solve, gauge fixed, where the planner takes one (``Plan.window``); ``None`` where it
    does not (the caller solves in full and slices). Never with gradients (a partial solve
    has no eigenvector-complete backward: tracked input keeps the full path), nor with
    ``inactive`` rows (padding, pushed to the top of the spectrum) and ``largest``.

    >>> from spectra.core._options import Options
    >>> a = torch.diag(torch.arange(300.0, dtype=torch.float64)).expand(4, 300, 300)
    >>> w, v = solve_window(a, True, Options(), 2, False)
    >>> w[0].tolist(), tuple(v.shape)
    ([0.0, 1.0], (4, 300, 2))
    """
    if not k or a.numel() == 0 or is_tracked(a) or (largest and inactive is not None):
        return None  # k = 0 too: the empty slice of the full path
    n = a.shape[-1]
    flat = a.reshape(-1, n, n)
    p = plan(
        n, flat.shape[0], a.dtype, a.device, vectors=vectors, k=k, largest=largest,
        **opts.planning(),
    )  # fmt: skip
    if p.window is None:
        return None
    if inactive is not None:
        flat = push_to_top(a, inactive).reshape(-1, n, n)
    w, v = execute(p, flat.contiguous(), pre, gauge_block_ if vectors else None)
    m = w.shape[-1]
    w = w.reshape(*a.shape[:-2], m)
    return w, (v.reshape(*a.shape[:-2], n, m) if vectors and v is not None else None)
