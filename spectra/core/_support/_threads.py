"""CPU fan-out: a persistent worker pool, one intra-op thread per worker, no leaked state.

Small LAPACK ``syevd`` calls gain nothing from threaded BLAS, and with other load the
threads oversubscribe the cores. Splitting the batch across workers that each run one
intra-op thread (torch releases the GIL inside eigh) is what scales on CPU.

What this module never does is change state another thread can see:

- ``torch.set_num_threads`` also sets the default of every thread started later (torch
  keeps it in a process-wide atomic read by each new thread), and threadpoolctl's limits
  are process-wide. Instead each pool thread, once, and a caller around a single-threaded
  solve, set their *own* OpenMP ICV (``omp_set_num_threads`` is per thread) and MKL's
  thread-local count (``mkl_set_num_threads_local``), through the libraries torch loaded.
  Where those are not found nothing is limited (slower, never wrong).
- Workers run under the caller's grad mode and inference mode (both are per thread).
- A call needing more workers than the pool has gets a new, larger pool; the old one is
  not shut down under callers still using it (it ends when the last reference goes).
- A forked child gets a fresh pool (``os.register_at_fork``): the parent's threads do not
  exist there.
- When one part fails or the caller is interrupted (Ctrl-C), the other parts are
  cancelled: queued ones never start, running ones stop at their next sub-block
  (:func:`check_cancelled`), and the caller returns once they have.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager, nullcontext
from typing import Any, TypeVar

import torch

T = TypeVar("T")

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_lock = threading.Lock()
_local = threading.local()


def cpu_count() -> int:
    """Cores this process may use (respects CPU affinity and cgroup-limited affinity)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


# ---- per-thread kernel thread counts ------------------------------------------------------


class _ThreadKnobs:
    """``omp_{get,set}_num_threads`` and MKL's ``MKL_Set_Num_Threads_Local`` of the libraries
    torch loaded (found in ``/proc/self/maps``), or ``None`` where absent."""

    def __init__(self) -> None:
        self.omp_set: Any = None
        self.omp_get: Any = None
        self.mkl_local: Any = None
        paths: list[str] = []
        try:
            with open("/proc/self/maps") as fh:
                for line in fh:
                    path = line.rsplit(None, 1)[-1] if "/" in line else ""
                    if (path.endswith(".so") or ".so." in path) and path not in paths:
                        paths.append(path)
        except OSError:  # pragma: no cover - non-Linux
            return
        # torch's own OpenMP runtime first: other wheels (scikit-learn) bundle their own
        # libgomp, whose thread counts torch's kernels never read
        # (/proc/self/maps names files by their resolved paths: a virtual environment
        # reached through a symbolic link must not hide torch's own runtime)
        torch_dir = os.path.realpath(os.path.dirname(torch.__file__))
        paths.sort(key=lambda p: not os.path.realpath(p).startswith(torch_dir))
        for path in paths:
            name = os.path.basename(path)
            if self.omp_set is None and ("gomp" in name or "iomp" in name or "libomp" in name):
                lib = self._open(path)
                if lib is not None and hasattr(lib, "omp_set_num_threads"):
                    self.omp_set, self.omp_get = lib.omp_set_num_threads, lib.omp_get_max_threads
                    self.omp_set.argtypes, self.omp_get.restype = [ctypes.c_int], ctypes.c_int
            if self.mkl_local is None and ("torch_cpu" in name or "mkl" in name):
                lib = self._open(path)
                # the C entry point (by value); the lowercase name is the Fortran one
                if lib is not None and hasattr(lib, "MKL_Set_Num_Threads_Local"):
                    self.mkl_local = lib.MKL_Set_Num_Threads_Local
                    self.mkl_local.argtypes, self.mkl_local.restype = [ctypes.c_int], ctypes.c_int

    @staticmethod
    def _open(path: str) -> Any:
        try:
            return ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError:  # pragma: no cover
            return None

    @property
    def available(self) -> bool:
        return self.omp_set is not None


_knobs: _ThreadKnobs | None = None


def _get_knobs() -> _ThreadKnobs:
    global _knobs
    if _knobs is None:
        _knobs = _ThreadKnobs()
    return _knobs


def thread_knobs() -> _ThreadKnobs:
    """The per-thread OpenMP and MKL thread-count functions of the libraries torch loaded
    (the compiled entry sets them as :func:`set_thread_kernel_threads` does)."""
    return _get_knobs()


