"""Compile (or load) every numba kernel signature the core uses, and say so on disk.

:func:`warm_kernels` runs each kernel once per dtype on a tiny input shaped exactly as the
core's call sites shape theirs (the same argument types, so the same signatures): the lane
kernels through :func:`~spectra.core._solvers._kernels.numba_into`, the fused input check
through its :func:`~._numba_check.block_ok` (exact and tolerance routes), the real gauge
and the complex phase passes as the gauge calls them. numba saves each compilation in its
cache; then the marker of :mod:`._ready` records the dtypes and the cache's index files, and
later processes take the kernels without compiling. ``spectra compile`` and
``spectra.core.warm_kernels()`` call it; the background compile is this module run as a
program::

    python -m spectra.core._solvers._kernels._warm [--background] [DTYPE ...]

(``--background``: lowest CPU priority, no output.) Compiling everything takes ~30-60 s on
the 2-core CI machine; with a warm cache it only loads (~1 s).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from ..._support._arrays import real_dtype
from . import _ready

_DTYPES = {name: dt for dt, name in _ready.GROUPS.items()}


def _sample(n: int, dtype: torch.dtype, exact: bool = True) -> torch.Tensor:
    g = torch.Generator().manual_seed(n)
    a = torch.randn(3, n, n, dtype=dtype, generator=g)
    a = a + a.mH
    if not exact:
        a[:, 0, -1] += 1e-3  # not exactly Hermitian: the check's tolerance route
    return a


def _outputs(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The executor's outputs: values (B, n), vectors column-major (``v.mT`` contiguous)."""
    b, n = a.shape[0], a.shape[-1]
    w = torch.empty(b, n, dtype=a.real.dtype)
    return w, torch.empty(b, n, n, dtype=a.dtype).mT


def _real(dtype: torch.dtype) -> list[tuple[Any, Callable[[], Any]]]:
    from . import _numba_check as nc
    from . import _numba_closed_form as ncf
    from . import _numba_gauge as ng
    from . import _numba_jacobi as nj
    from . import _numba_tridiag_ql as nq
    from . import numba_into

    eps = float(torch.finfo(dtype).eps)
    single = dtype == torch.float32
    runs: list[tuple[Any, Callable[[], Any]]] = []
    for kernel, n, args in (
        (ncf.sym2, 2, (ng.gauge_constants(dtype),)),
        (ncf.sym3, 3, (ng.gauge_constants(dtype),)),
        (nj.jacobi_real, 4, (eps,)),
        (nq.tridiag_ql_real, 8, (eps,)),
    ):
        a = _sample(n, dtype)
        for vectors in (True, False):
            w, v = _outputs(a)
            runs.append((kernel, _bind(numba_into, kernel, a, w, v if vectors else None, *args)))
    runs += _twisted(dtype)  # float32 too: the ``twisted`` strategy claims it from n = 256
    tol = 1e-6 if single else 1e-12
    runs.append((nc.lanes_exact_bits, _bind(nc.block_ok, _sample(8, dtype), tol)))
    runs.append((nc.lanes_ok, _bind(nc.block_ok, _sample(8, dtype, exact=False), tol)))
    runs.append((nc.lanes_ok3, _bind(nc.block_ok, _sample(3, dtype), tol)))
    _, v = _outputs(_sample(8, dtype))
    v.copy_(torch.eye(8, dtype=dtype))
    rows = v.mT.reshape(-1, 8, 8).numpy()
    bits, mask = (np.int32, 2**31 - 1) if single else (np.int64, 2**63 - 1)
    gauge = ng.gauge_constants(dtype)
    runs.append((ng.gauge_rows, _bind(ng.gauge_rows, rows, rows.view(bits), gauge, np.int64(mask))))
    return runs


def _twisted(dtype: torch.dtype) -> list[tuple[Any, Callable[[], Any]]]:
    """The ``twisted`` strategy's lane kernel (float64 whatever the input) and its LAPACK
    driver, compiled per input dtype: every dtype it claims is warmed, or its first claimed
    call would compile inside the call."""
    from .._twisted_eigh import available, twisted_eigh
    from . import _numba_twisted as nt

    d, e = np.linspace(1.0, 2.0, 16).reshape(2, 8), np.ones((2, 8))
    lanes = (d, e, np.empty((2, 8)), np.empty((2, 8, 8)))
    runs: list[tuple[Any, Callable[[], Any]]] = [
        (nt.tridiagonal_eigh, _bind(nt.tridiagonal_eigh, *lanes))
    ]
    if available():
        for vectors in (True, False):
            runs.append((nt.solve_blocks, _bind(twisted_eigh, _sample(8, dtype), vectors)))
    return runs


