"""Plan, then execute: the cheap, cached decision of how a batch will be solved.

``plan(shape, dtype, device)`` looks at the sizes, dtype, device, memory and cores and
returns an inspectable :class:`Plan` (strategy, chunking, workers, verification);
``execute`` follows it. The same decision is made for the same inputs, so a call can be
explained before it runs (``spectra explain``).
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field

import torch

from ._strategies import STRATEGIES
from ._threads import cpu_count

#: torch releases before 2.12 batch CUDA eigh only for n <= 32 (syevjBatched) and loop
#: syevd per matrix above it: a size class that padding must not push a bucket into.
LEGACY_CUDA_BATCHED_MAX_N = 32
#: Below this size one CPU matrix gains nothing from threaded LAPACK; running every CPU
#: solve with one kernel thread also keeps results bitwise independent of how the batch
#: is split. Larger matrices in a single-worker plan use the caller's thread settings.
THREADED_LAPACK_MIN_N = 256
_MIN_PARALLEL_BATCH = 2
#: Fanning out costs a thread hand-off (tens of microseconds, milliseconds under load):
#: batches whose serial solve is estimated below this stay in the caller's thread.
_MIN_PARALLEL_SECONDS = 1e-3


def cpu_solve_seconds(n: int, dtype: torch.dtype) -> float:
    """Rough single-thread time of one eigh of size ``n`` (LAPACK syevd, measured on x86)."""
    complex_factor = 4.0 if dtype.is_complex else 1.0
    return complex_factor * (5e-6 + 1.5e-9 * n**3)


def torch_version() -> tuple[int, int]:
    """``(major, minor)`` of the running torch."""
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def cuda_batched_everywhere() -> bool:
    """Whether torch routes every batched CUDA eigh to the batched cuSOLVER path (>= 2.12)."""
    return torch_version() >= (2, 12)


@dataclass(frozen=True)
class Plan:
    """How one batch of ``batch`` matrices of size ``n`` will be solved."""

    n: int
    batch: int
    dtype: torch.dtype
    device: torch.device
    vectors: bool
    strategy: str
    chunk_size: int
    workers: int
    verify: bool
    bytes_per_matrix: int
    memory_budget: int
    reasons: tuple[str, ...] = field(default=())
    single_threaded: bool = False  # one intra-op/BLAS thread per solve (CPU)

    @property
    def n_chunks(self) -> int:
        return 0 if self.batch == 0 else -(-self.batch // self.chunk_size)

    def chunks(self) -> list[tuple[int, int]]:
        """``(start, stop)`` of each chunk of the flat batch."""
        return [
            (s, min(s + self.chunk_size, self.batch)) for s in range(0, self.batch, self.chunk_size)
        ]

    def __str__(self) -> str:
        lines = [
            f"spectra plan: {self.batch} matrices of {self.n}x{self.n} {str(self.dtype)[6:]} "
            f"on {self.device} ({'eigenpairs' if self.vectors else 'eigenvalues only'})",
            f"  strategy     {self.strategy}: {STRATEGIES[self.strategy].description}",
            f"  workers      {self.workers}"
            + (" (batch split across threads, one kernel thread each)" if self.workers > 1 else ""),
            f"  chunks       {self.n_chunks} of up to {self.chunk_size} matrices "
            f"({self.bytes_per_matrix:,} B each, budget {self.memory_budget:,} B)",
            f"  verify       {'V^H V = I checked, failures recomputed' if self.verify else 'off'}",
        ]
        lines += [f"  why          {r}" for r in self.reasons]
        return "\n".join(lines)


def available_memory(device: torch.device) -> int:
    """Free bytes on ``device`` (CUDA: free device memory; CPU: MemAvailable)."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - non-Linux
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 8 << 30


_BUDGET_CACHE: dict[torch.device, tuple[float, int]] = {}
_BUDGET_TTL_S = 1.0