def set_thread_kernel_threads(count: int) -> tuple[int, int, int] | None:
    """Set the calling thread's own OpenMP and MKL thread counts; return what restores
    them (``None`` where they cannot be set per thread: then nothing is changed). A count
    that is already right is not set again (each call is a few hundred nanoseconds, and a
    small call's whole budget is a few microseconds)."""
    knobs = _knobs if _knobs is not None else _get_knobs()
    if knobs.omp_set is None:
        return None
    if not getattr(_local, "torch_ready", False):
        torch.get_num_threads()  # torch's lazy per-thread init first, so it cannot undo ours
        _local.torch_ready = True
    old_omp = int(knobs.omp_get())
    if old_omp != count:
        knobs.omp_set(count)
    old_mkl = int(knobs.mkl_local(count)) if knobs.mkl_local is not None else count
    return old_omp, old_mkl, count


def restore_thread_kernel_threads(old: tuple[int, int, int] | None) -> None:
    """Undo :func:`set_thread_kernel_threads` in the calling thread."""
    if old is None:
        return
    knobs = _knobs if _knobs is not None else _get_knobs()
    if old[0] != old[2]:
        knobs.omp_set(old[0])
    if knobs.mkl_local is not None and old[1] != old[2]:
        knobs.mkl_local(old[1])  # 0: back to MKL's global setting


@contextmanager
def single_threaded_kernels(blas: bool = False) -> Iterator[None]:
    """Run the block with one torch intra-op (OpenMP/MKL) thread in *this* thread only.

    ``blas`` is accepted for compatibility and ignored: the BLAS pools NumPy ships
    (OpenBLAS) can only be limited process-wide, which other threads would observe.
    """
    old = set_thread_kernel_threads(1)
    outer = getattr(_local, "caller", None)
    _local.caller = old  # what this block's caller had (caller_kernel_threads)
    try:
        yield
    finally:
        _local.caller = outer
        restore_thread_kernel_threads(old)


@contextmanager
def caller_kernel_threads() -> Iterator[None]:
    """Run the block on the kernel threads the caller of the innermost
    :func:`single_threaded_kernels` had (a plan's threaded LAPACK call inside the core's
    one-thread setting: the threads of whoever called the core, one where a domain asked
    for one around it), and return to one thread after it; outside such a block nothing
    changes.

    >>> with single_threaded_kernels(), caller_kernel_threads():
    ...     pass
    """
    saved = getattr(_local, "caller", None)
    if saved is None:
        yield
        return
    restore_thread_kernel_threads(saved)
    try:
        yield
    finally:
        set_thread_kernel_threads(1)


def built_once(factory: Callable[[], T]) -> Callable[[], T]:
    """A getter of ``factory()``, built once per process even when the workers of a
    fan-out ask for it at the same moment (``functools.cache`` builds one per racing
    thread: two loaders of one library, each with its own state).

    >>> built = []
    >>> get = built_once(lambda: built.append(1) or len(built))
    >>> get(), get(), built
    (1, 1, [1])
    """
    lock = threading.Lock()
    box: list[T] = []

    def get() -> T:
        if not box:
            with lock:
                if not box:
                    box.append(factory())
        return box[0]

    return get


# ---- the pool -------------------------------------------------------------------------------


def _init_worker() -> None:
    set_thread_kernel_threads(1)  # pool threads are ours: one kernel thread for life


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < workers:
            # the old pool is dropped, not shut down: callers holding it finish their work,
            # and its threads exit once it is garbage collected
            _pool = ThreadPoolExecutor(
                max_workers=workers, thread_name_prefix="spectra", initializer=_init_worker
            )
            _pool_size = workers
        return _pool


def _reset_after_fork() -> None:
    global _pool, _pool_size, _lock, _local
    _pool, _pool_size = None, 0
    _lock = threading.Lock()
    _local = threading.local()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


class Cancelled(Exception):
    """Raised inside a worker whose fan-out was cancelled (another part failed, or the
    caller was interrupted); never reaches the caller."""


def check_cancelled() -> None:
    """Raise :class:`Cancelled` if the fan-out this worker runs for was cancelled.

    Long parts call it between sub-blocks; outside a fan-out it does nothing.
    """
    event = getattr(_local, "cancel", None)
    if event is not None and event.is_set():
        raise Cancelled


