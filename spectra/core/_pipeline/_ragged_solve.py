"""Ragged input: a list of matrices of different sizes, solved bucket by bucket.

Each bucket (``_ragged.choose_buckets``) is one batched core call: standard problems are
zero-padded to the bucket's size, generalized ones are grouped by exact size. Errors name
the list index (``a[3]``, ``b[3]``), never a position inside a bucket.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .._errors import InputError, LinAlgError
from .._options import Options
from .._request import Request
from .._support._arrays import restore
from ._checks import InputRejected, check_values, quick_check
from ._dense import solve_dense, solve_window
from ._prepare import check_k, prepare
from ._ragged import choose_buckets, group_by_bucket, pad_stack
from ._ragged_window import solve_windows, window_plans
from ._select import kept_count, select_k
from ._solve import solve_standard


def solve_ragged(
    a: Sequence[Any], b: Any, request: Request, opts: Options
) -> tuple[list[Any], list[Any]]:
    """Lists of eigenvalues and eigenvectors (``None`` entries without vectors), in order."""
    k, largest, check, symmetry_tol = (
        request.k,
        request.largest,
        request.check,
        request.symmetry_tol,
    )
    if b is not None and (not isinstance(b, (list, tuple)) or len(b) != len(a)):
        raise InputError("b", "must be a list of the same length as the ragged list a")
    # shapes per item here; values are checked per bucket, on the stacked batch
    items = [
        prepare(ai, None if b is None else b[i], f"a[{i}]", False, symmetry_tol, request.device)
        for i, ai in enumerate(a)
    ]
    ks: list[int | None] = []
    for i, (ai, _, _) in enumerate(items):
        if ai.ndim != 2:
            raise InputError(
                f"a[{i}]", f"must be one (n, n) matrix in a ragged list, got {tuple(ai.shape)}"
            )
        ks.append(check_k(k, ai.shape[-1], f"k for a[{i}]"))
    devices = {ai.device for ai, _, _ in items}
    if len(devices) > 1:
        raise InputError("a", f"is a ragged list on several devices: {sorted(map(str, devices))}")
    dtype = items[0][0].dtype
    for ai, bi, _ in items:
        dtype = torch.promote_types(dtype, ai.dtype)
        if bi is not None:
            dtype = torch.promote_types(dtype, bi.dtype)
    out_w: list[Any] = [None] * len(items)
    out_v: list[Any] = [None] * len(items)
    # a padded bucket's k smallest are its members' (the padding sits on top): a partial
    # solve may compute just those (``k`` is at most each member's size, checked above)
    window = k if not largest and b is None else None
    rest = list(range(len(items)))
    if window is not None:  # the sizes a partial solve takes: unpadded, in one fan-out
        mats = [ai.to(dtype) for ai, _, _ in items]
        plans = window_plans(mats, window, request.vectors, opts)
        if plans:
            if check:
                _check_members(items, sorted(plans), symmetry_tol)
            for i, (wi, vi) in solve_windows(mats, plans, request.vectors, opts).items():
                out_w[i] = restore(wi, items[i][2])
                out_v[i] = restore(vi, items[i][2]) if vi is not None else None
            rest = [i for i in rest if i not in plans]
    sizes = [items[i][0].shape[-1] for i in rest]
    ceilings = choose_buckets(sizes, items[0][0].device, pad=b is None) if rest else []
    whole = request.whole()  # every eigenpair per bucket; each member's k is taken below
    for ceiling, local in group_by_bucket(sizes, ceilings).items():
        members = [rest[j] for j in local]
        mats = [items[i][0].to(dtype) for i in members]
        if check:
            _check_members(items, members, symmetry_tol)
        bmats = None if b is None else [items[i][1].to(dtype) for i in members]  # type: ignore[union-attr]
        try:
            parts = _solve_bucket(mats, bmats, ceiling, whole, opts, window)
        except torch.linalg.LinAlgError:  # padding or stacking pushed a member over the edge
            parts = _solve_alone(mats, bmats, members, whole, opts)
        except (InputError, LinAlgError) as exc:  # name the list index, not the row
            raise _to_list_index(exc, members) from None
        for (wi, vi), i in zip(parts, members, strict=True):
            active = None
            if request.lindep is not None and largest and ks[i] is not None:
                active = kept_count(wi, request.lindep_fill)
            try:
                wi, vi = select_k(wi, vi, ks[i], largest, active)
            except InputError as exc:
                raise exc.reindexed(lambda _: (), what=f"k for a[{i}]") from None
            out_w[i] = restore(wi, items[i][2])
            out_v[i] = restore(vi, items[i][2]) if vi is not None else None
    return out_w, out_v


def _solve_bucket(
    mats: list[torch.Tensor],
    bmats: list[torch.Tensor] | None,
    ceiling: int,
    request: Request,
    opts: Options,
    window: int | None = None,
) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """One batched call for a bucket: padded standard problems, or same-size generalized
    (``window``: only the ``window`` smallest eigenpairs are wanted)."""
    if bmats is None:
        stack, inactive = pad_stack(mats, ceiling)
        vectors = request.vectors
        part = solve_window(stack, vectors, opts, window, False, inactive=inactive)
        if part is not None:
            w, v = part
        else:
            w, v = solve_standard(stack, vectors, opts, inactive=inactive, gauge=True)
        if bool(inactive.any()) and not bool(torch.isfinite(w).all()):
            # the padding shift overflowed (entries near the float range): not a result
            raise torch.linalg.LinAlgError("padded bucket overflowed")
    else:
        w, v = solve_dense(torch.stack(mats), torch.stack(bmats), request, opts)
    sizes = [m.shape[-1] for m in mats]
    return [(w[row, :n], v[row, :n, :n] if v is not None else None) for row, n in enumerate(sizes)]


def _solve_alone(
    mats: list[torch.Tensor],
    bmats: list[torch.Tensor] | None,
    members: list[int],
    request: Request,
    opts: Options,
) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """Each member of a failed bucket on its own, unpadded; the ones that still fail are
    named by their list index in one ``LinAlgError``."""
    parts: list[tuple[torch.Tensor, torch.Tensor | None]] = []
    failed: list[tuple[int, ...]] = []
    for row, m in enumerate(mats):
        try:
            bm = None if bmats is None else bmats[row][None]
            w, v = solve_dense(m[None], bm, request, opts)
            parts.append((w[0], v[0] if v is not None else None))
        except torch.linalg.LinAlgError:
            failed.append((members[row],))
    if failed:
        raise LinAlgError(
            "a",
            "could not be decomposed: the solver failed to converge",
            failed,
            hint="entries near the limits of the floating-point range?",
        )
    return parts


def _to_list_index(exc: InputError | LinAlgError, members: list[int]) -> Exception:
    """``exc`` (indices inside a bucket) re-indexed to positions in the ragged list."""
    moved = exc.reindexed(lambda ix: (members[ix[0]],) if ix else ix)
    if len(moved.indices) == 1 and moved.indices[0]:
        (i,) = moved.indices[0]
        return exc.reindexed(lambda _: (), what=f"{moved.what}[{i}]")
    return moved


def _check_members(items: list, members: list[int], symmetry_tol: float | None) -> None:
    """Check a bucket's matrices (and b's) in one batched pass per size; name ``a[i]``."""
    for pos in (0, 1):
        mats = [items[i][pos] for i in members]
        if mats[0] is None:
            continue
        for size in {m.shape[-1] for m in mats}:
            group = [i for i, m in zip(members, mats, strict=True) if m.shape[-1] == size]
            try:
                quick_check(torch.stack([items[i][pos] for i in group]), symmetry_tol, finite=True)
            except InputRejected:
                for i in group:
                    check_values(items[i][pos], symmetry_tol, f"{'ab'[pos]}[{i}]")
