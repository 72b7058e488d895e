"""Optimizer plumbing: find the Stiefel parameters and retract them in as few calls as possible.

Every parameter's whole batch ``(..., n, p)`` goes through one retraction, and parameters
that share ``(n, p)``, dtype, device, metric and retraction are concatenated into one batch
first, so a model with many same-shape orthogonal weights costs one core eigh call per step.
A single parameter (the common case) is retracted as it is: no concatenation, no slicing.
A polar step small enough for the binomial series of ``(I + E)^(-1/2)``
(:mod:`~spectra.stiefel._series`) makes no core call at all (parameters of one shape
stacked), and a few single-matrix QR steps of one shape are one batched QR.

The per-step path calls the metric's methods on tensors directly (no array conversion, no
shape checks that the parameter's construction already made); NaN/Inf are caught by the
retraction's own check and only then traced back to the parameter, its gradient or its
state, named by its position in the optimizer's parameter groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..core.domain import InputError, real_dtype
from ._canonical import cayley_step
from ._checks import (
    ON_MANIFOLD_TOL,
    SELF_CORRECTING,
    all_finite,
    batch_indices,
    not_finite,
    require_on_manifold,
)
from ._manifold import Stiefel
from ._metrics import CanonicalMetric, EuclideanMetric
from ._polar import polar_no_grad
from ._retractions import qr_factor
from ._series import series_polar

#: metrics whose transport is the projection onto the new tangent space
_PROJECTING = (EuclideanMetric, CanonicalMetric)
#: up to this many single-matrix QR steps of one shape are one batched QR in this thread
_FEW = 4


def manifold_of(p: torch.Tensor) -> Stiefel | None:
    """The parameter's Stiefel manifold, ``None`` for an ordinary (Euclidean) parameter."""
    m = getattr(p, "manifold", None)
    if m is None:
        return None
    if not isinstance(m, Stiefel):
        raise TypeError(
            f"parameter of shape {tuple(p.shape)} carries a manifold "
            f"{type(m).__name__}; spectra's optimizers handle Stiefel manifolds "
            f"and ordinary parameters only"
        )
    return m


def euclidean_grad(
    p: torch.Tensor, group: dict, optimizer: str, value: torch.Tensor | None = None
) -> torch.Tensor:
    """The (negated, if maximizing) gradient plus weight decay (of ``value``, the
    parameter's detached data, when given)."""
    grad = p.grad
    assert grad is not None
    if grad.is_sparse:
        raise RuntimeError(f"{optimizer} does not support sparse gradients")
    g = -grad if group["maximize"] else grad
    if group["weight_decay"] != 0:
        g = g.add(p if value is None else value, alpha=group["weight_decay"])
    return g


@dataclass(slots=True)
class Job:
    """One pending Stiefel update: retract ``param`` along ``scale * direction``, then
    transport ``vectors`` (the state's tangent vectors) to the new point.

    ``where`` is ``(group index, parameter index)`` for error messages.
    """

    param: torch.Tensor
    manifold: Stiefel
    direction: torch.Tensor
    scale: float
    method: str
    vectors: list[torch.Tensor] = field(default_factory=list)
    where: tuple[int, int] = (0, 0)


def _stack(tensors: list[torch.Tensor], shape: tuple[int, ...]) -> torch.Tensor:
    flat = [t.reshape(-1, *shape) for t in tensors]
    return flat[0] if len(flat) == 1 else torch.cat(flat)