def _complex(dtype: torch.dtype) -> list[tuple[Any, Callable[[], Any]]]:
    from . import _numba_check as nc
    from . import _numba_hermitian_ql as nh
    from . import numba_into

    eps = float(torch.finfo(real_dtype(dtype)).eps)
    runs: list[tuple[Any, Callable[[], Any]]] = []
    a = _sample(8, dtype)
    for vectors in (True, False):
        w, v = _outputs(a)
        runs.append(
            (nh.hermitian_ql, _bind(numba_into, nh.hermitian_ql, a, w, v if vectors else None, eps))
        )
    tol = 1e-6 if dtype == torch.complex64 else 1e-12
    runs.append((nc.lanes_exact, _bind(nc.block_ok, _sample(8, dtype), tol)))
    runs.append((nc.lanes_ok, _bind(nc.block_ok, _sample(8, dtype, exact=False), tol)))
    if importlib.util.find_spec(f"{__package__}._numba_phase") is not None:
        from . import _numba_phase as nph  # the complex gauge's pass, where present

        _, v = _outputs(_sample(8, dtype))
        v.copy_(torch.eye(8, dtype=dtype))
        x = torch.view_as_real(v.mT.reshape(-1, 8, 8)).reshape(-1, 8, 16).numpy()
        consts = nph.phase_constants(1e-6, 1e-30, 1e30, dtype == torch.complex64)
        runs.append((nph.phase_rows, _bind(nph.phase_rows, x, consts)))
    return runs + _twisted(dtype)


def _bind(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    return lambda: fn(*args)


def _index_file(kernel: Any) -> str | None:
    """The cache index file numba keeps ``kernel``'s compilations in (``None`` if unknown)."""
    try:
        return str(kernel._cache._cache_file._index_path)
    except AttributeError:  # a numba whose cache internals moved: no marker is written
        return None


def warm_kernels(dtypes: Sequence[str | torch.dtype] | None = None) -> dict[str, dict[str, Any]]:
    """Compile, or load from numba's cache, every kernel signature the core uses for
    ``dtypes`` (default: float32, float64, complex64, complex128), so that no later call,
    in this process or another, waits for a compilation; record them on disk (the marker
    of :mod:`._ready`). Returns per dtype the seconds taken and how many kernels were
    compiled and how many loaded. Without numba it does nothing and returns ``{}``.

    >>> from spectra.core import warm_kernels
    >>> report = warm_kernels(["float64"])  # seconds on a fresh install, ~0.5 s after
    >>> sorted(report) == (["float64"] if report else [])
    True
    """
    from . import numba_available

    if not numba_available():
        return {}
    names = [_ready.group(d) if isinstance(d, torch.dtype) else str(d) for d in dtypes or _DTYPES]
    unknown = [n for n in names if n not in _DTYPES]
    if unknown:
        raise ValueError(f"dtypes {unknown}: expected some of {', '.join(_DTYPES)}")
    report: dict[str, dict[str, Any]] = {}
    for name in names:
        dtype = _DTYPES[name]
        t0 = time.perf_counter()
        runs = _complex(dtype) if dtype.is_complex else _real(dtype)
        kernels = {id(k): k for k, _ in runs}
        before = {key: _misses(k) for key, k in kernels.items()}
        for _, run in runs:
            try:
                run()
            except RuntimeError as exc:  # numba found no writable folder for its cache
                if "cannot cache" not in str(exc):
                    raise
                raise OSError(
                    f"numba cannot cache the kernels ({exc}): set NUMBA_CACHE_DIR to a "
                    "writable folder"
                ) from exc
        compiled = sum(_misses(k) > before[key] for key, k in kernels.items())
        report[name] = {
            "seconds": time.perf_counter() - t0,
            "compiled": compiled,
            "loaded": len(kernels) - compiled,
        }
        index = [_index_file(k) for k in kernels.values()]
        files = [f for f in index if f is not None and os.path.isfile(f)]
        if len(files) == len(index):  # every kernel saved: later processes may count on it
            report[name]["marker"] = str(_ready.write_marker(name, files))
    _ready.mark_loaded(names)
    return report


def _misses(kernel: Any) -> int:
    try:
        return sum(kernel.stats.cache_misses.values())
    except AttributeError:
        return 0


def _lower_priority() -> None:
    """The background compile yields the CPU to everything else (its own process only)."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        with contextlib.suppress(OSError):
            os.nice(19)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    background = "--background" in args
    names = [a for a in args if a != "--background"] or None
    if background:
        _lower_priority()
    report = warm_kernels(names)
    if not background:
        for name, entry in report.items():
            print(
                f"{name}: {entry['compiled']} kernels compiled, {entry['loaded']} loaded "
                f"in {entry['seconds']:.1f} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
