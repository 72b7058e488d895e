"""The public entry points: ``spectra.eigh`` and ``spectra.eigvalsh``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from ._arrays import Origin, as_tensor, restore
from ._checks import (
    InputRejected,
    check_finite,
    check_hermitian,
    check_pair,
    check_square,
    check_values,
    quick_check,
)
from ._gauge import fix_gauge
from ._ragged import choose_buckets, group_by_bucket, pad_stack
from ._solve import SolverOptions, solve_canonical, solve_cholesky, solve_standard


class EighResult(NamedTuple):
    """``(eigenvalues, eigenvectors)``: ascending eigenvalues, eigenvectors in columns."""

    eigenvalues: Any
    eigenvectors: Any


def _is_ragged(a: Any) -> bool:
    return (
        isinstance(a, (list, tuple))
        and len(a) > 0
        and all(hasattr(x, "shape") and hasattr(x, "dtype") for x in a)
    )


def _prepare(
    a: Any,
    b: Any,
    name: str,
    check: bool,
    symmetry_tol: float | None,
    device: Any,
    defer_a_check: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None, Origin]:
    at, origin = as_tensor(a, name)
    check_square(at, name)
    bt = None
    if b is not None:
        bt, _ = as_tensor(b, name.replace("a", "b", 1) if name.startswith("a") else "b")
        if device is not None:
            bt = bt.to(device)
    if device is not None:
        at = _to_device(at, torch.device(device))
        bt = _to_device(bt, torch.device(device)) if bt is not None else None
    if bt is not None:
        common = torch.promote_types(at.dtype, bt.dtype)
        at, bt = at.to(common), bt.to(common)
        check_pair(at, bt)
    if check:
        if not (defer_a_check and bt is None):
            check_values(at, symmetry_tol, name)
        if bt is not None:
            bname = "b" if name == "a" else name.replace("a", "b", 1)
            check_values(bt, symmetry_tol, bname)
    return at, bt, origin


def _to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    if t.device == device:
        return t
    if device.type == "cuda" and t.device.type == "cpu" and t.numel() > (1 << 16):
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def _check_k(k: int | None, n: int, where: str = "") -> None:
    if k is None:
        return
    if isinstance(k, bool) or not isinstance(k, int) or k < 0 or k > n:
        raise ValueError(f"k must be an integer in [0, n={n}]{where}, got {k!r}")


def _slice_k(
    w: torch.Tensor,
    v: torch.Tensor | None,
    k: int | None,
    largest: bool,
    active: torch.Tensor | None = None,
):
    if k is None:
        return w, v
    n = w.shape[-1]
    if not largest:
        return w[..., :k], (v[..., :k] if v is not None else None)
    if active is None:
        return w[..., n - k :], (v[..., n - k :] if v is not None else None)
    if bool((active < k).any()):
        raise ValueError(f"k={k} exceeds the number of kept directions of b in some matrices")
    idx = (active.unsqueeze(-1) - k + torch.arange(k, device=w.device)).long()
    ws = w.gather(-1, idx)
    if v is None:
        return ws, None
    return ws, v.gather(-1, idx.unsqueeze(-2).expand(*v.shape[:-1], k))


def _dense(
    a: torch.Tensor,
    b: torch.Tensor | None,
    vectors: bool,
    k: int | None,
    largest: bool,
    lindep: float | None,
    fill: float,
    opts: SolverOptions,
    pre: Any = None,
):
    active = None
    if b is None:
        w, v = solve_standard(a, vectors, opts, pre=pre, gauge=True)
    else:
        shape = torch.broadcast_shapes(a.shape, b.shape)
        a, b = a.expand(shape), b.expand(shape)
        if lindep is None:
            w, v = solve_cholesky(a, b, vectors, opts)
        else:
            w, v = solve_canonical(a, b, vectors, opts, lindep, fill)
            active = (w != fill).sum(-1) if largest and k is not None else None
        if v is not None:
            v = fix_gauge(v)
    return _slice_k(w, v, k, largest, active)


def _run(a, b, *, vectors, k, largest, lindep, lindep_fill, check, symmetry_tol, device, solver_kw):
    opts = SolverOptions(**solver_kw)
    if isinstance(a, (list, tuple)) and not a and (b is None or isinstance(b, (list, tuple))):
        if b:  # an empty ragged list: empty lists back (as a loop over nothing gives)
            raise ValueError("with a ragged list a, b must be a list of the same length")
        return [], ([] if vectors else None)
    if _is_ragged(a):
        return _ragged(
            a, b, vectors, k, largest, lindep, lindep_fill, check, symmetry_tol, device, opts
        )
    at, bt, origin = _prepare(a, b, "a", check, symmetry_tol, device, defer_a_check=True)
    _check_k(k, at.shape[-1])
    # the standard problem checks its input block by block inside the workers
    pre = (lambda x, _offset: quick_check(x, symmetry_tol)) if check and bt is None else None
    try:
        w, v = _dense(at, bt, vectors, k, largest, lindep, lindep_fill, opts, pre=pre)
    except InputRejected:
        check_finite(at, "a")
        check_hermitian(at, symmetry_tol, "a")
        raise  # pragma: no cover - the detailed checks always find what the quick one did
    return restore(w, origin), restore(v, origin)


def _ragged(
    a: Sequence[Any], b: Any, vectors, k, largest, lindep, fill, check, symmetry_tol, device, opts
):
    if b is not None and (not isinstance(b, (list, tuple)) or len(b) != len(a)):
        raise ValueError("with a ragged list a, b must be a list of the same length")
    # shapes per item here; values are checked per bucket, on the stacked batch
    items = [
        _prepare(ai, None if b is None else b[i], f"a[{i}]", False, symmetry_tol, device)
        for i, ai in enumerate(a)
    ]
    for i, (ai, _, _) in enumerate(items):
        if ai.ndim != 2:
            raise ValueError(
                f"a[{i}] must be one (n, n) matrix in a ragged list, got shape {tuple(ai.shape)}"
            )
        _check_k(k, ai.shape[-1], f" for a[{i}]")
    devices = {ai.device for ai, _, _ in items}
    if len(devices) > 1:
        raise ValueError(f"ragged matrices live on several devices: {sorted(map(str, devices))}")
    dtype = items[0][0].dtype
    for ai, bi, _ in items:
        dtype = torch.promote_types(dtype, ai.dtype)
        if bi is not None:
            dtype = torch.promote_types(dtype, bi.dtype)
    sizes = [ai.shape[-1] for ai, _, _ in items]
    ceilings = choose_buckets(sizes, items[0][0].device, pad=b is None)
    out_w: list[Any] = [None] * len(items)
    out_v: list[Any] = [None] * len(items)
    for ceiling, members in group_by_bucket(sizes, ceilings).items():
        mats = [items[i][0].to(dtype) for i in members]
        if check:
            _check_members(items, members, symmetry_tol)
        if b is None:
            stack, inactive = pad_stack(mats, ceiling)
            w, v = solve_standard(stack, vectors, opts, inactive=inactive, gauge=True)
        else:
            stack = torch.stack(mats)
            bstack = torch.stack([items[i][1].to(dtype) for i in members])  # type: ignore[union-attr]
            w, v = _dense(stack, bstack, vectors, None, False, lindep, fill, opts)
        for row, i in enumerate(members):
            n = sizes[i]
            wi = w[row, :n]
            vi = v[row, :n, :n] if v is not None else None
            wi, vi = _slice_k(wi, vi, k, largest)
            out_w[i] = restore(wi, items[i][2])
            out_v[i] = restore(vi, items[i][2]) if vi is not None else None
    return out_w, out_v


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


def eigh(
    a: Any,
    b: Any = None,
    *,
    k: int | None = None,
    largest: bool = False,
    lindep: float | None = None,
    lindep_fill: float = math.inf,
    check: bool = True,
    symmetry_tol: float | None = None,
    device: Any = None,
    strategy: str | None = None,
    chunk_size: int | None = None,
    max_memory: int | None = None,
    workers: int | None = None,
    verify: bool | None = None,
    autotune: bool | None = None,
    degenerate_tol: float | None = None,
    broadening: float = 0.0,
) -> EighResult:
    """Eigenvalues and eigenvectors of a batch of symmetric/Hermitian matrices.

    Parameters
    ----------
    a : array ``(..., n, n)`` (torch tensor on any device, or NumPy), real symmetric or
        complex Hermitian; or a list/tuple of square matrices of different sizes (ragged),
        which gives lists back in the same order.
    b : optional positive-definite array broadcastable to ``a`` (or a list matching a
        ragged ``a``): the generalized problem ``A v = w B v``, with ``V^H B V = I``.
    k : return only ``k`` eigenpairs, the smallest (or the largest with ``largest=True``),
        always in ascending order: exactly that slice of the full result.
    lindep : with ``b``, drop ``b``'s eigen-directions with eigenvalue below ``lindep``
        (canonical orthogonalization, as PySCF at 1e-6) instead of failing on a nearly
        singular ``b``; the dropped pairs come last with value ``lindep_fill`` and zero vectors.
    check : check for NaN/Inf and asymmetry beyond ``symmetry_tol`` (relative; default
        1e-8 in double, 1e-3 in single precision); errors name the batch indices.
    device : solve on this device (e.g. ``"cuda"`` for NumPy input); results come back
        in the input's form.
    strategy, chunk_size, max_memory, workers, verify, autotune : execution options, see
        :func:`spectra.core.plan`.
    degenerate_tol, broadening : backward options (see ``spectra.core._autograd``):
        gradients stay finite at degenerate eigenvalues.

    Returns
    -------
    EighResult
        ``(eigenvalues, eigenvectors)``; eigenvectors are columns in the spectra gauge:
        the largest-magnitude entry of each is real and positive.

    Examples
    --------
    >>> import torch, spectra
    >>> a = torch.tensor([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 0.0], [0.0, 3.0]]])
    >>> w, v = spectra.eigh(a)
    >>> w
    tensor([[1., 3.],
            [1., 3.]])
    >>> spectra.eigh(a, k=1, largest=True).eigenvalues
    tensor([[3.],
            [3.]])
    """
    w, v = _run(
        a,
        b,
        vectors=True,
        k=k,
        largest=largest,
        lindep=lindep,
        lindep_fill=lindep_fill,
        check=check,
        symmetry_tol=symmetry_tol,
        device=device,
        solver_kw={
            "strategy": strategy,
            "chunk_size": chunk_size,
            "max_memory": max_memory,
            "workers": workers,
            "verify": verify,
            "autotune": autotune,
            "degenerate_tol": degenerate_tol,
            "broadening": broadening,
        },
    )
    return EighResult(w, v)


def eigvalsh(
    a: Any,
    b: Any = None,
    *,
    k: int | None = None,
    largest: bool = False,
    lindep: float | None = None,
    lindep_fill: float = math.inf,
    check: bool = True,
    symmetry_tol: float | None = None,
    device: Any = None,
    strategy: str | None = None,
    chunk_size: int | None = None,
    max_memory: int | None = None,
    workers: int | None = None,
    verify: bool | None = None,
    autotune: bool | None = None,
) -> Any:
    """Eigenvalues only (ascending) of a batch of symmetric/Hermitian matrices.

    Same arguments as :func:`eigh`; skips the eigenvectors where nothing needs them.

    Examples
    --------
    >>> import numpy as np, spectra
    >>> spectra.eigvalsh(np.diag([3.0, 1.0, 2.0]))
    array([1., 2., 3.])
    """
    w, _ = _run(
        a,
        b,
        vectors=False,
        k=k,
        largest=largest,
        lindep=lindep,
        lindep_fill=lindep_fill,
        check=check,
        symmetry_tol=symmetry_tol,
        device=device,
        solver_kw={
            "strategy": strategy,
            "chunk_size": chunk_size,
            "max_memory": max_memory,
            "workers": workers,
            "verify": verify,
            "autotune": autotune,
        },
    )
    return w
