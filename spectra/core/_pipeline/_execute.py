"""Execute a :class:`Plan` on a flat ``(B, n, n)`` batch.

Each chunk (memory budget) is split across the plan's workers; every part runs the whole
per-matrix pipeline while it is hot in cache: the input check (``pre``), the solve, the
CUDA orthonormality verification and the gauge (``post``). On 2 cores this halves the
cost of checks and gauge, which are O(n^2) per matrix but several passes each.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import torch

from .._solvers._lapack_subset import window_result
from .._solvers._torch_lapack import empty_result, torch_eigh
from .._strategies import STRATEGIES
from .._support._arrays import real_dtype
from .._support._threads import (
    caller_kernel_threads,
    check_cancelled,
    fan_out,
    single_threaded_kernels,
)
from ._checks import InputRejected, values_finite

if TYPE_CHECKING:  # pragma: no cover
    from ._plan import Plan

#: On CPU each worker walks its part in sub-blocks of about this many input bytes, so the
#: check, the solve, the gauge and the copy-out of a sub-block all hit a warm cache.
SUB_BLOCK_BYTES = 2 << 20

Pre = Callable[[torch.Tensor, int], None]
Post = Callable[[torch.Tensor], torch.Tensor]


def orthonormality_error(v: torch.Tensor) -> torch.Tensor:
    """Per-matrix ``max |V^H V - I|``."""
    eye = torch.eye(v.shape[-1], dtype=v.dtype, device=v.device)
    return (v.mH @ v - eye).abs().flatten(-2).amax(-1)


def verify_tolerance(n: int, dtype: torch.dtype) -> float:
    """Loss of orthonormality that marks a failed solve (far above LAPACK's ~n eps)."""
    if real_dtype(dtype) == torch.float32:
        return max(1e-3, 100 * n * torch.finfo(torch.float32).eps)
    return max(1e-8, 100 * n * torch.finfo(torch.float64).eps)


def _recompute_failures(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor) -> None:
    """Redo matrices whose eigenvectors are not orthonormal (or not finite) on the CPU."""
    err = orthonormality_error(v)
    bad = ~(err <= verify_tolerance(a.shape[-1], a.dtype)) | ~torch.isfinite(w).all(-1)
    if bool(bad.any()):
        idx = torch.nonzero(bad).flatten()
        wc, vc = torch_eigh(a[idx].cpu(), True)
        assert vc is not None
        w[idx] = wc.to(w.device)
        v[idx] = vc.to(v.device)


def execute(
    p: Plan, a: torch.Tensor, pre: Pre | None = None, post: Post | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Solve the flat batch ``a`` (shape ``(p.batch, p.n, p.n)``) as ``p`` says.

    ``pre(block, offset)`` runs on each input block before its solve (checks raise there,
    with ``offset`` locating the block in the batch); ``post(vectors)`` maps each block's
    eigenvectors (the gauge). With ``p.window = (lo, hi)`` only eigenpairs ``lo .. hi - 1``
    are computed (the strategy's partial solve): ``(B, hi - lo)`` and ``(B, n, hi - lo)``.
    """
    strategy = STRATEGIES[p.strategy]
    check = strategy.input_check(pre)  # the strategy's fused check where it can stand in
    into = strategy.abilities.into
    solve = strategy.solve
    gauged = strategy.abilities.gauged and not p.verify
    outputs = empty_result
    if p.window is not None:
        into, solve, outputs = _windowed(strategy.abilities.window, *p.window)
    blas = strategy.runs.blas_pool
    fused = _fused_pass(strategy, p, pre, post)

    def block(
        x: torch.Tensor,
        offset: int,
        w_out: torch.Tensor | None = None,
        v_out: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if fused is not None:  # check, solve and gauge per matrix, or nothing decided
            wf, vf = (w_out, v_out) if w_out is not None else outputs(x, p.vectors)
            if fused(x, wf, vf, pre is not None):
                return wf, vf
        # finite: every entry of x known finite, no need to look at the result
        finite = check(x, offset) if check is not None else False
        try:
            if w_out is not None and into is not None:
                into(x, w_out, v_out)
                w, v = w_out, v_out
            else:
                w, v = solve(x, p.vectors)
        except RuntimeError:
            if pre is not None and not bool(torch.isfinite(x).all()):
                raise InputRejected from None  # Inf the quick check let through
            raise
        if (
            pre is not None
            and not finite
            and not values_finite(w)
            and not bool(torch.isfinite(x).all())
        ):
            raise InputRejected
        if v is not None:
            if p.verify and p.window is None:
                _recompute_failures(x, w, v)
            if post is not None and not gauged:
                v = post(v)
        return w, v

    chunks = p.chunks()
    unit = strategy.runs.unit  # whole lane blocks: a part of one runs below the lanes' speed
    step = (
        p.batch
        if p.device.type != "cpu"
        else max(unit, SUB_BLOCK_BYTES // max(1, p.n * p.n * a.element_size()) // unit * unit)
    )
    # the plan's kernel threads: one per solve, or the caller's (a single-worker plan of
    # matrices LAPACK runs faster threaded), also inside the caller's one-thread setting
    threads = (
        single_threaded_kernels(blas)
        if p.workers > 1 or p.single_threaded
        else caller_kernel_threads()
        if p.device.type == "cpu"
        else nullcontext()
    )
    if len(chunks) == 1 and p.workers == 1 and p.batch <= step:
        with threads:
            return block(a, 0)
    w, v = outputs(a, p.vectors)  # column-major like LAPACK's: `into` writes in place
    with threads:  # set once for all chunks: changing torch's thread count is not free
        for start, stop in chunks:

            def part(lo: int, hi: int, start: int = start) -> None:
                for s in range(start + lo, start + hi, step):
                    check_cancelled()  # another part failed or the caller was interrupted
                    e = min(start + hi, s + step)
                    vs = v[s:e] if v is not None else None
                    wi, vi = block(a[s:e], s, w[s:e], vs)
                    if wi.data_ptr() != w[s:e].data_ptr():
                        w[s:e] = wi
                    if vs is not None and vi is not None and vi.data_ptr() != vs.data_ptr():
                        vs.copy_(vi)

            if p.workers == 1:
                part(0, stop - start)
            else:
                fan_out(part, stop - start, p.workers, blas=blas, set_threads=False)
    return w, v


def _fused_pass(strategy: Any, p: Plan, pre: Pre | None, post: Post | None) -> Any:
    """The strategy's fused check-solve-gauge pass where it stands in for this plan's three
    steps: a CPU full solve without verification, whose input check (if any) names its
    tolerance (the executor's own; the pass accepts only exactly Hermitian, finite input,
    which every such check accepts) and whose eigenvectors get the core's gauge."""
    fused = strategy.abilities.fused
    if (
        fused is None
        or strategy.abilities.into is None  # it stands for into + check + gauge: a
        # strategy whose into was dropped (its solve replaced, say) solves through solve
        or p.device.type != "cpu"
        or p.window is not None
        or p.verify
        or (pre is not None and getattr(pre, "tolerance", None) is None)
        or (p.vectors and (post is None or strategy.abilities.gauged))
    ):
        return None
    return fused


def _windowed(window: Any, lo: int, hi: int) -> tuple[Any, Any, Any]:
    """``(into, solve, outputs)`` of a strategy's partial solve of eigenpairs ``lo .. hi-1``."""
    assert window is not None, "a plan's window needs a strategy with a partial solve"

    def into(x: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
        window(x, w, v, lo, hi)

    def outputs(x: torch.Tensor, vectors: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        return window_result(x, vectors, hi - lo)

    def solve(x: torch.Tensor, vectors: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        w, v = outputs(x, vectors)
        into(x, w, v)
        return w, v

    return into, solve, outputs