def split_ranges(total: int, parts: int) -> list[tuple[int, int]]:
    """Cut ``range(total)`` into ``parts`` contiguous near-equal ``(start, stop)`` ranges."""
    parts = max(1, min(parts, total))
    base, extra = divmod(total, parts)
    out, start = [], 0
    for i in range(parts):
        stop = start + base + (1 if i < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def fan_out(
    fn: Callable[[int, int], T],
    total: int,
    workers: int,
    blas: bool = False,
    set_threads: bool = True,
) -> list[T]:
    """Call ``fn(start, stop)`` on ``workers`` contiguous parts of ``range(total)`` in parallel.

    Workers run under the caller's grad and inference modes with one kernel thread each
    (``blas`` and ``set_threads`` are accepted for compatibility; pool threads are always
    single-threaded). The first exception raised in a part (or a ``KeyboardInterrupt`` in
    the caller) cancels the other parts and is re-raised in the caller once they stopped.
    """
    ranges = split_ranges(total, workers)
    if len(ranges) <= 1:
        return [fn(*r) for r in ranges]
    pool = _get_pool(len(ranges))
    grad = torch.is_grad_enabled()
    inference = torch.is_inference_mode_enabled()
    cancel = threading.Event()

    def run(lo: int, hi: int) -> T:
        if cancel.is_set():
            raise Cancelled
        previous = getattr(_local, "cancel", None)
        _local.cancel = cancel
        try:
            with (
                torch.inference_mode() if inference else nullcontext(),
                torch.set_grad_enabled(grad),
            ):
                return fn(lo, hi)
        except BaseException:
            cancel.set()  # the other parts (the caller's included) stop at their next check
            raise
        finally:
            _local.cancel = previous

    # the caller runs the first part itself: one thread hand-off fewer, and no core idles
    # while the caller waits (on 2 cores a 1,024 x 8 x 8 batch took longer split in two
    # than whole when both halves went to the pool)
    futures: list[Future[T]] = [pool.submit(run, lo, hi) for lo, hi in ranges[1:]]
    try:
        with single_threaded_kernels():
            first = run(*ranges[0])
        while futures:  # short waits: a simulated Ctrl-C (interrupt_main) lands between them
            done, pending = wait(futures, timeout=0.1, return_when=FIRST_EXCEPTION)
            if not pending or any(f.exception() is not None for f in done):
                break
        failed = [f for f in futures if f.done() and f.exception() is not None]
        if failed:
            raise _first_error(futures)
    except BaseException as exc:
        cancel.set()
        for f in futures:
            f.cancel()
        wait(futures)  # running parts stop at their next check_cancelled()
        if isinstance(exc, Cancelled):  # the caller's part stopped for a worker's error
            raise _first_error(futures) from None
        raise
    return [first] + [f.result() for f in futures]


def pull(
    order: Sequence[int], run: Callable[[int], None], workers: int, finish: bool = False
) -> None:
    """``run(i)`` for every ``i`` of ``order`` on ``workers`` threads (:func:`fan_out`),
    each taking the next index when it is free (greedy list scheduling: put the costliest
    first). The first error stops the others from taking new indices and is raised; with
    ``finish`` every index still runs and the error of the smallest index that failed is
    raised (the one a loop in index order would raise first).

    >>> seen = []
    >>> pull([2, 0, 1], seen.append, 2)
    >>> sorted(seen)
    [0, 1, 2]
    """
    lock = threading.Lock()
    state = {"next": 0, "failed": False}
    errors: dict[int, Exception] = {}

    def worker(lo: int, hi: int) -> None:
        while True:
            with lock:
                if state["failed"] or state["next"] >= len(order):
                    return
                i = order[state["next"]]
                state["next"] += 1
            try:
                run(i)
            except Exception as exc:
                if not finish:
                    state["failed"] = True
                    raise
                errors[i] = exc

    fan_out(worker, min(workers, len(order)), min(workers, len(order)))
    if errors:
        raise errors[min(errors)]


def _first_error(futures: list[Future[Any]]) -> BaseException:
    """The first real error in submission order (a :class:`Cancelled` only if none)."""
    errors = [f.exception() for f in futures if f.done() and not f.cancelled()]
    real = [e for e in errors if e is not None and not isinstance(e, Cancelled)]
    return real[0] if real else next(e for e in errors if e is not None)