def default_budget(device: torch.device) -> int:
    """Half of the free memory, rounded down to 64 MiB so plans can be cached.

    Re-read at most once a second per device: for small batches the query itself
    (``/proc/meminfo``, ``cudaMemGetInfo``) was a visible share of the call.
    """
    now = time.monotonic()
    hit = _BUDGET_CACHE.get(device)
    if hit is not None and now - hit[0] < _BUDGET_TTL_S:
        return hit[1]
    step = 64 << 20
    budget = max(step, (available_memory(device) // 2) // step * step)
    _BUDGET_CACHE[device] = (now, budget)
    return budget


def plan(
    n: int,
    batch: int,
    dtype: torch.dtype,
    device: torch.device | str = "cpu",
    *,
    vectors: bool = True,
    strategy: str | None = None,
    chunk_size: int | None = None,
    max_memory: int | None = None,
    workers: int | None = None,
    verify: bool | None = None,
    autotune: bool | None = None,
) -> Plan:
    """Decide how ``batch`` matrices of size ``n`` will be solved (cached).

    Parameters
    ----------
    n, batch : matrix size and number of matrices (the flattened batch).
    dtype, device : of the matrices.
    vectors : whether eigenvectors are wanted.
    strategy : force a registered strategy (see ``spectra.core.STRATEGIES``).
    chunk_size : force at most this many matrices per solver call.
    max_memory : bytes the solver's working set may use (default: half the free memory).
    workers : CPU threads to split the batch across (default: all usable cores).
    verify : check ``V^H V = I`` after each chunk and recompute failures (default: on CUDA).
    autotune : time every registered strategy on a sample of this shape once and take the
        fastest (cached per n, batch size class, dtype and device). Default: on CUDA with
        torch < 2.12 for n > 32, where the right path depends on the machine.

    Examples
    --------
    >>> import torch
    >>> p = plan(64, 1024, torch.float64, "cpu", workers=2)
    >>> p.strategy, p.workers, p.n_chunks
    ('torch', 2, 1)
    """
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    budget = default_budget(device) if max_memory is None else int(max_memory)
    return _plan_cached(
        n,
        batch,
        dtype,
        device,
        vectors,
        strategy,
        chunk_size,
        budget,
        workers if workers is not None else cpu_count(),
        verify,
        autotune,
    )


def _size_class(batch: int) -> int:
    return 1 << max(0, batch - 1).bit_length()


@functools.lru_cache(maxsize=256)
def _autotune(
    n: int, batch_class: int, dtype: torch.dtype, device: torch.device, vectors: bool, workers: int
) -> tuple[str, tuple[tuple[str, float], ...]]:
    """Time each tunable strategy on a random sample; return the fastest and the timings."""

    from ._samples import random_hermitian

    sample = random_hermitian((min(batch_class, 256),), n, dtype, seed=0).to(device)
    timings = []
    for name, s in STRATEGIES.items():
        if not (device.type in s.tunable_on and s.supports(device)):
            continue
        try:
            s.solve(sample, vectors, workers)  # warm-up (kernels, workspaces, caches)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            s.solve(sample, vectors, workers)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            timings.append((name, time.perf_counter() - t0))
        except Exception:  # a strategy that fails here is simply not chosen
            continue
    best = min(timings, key=lambda t: t[1])[0] if timings else "torch"
    return best, tuple(timings)


@functools.lru_cache(maxsize=1024)
def _plan_cached(
    n, batch, dtype, device, vectors, strategy, chunk_size, budget, workers, verify, autotune
) -> Plan:
    reasons: list[str] = []
    if strategy is not None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; registered: {sorted(STRATEGIES)}")
        if not STRATEGIES[strategy].supports(device):
            raise ValueError(f"strategy {strategy!r} cannot run on {device}")
        name = strategy
        reasons.append(f"strategy={strategy!r} given")
    elif autotune or (
        autotune is None
        and device.type == "cuda"
        and not cuda_batched_everywhere()
        and n > LEGACY_CUDA_BATCHED_MAX_N
    ):
        name, timings = _autotune(n, _size_class(batch), dtype, device, vectors, workers)
        shown = ", ".join(f"{k} {1e3 * t:.2f} ms" for k, t in timings)
        reasons.append(f"autotuned on {min(_size_class(batch), 256)} sample matrices: {shown}")
    elif device.type == "cpu":
        name = "torch"
    else:
        name = "torch"
        if not cuda_batched_everywhere() and n > LEGACY_CUDA_BATCHED_MAX_N:
            if STRATEGIES["cupy-syevj"].supports(device):
                name = "cupy-syevj"
                reasons.append(
                    f"torch {torch.__version__} loops syevd for n > 32 on CUDA; "
                    "CuPy's batched syevj stays batched"
                )
            elif "jacobi" in STRATEGIES:
                name = "jacobi"
                reasons.append(
                    f"torch {torch.__version__} loops syevd for n > 32 on CUDA; "
                    "spectra's batched Jacobi stays batched"
                )
        else:
            reasons.append("one batched cuSOLVER call per chunk")
    itemsize = torch.empty((), dtype=dtype).element_size()
    per_matrix = max(1, int(STRATEGIES[name].memory_factor * n * n * itemsize) + 2 * n * itemsize)
    fits = max(1, budget // per_matrix)
    if chunk_size is not None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        size = chunk_size
        reasons.append(f"chunk_size={chunk_size} given")
    else:
        size = max(1, min(batch, fits))
        if batch > fits:
            reasons.append(f"batch cut into chunks of {size} to fit the {budget:,} B budget")
    do_verify = device.type == "cuda" if verify is None else bool(verify)
    if do_verify and verify is None:
        reasons.append("CUDA results are checked (cuSOLVER has shipped silent eigenvector bugs)")
    used_workers = 1
    if device.type == "cpu" and STRATEGIES[name].threadable:
        serial = min(size, batch) * cpu_solve_seconds(n, dtype)
        if (
            workers > 1
            and min(size, batch) >= _MIN_PARALLEL_BATCH
            and serial >= _MIN_PARALLEL_SECONDS
        ):
            used_workers = min(workers, size)
            reasons.append(
                f"{used_workers} workers: each chunk split across a persistent "
                "thread pool, 1 intra-op/BLAS thread each"
            )
        else:
            reasons.append(
                "one core, or too little work to share: a single call in the caller's thread"
            )
    single = device.type == "cpu" and (used_workers > 1 or n < THREADED_LAPACK_MIN_N)
    if device.type == "cpu" and used_workers == 1:
        reasons.append(
            "one kernel thread per solve"
            if single
            else f"n >= {THREADED_LAPACK_MIN_N}: threaded LAPACK inside the one call"
        )
    return Plan(
        n,
        batch,
        dtype,
        device,
        vectors,
        name,
        size,
        used_workers,
        do_verify,
        per_matrix,
        budget,
        tuple(reasons),
        single,
    )