def _retract(
    manifold: Stiefel,
    method: str,
    x: torch.Tensor,
    d: torch.Tensor,
    scale: float,
    out: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(y, step)``: the metric's retraction of ``x`` along ``step = scale * d`` on checked
    tensors (``step`` is ``None`` for polar and QR: ``x + scale d`` is formed in one
    operation and their transport does not need the step; they write ``y`` into ``out``
    if given). Cayley refuses points off the manifold; polar and QR check their own results
    (Gram eigenvalues, diagonal of R). A polar step small enough for the binomial series
    (:func:`~spectra.stiefel._series.series_polar`) makes no eigh call."""
    if method == "polar":
        y = torch.add(x, d, alpha=scale)
        q = series_polar(y, out)
        if q is not None:
            return q, None
        return polar_no_grad(y, "retract(method='polar')", out), None
    if method == "qr" and x.ndim == 2:  # one matrix: nothing to fan out
        return qr_factor(torch.add(x, d, alpha=scale), out), None
    step = d.mul(scale)
    if method not in SELF_CORRECTING:
        require_on_manifold(x, f"retract(method={method!r})")
    y = manifold.metric.retraction(method)(x, step)
    if method != "qr" and not all_finite(y):
        raise InputError(f"retract(method={method!r}) output", "contains NaN or Inf")
    return y, step


def _run_one(job: Job, optimizer: str, state: str) -> None:
    """One parameter retracted as it is: no stacking or slicing. Polar and QR write the new
    point straight into the parameter (their checks pass before the write) and transport
    by projection at the new point only."""
    x = job.param.detach()
    if _cayley_one(job, x):
        return
    direct = job.method == "polar" or (job.method == "qr" and x.ndim == 2)
    try:
        y, step = _retract(
            job.manifold, job.method, x, job.direction, job.scale, x if direct else None
        )
    except ValueError as exc:
        _blame([job], optimizer, state, exc)
        raise
    metric = job.manifold.metric
    if step is None and type(metric) in _PROJECTING:  # in place: v - y herm(y^H v)
        _transport_in_place(y, job.vectors)
    else:
        for v in job.vectors:
            v.copy_(metric.transport(x, step, y, v, job.method))
    if y is not x:
        job.param.copy_(y)


#: the dtypes whose parameters the one-solve Cayley step takes (NumPy's own)
NUMPY_DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)


def _cayley_one(job: Job, x: torch.Tensor) -> bool:
    """One ``(n, p)`` CPU parameter on the canonical metric's Cayley retraction, ``2p < n``:
    its point and its transported vectors in one ``2p x 2p`` solve, the on-manifold check
    read from that system (:func:`~._canonical.cayley_step`), written back. ``False``
    (nothing written): the checked route, which decides and names what is wrong."""
    if (
        job.method != "cayley"
        or type(job.manifold.metric) is not CanonicalMetric
        or x.ndim != 2
        or x.device.type != "cpu"
        or x.dtype not in NUMPY_DTYPES
        or job.direction.shape != x.shape
        or job.direction.dtype != x.dtype
        or any(v.shape != x.shape or v.dtype != x.dtype for v in job.vectors)
    ):
        return False  # (NumPy holds float32/64 and complex64/128 arrays)
    tol = ON_MANIFOLD_TOL.get(real_dtype(x.dtype), 1e-5)
    got = cayley_step(x, job.direction.mul(job.scale), job.vectors, tol)
    if got is None:
        return False
    y, moved = got
    for v, new in zip(job.vectors, moved, strict=True):
        v.copy_(new)
    job.param.copy_(y)
    return True


def _series_ready(job: Job) -> bool:
    """Whether ``job`` is a polar step the binomial series may take (a projecting metric:
    its transport is the projection at the new point)."""
    return (
        job.method == "polar"
        and type(job.manifold.metric) in _PROJECTING
        and job.param.shape == job.direction.shape
    )


def _transport_in_place(x: torch.Tensor, vectors: list[torch.Tensor]) -> None:
    """Each ``v`` becomes its projection onto the tangent space at ``x``, in place."""
    for v in vectors:
        s = x.mH @ v
        if v.ndim == 2:
            v.addmm_(x, s + s.mH, alpha=-0.5)
        else:
            v.sub_(x @ (s + s.mH), alpha=0.5)


def _try_series(jobs: list[Job]) -> list[Job]:
    """The series steps of ``jobs`` (same shape, dtype and device) done in place, stacked
    into one batch when there are several; returns the jobs it could not take (nothing of
    theirs written)."""
    if len(jobs) == 1:
        job = jobs[0]
        x = job.param.detach()
        if series_polar(torch.add(x, job.direction, alpha=job.scale), x) is None:
            return jobs
        _transport_in_place(x, job.vectors)
        return []
    y = torch.stack([torch.add(j.param.detach(), j.direction, alpha=j.scale) for j in jobs])
    q = series_polar(y)
    if q is None:  # a step too large (or not finite): all to the core, grouped
        return jobs
    for job, new in zip(jobs, q.unbind(0), strict=True):
        x = job.param.detach()
        x.copy_(new)
        _transport_in_place(x, job.vectors)
    return []


def _qr_stacked(jobs: list[Job], optimizer: str, state: str) -> None:
    """A few single-matrix QR steps of one shape as one batched QR in this thread (no
    fan-out for so little work), written back and transported in place."""
    y = torch.stack([torch.add(j.param.detach(), j.direction, alpha=j.scale) for j in jobs])
    try:
        q = qr_factor(y)
    except ValueError as exc:
        _blame(jobs, optimizer, state, exc)
        raise
    for job, new in zip(jobs, q.unbind(0), strict=True):
        x = job.param.detach()
        x.copy_(new)
        _transport_in_place(x, job.vectors)


def run_jobs(jobs: list[Job], optimizer: str = "optimizer", state: str = "state") -> None:
    """Retract every job's parameter in place (grouped), then transport its vectors.

    Small polar steps are resolved by the binomial series (no core call; parameters of
    one shape stacked into one batch); one remaining parameter is retracted as it is;
    several are grouped by shape, dtype, device, metric and retraction into one
    retraction (one core eigh call) per group."""
    if len(jobs) == 1:
        if jobs[0].param.numel():
            _run_one(jobs[0], optimizer, state)
        return
    rest: list[Job] = []
    stacks: dict[tuple, list[Job]] = {}
    qrs: dict[tuple, list[Job]] = {}
    for job in jobs:
        p = job.param
        if not p.numel():
            continue
        if _series_ready(job):
            stacks.setdefault((p.shape, p.dtype, p.device), []).append(job)
        elif job.method == "qr" and p.ndim == 2 and type(job.manifold.metric) in _PROJECTING:
            qrs.setdefault((p.shape, p.dtype, p.device), []).append(job)
        else:
            rest.append(job)
    for members in stacks.values():
        rest.extend(_try_series(members))
    for members in qrs.values():
        if len(members) == 1 or len(members) > _FEW:
            rest.extend(members)  # alone: as it is; many: stacked and fanned out below
        else:
            _qr_stacked(members, optimizer, state)
    if len(rest) <= 1:
        if rest:
            _run_one(rest[0], optimizer, state)
        return
    buckets: dict[tuple, list[Job]] = {}
    for job in rest:
        p = job.param
        key = (tuple(p.shape[-2:]), p.dtype, p.device, job.method, job.manifold.metric)
        buckets.setdefault(key, []).append(job)
    for (shape, _, _, method, _), members in buckets.items():
        if len(members) == 1:
            _run_one(members[0], optimizer, state)
            continue
        manifold = members[0].manifold
        x = _stack([j.param.detach() for j in members], shape)
        d = _stack([j.direction.mul(j.scale) for j in members], shape)
        try:
            y, _ = _retract(manifold, method, x, d, 1.0)
        except ValueError as exc:
            _blame(members, optimizer, state, exc)
            raise
        start = 0
        for j in members:
            count = j.param.numel() // (shape[0] * shape[1])
            new = y[start : start + count].reshape(j.param.shape)
            old = x[start : start + count].reshape(j.param.shape)
            step = d[start : start + count].reshape(j.param.shape)
            start += count
            for v in j.vectors:
                v.copy_(manifold.metric.transport(old, step, new, v, method))
            j.param.copy_(new)


def _blame(jobs: list[Job], optimizer: str, state: str, exc: ValueError) -> None:
    """Raise an :class:`InputError` naming the parameter whose gradient, value or state is
    not finite (the retraction failed on it); return if none is (``exc`` stands)."""
    for job in jobs:
        p = job.param
        label = f"parameter {job.where[1]} of param group {job.where[0]} (shape {tuple(p.shape)})"
        suspects = [
            ("the gradient of", p.grad),
            ("", p.detach()),
            *((f"the {state} of", v) for v in job.vectors),
            ("the update direction of", job.direction),
        ]
        for what, t in suspects:
            if t is None:
                continue
            bad = not_finite(t)
            if bool(bad.any()):
                raise InputError(
                    f"{optimizer}: {what} {label}".replace(":  ", ": "),
                    "contains NaN or Inf",
                    batch_indices(bad),
                ) from exc
        if job.method not in SELF_CORRECTING:  # a Cayley step refused a drifted point
            try:
                require_on_manifold(p.detach(), f"retract(method={job.method!r})")
            except InputError as off:
                raise InputError(
                    f"{optimizer}: {label}",
                    off.problem,
                    off.indices,
                    hint=f"{off.hint}; or pass stabilize=k to the optimizer",
                ) from exc


def stabilize_group(group: dict, state: dict, buffer: str) -> None:
    """geoopt's ``stabilize_group``: put every Stiefel parameter of ``group`` back onto its
    manifold (:meth:`Stiefel.projx`) and its ``buffer`` state (momentum, first moment) back
    onto the tangent space (:meth:`Stiefel.proju`)."""
    for p in group["params"]:
        manifold = manifold_of(p)
        if manifold is None or p.numel() == 0:
            continue
        p.copy_(manifold.projx(p.detach()))
        buf = state.get(p, {}).get(buffer)
        if buf is not None:
            buf.copy_(manifold.proju(p.detach(), buf))
