"""The registry of eigensolver strategies: every path the planner may take.

Each strategy solves a flat ``(B, n, n)`` block on one device and returns
``(eigenvalues (B, n) ascending, eigenvectors (B, n, n) or None)`` on that device. Tests
are parametrized over every registered strategy against the SciPy reference
(``tests/core/test_strategies.py``), as opt_einsum does for its path optimizers.
Fanning a CPU batch out across threads is the executor's job, not a strategy's: a
``threadable`` strategy is called once per worker on its part of the batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ._arrays import numba_pass_ok
from ._torch_lapack import torch_eigh, torch_eigh_into

Result = tuple[torch.Tensor, "torch.Tensor | None"]
#: ``solve(a, vectors)``: a ``(B, n, n)`` block in, ``(w, v or None)`` out
SolveFn = Callable[[torch.Tensor, bool], Result]


@dataclass(frozen=True)
class Strategy:
    """One way of solving a batch: where it runs and how."""

    name: str
    devices: tuple[str, ...]
    solve: SolveFn
    description: str
    available: Callable[[], bool] = lambda: True
    tunable_on: tuple[str, ...] = ("cpu", "cuda")  # device types the autotuner may pick it on
    memory_factor: float = 4.0  # peak working set per matrix, in n x n matrices
    #: optional ``solve_into(a, w_out, v_out_or_None)`` writing straight into the executor's
    #: outputs (column-major eigenvectors, as LAPACK returns them: no copy-out)
    solve_into: Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None], None] | None = None
    threadable: bool = False  # releases the GIL: the executor may fan a CPU batch out
    blas_pool: bool = False  # runs on the BLAS thread pool (limited to 1 thread per worker)
    #: eigenvectors come out already in the core's gauge (``fix_gauge_``): the executor
    #: skips its gauge pass (``post``) unless ``verify`` may have recomputed some matrices
    gauged: bool = False
    #: optional ``check_block(a, symmetry_tol)``: the executor's input check in one fused
    #: pass (``True``: every matrix finite and Hermitian within ``symmetry_tol``; ``False``:
    #: maybe not, the torch check decides; ``None``: not applicable to this block)
    check_block: Callable[[torch.Tensor, float], bool | None] | None = None
    #: optional ``matrix_seconds(n, dtype)``: one thread's time per matrix on CPU, for the
    #: planner's fan-out decision (default: LAPACK's cost model, ``_cost.matrix_seconds``)
    matrix_seconds: Callable[[int, torch.dtype], float] | None = None
    #: ``serves(n, dtype)``: whether the strategy solves such matrices on its own path;
    #: where not, it hands them to ``torch.linalg.eigh`` (e.g. the closed form above n = 3)
    serves: Callable[[int, torch.dtype], bool] = lambda n, dtype: True

    def supports(self, device: torch.device) -> bool:
        return device.type in self.devices and self.available()


class _Registry(dict[str, Strategy]):
    """The strategies by name; every change (``register``, ``unregister``, ``del``, a
    test's ``monkeypatch.setitem``) bumps :func:`registry_version`, which every cache of
    plans and timings is keyed on, so none can name a replaced or removed strategy."""

    version = 0

    def _bump(self) -> None:
        type(self).version += 1

    def __setitem__(self, key: str, value: Strategy) -> None:
        super().__setitem__(key, value)
        self._bump()

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._bump()

    def pop(self, key: str, *default: Any) -> Any:  # type: ignore[override]
        out = super().pop(key, *default)
        self._bump()
        return out

    def clear(self) -> None:
        super().clear()
        self._bump()

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        super().update(*args, **kwargs)
        self._bump()


STRATEGIES: dict[str, Strategy] = _Registry()


def registry_version() -> int:
    """A number that changes whenever a strategy is registered, replaced or removed.

    >>> v = registry_version()
    >>> _ = register(Strategy("demo-v", ("cpu",), lambda a, vectors: (a, None), "demo"))
    >>> _ = unregister("demo-v")
    >>> registry_version() > v
    True
    """
    return _Registry.version


def unregister(name: str) -> Strategy:
    """Remove the strategy ``name`` from the registry (plans and timings made with it are
    dropped from every cache) and return it; an unknown name is an ``InputError``."""
    if name not in STRATEGIES:
        from ._errors import InputError

        raise InputError(
            "strategy", f"{name!r} is not registered; registered: {sorted(STRATEGIES)}"
        )
    return STRATEGIES.pop(name)


def register(strategy: Strategy, *, replace: bool = False) -> Strategy:
    """Add ``strategy`` to the registry; a name already taken is refused unless ``replace``.

    >>> import torch
    >>> s = Strategy("demo", ("cpu",), lambda a, vectors: (torch.linalg.eigvalsh(a), None),
    ...              "eigenvalues through torch")
    >>> _ = register(s)
    >>> register(s)
    Traceback (most recent call last):
    ...
    ValueError: a strategy named 'demo' is already registered; pass replace=True to replace it
    >>> register(s, replace=True).name
    'demo'
    >>> del STRATEGIES["demo"]
    """
    if strategy.name in STRATEGIES and not replace:
        raise ValueError(
            f"a strategy named {strategy.name!r} is already registered; "
            "pass replace=True to replace it"
        )
    STRATEGIES[strategy.name] = strategy
    return strategy


def _numpy_solve(a: torch.Tensor, vectors: bool) -> Result:
    arr = a.detach().cpu().numpy()
    if vectors:
        w, v = np.linalg.eigh(arr)
        return torch.from_numpy(w).to(a.device), torch.from_numpy(v).to(a.device)
    return torch.from_numpy(np.linalg.eigvalsh(arr)).to(a.device), None


def _scipy_loop(a: torch.Tensor, vectors: bool) -> Result:
    import scipy.linalg

    arr = a.detach().cpu().numpy()
    n = arr.shape[-1]
    w = np.empty(
        arr.shape[:-1], dtype=np.float32 if arr.dtype in (np.float32, np.complex64) else np.float64
    )
    v = np.empty_like(arr) if vectors else None
    for i in range(arr.shape[0]):
        if vectors:
            w[i], v[i] = scipy.linalg.eigh(arr[i], check_finite=False)  # type: ignore[index]
        else:
            w[i] = scipy.linalg.eigh(arr[i], eigvals_only=True, check_finite=False)
    wt = torch.from_numpy(w).to(a.device)
    return wt, (torch.from_numpy(v).reshape(-1, n, n).to(a.device) if v is not None else None)


def _cupy_available() -> bool:
    try:
        import cupy  # noqa: F401
    except Exception:
        return False
    return torch.cuda.is_available()


def _cupy_syevj(a: torch.Tensor, vectors: bool) -> Result:
    """CuPy's batched Jacobi (``syevjBatched``) through DLPack, zero copy on the GPU."""
    import cupy

    with cupy.cuda.ExternalStream(torch.cuda.current_stream(a.device).cuda_stream):
        arr = cupy.from_dlpack(a.detach().contiguous())
        if vectors:
            w, v = cupy.linalg.eigh(arr)
            return torch.from_dlpack(w), torch.from_dlpack(v)
        return torch.from_dlpack(cupy.linalg.eigvalsh(arr)), None


def _numba_check(a: torch.Tensor, tol: float) -> bool | None:
    """The input check in numba's one pass (:mod:`._kernels._numba_check`) for CPU blocks
    large enough to repay importing numba; ``None`` (torch's check runs) otherwise."""
    if a.device.type != "cpu" or not numba_pass_ok(a.numel()):
        return None
    from ._kernels import _check_block

    return _check_block(a, tol)


register(
    Strategy(
        "torch",
        ("cpu", "cuda"),
        torch_eigh,
        "batched torch.linalg.eigh (LAPACK syevd loop on CPU, cuSOLVER batched on CUDA)",
        threadable=True,
        solve_into=torch_eigh_into,
        check_block=_numba_check,
    )
)
register(
    Strategy(
        "numpy",
        ("cpu",),
        _numpy_solve,
        "numpy.linalg.eigh (LAPACK looped in C)",
        # NumPy's OpenBLAS pool can only be limited process-wide (threadpoolctl), which
        # concurrent callers would observe: run it in the caller's thread, unsplit
        threadable=False,
        blas_pool=True,
        check_block=_numba_check,
    )
)
register(
    Strategy(
        "scipy",
        ("cpu",),
        _scipy_loop,
        "scipy.linalg.eigh per matrix (the reference; slow)",
        tunable_on=(),
        check_block=_numba_check,
    )
)
register(
    Strategy(
        "cupy-syevj",
        ("cuda",),
        _cupy_syevj,
        "CuPy batched syevj through DLPack",
        available=_cupy_available,
    )
)
