"""Plan, then execute: the cheap, cached decision of how a batch will be solved.

``plan(n, batch, dtype, device)`` looks at the sizes, dtype, device, memory and cores and
returns an inspectable :class:`Plan` (strategy, chunking, workers, verification);
``execute`` follows it. The same decision is made for the same inputs, so a call can be
explained before it runs (``spectra explain``), and a plan can be handed back to
``spectra.eigh(a, plan=p)``.

The strategy is chosen in one place, :func:`choose_strategy`; memory probing lives in
``_memory``, timing candidates in ``_autotune``, the cost model in ``_cost``.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import torch

from ._autotune import MAX_SAMPLE, autotune, size_class
from ._cost import matrix_seconds
from ._memory import default_budget, format_bytes, rows_within
from ._options import check_count, check_positive
from ._strategies import STRATEGIES, preferred, registry_version
from ._threads import cpu_count
from ._versions import LEGACY_CUDA_BATCHED_MAX_N, cuda_batched_everywhere

__all__ = ["Plan", "choose_strategy", "direct_path", "format_bytes", "plan"]

#: Below this size one CPU matrix gains nothing from threaded LAPACK; running every CPU
#: solve with one kernel thread also keeps results bitwise independent of how the batch
#: is split. Larger matrices in a single-worker plan use the caller's thread settings.
THREADED_LAPACK_MIN_N = 256
_MIN_PARALLEL_BATCH = 2
#: Fanning out costs a thread hand-off (tens of microseconds, milliseconds under load) and
#: on the 2-core CI VM a second core that only runs at full speed after a few milliseconds:
#: there, 1,024 8 x 8 matrices (3 ms serial) took 1.3x longer split in two, 2,048 (5 ms)
#: broke even and 16,384 (48 ms) ran 1.7x faster (2026-11-30, interleaved, quiet machine).
#: Batches whose serial solve is estimated below this stay in the caller's thread.
_MIN_PARALLEL_SECONDS = 4e-3


def direct_path(n: int, batch: int, dtype: torch.dtype, vectors: bool) -> bool:
    """Whether a default CPU call on ``batch`` matrices of size ``n`` is planned as one
    LAPACK call in the caller's thread on one kernel thread, which the direct path
    (``_direct``) then runs without the pipeline: no kernel (fewer than
    ``KERNEL_MIN_BATCH`` matrices, or a size LAPACK wins), too little work to fan out, one
    chunk (a few small matrices always fit the budget's 64 MiB floor), ``n`` below the
    threaded-LAPACK size. A strategy claiming the problem (``Runs.prefers``) from this
    batch on takes it off the direct path. The planner reports it (``Plan.direct``).

    >>> direct_path(8, 1, torch.float64, True), direct_path(8, 4096, torch.float64, True)
    (True, False)
    """
    if n >= THREADED_LAPACK_MIN_N or batch > DIRECT_MAX_BATCH or batch < 1:
        return False
    cpu = torch.device("cpu")
    claim = preferred(n, dtype, cpu, vectors)
    if claim is not None and batch >= claim[1].min_batch:
        return False
    return batch < _MIN_PARALLEL_BATCH or batch * matrix_seconds(n, dtype, cpu) < (
        _MIN_PARALLEL_SECONDS
    )


#: at most this many matrices take the direct path (``direct_path``)
DIRECT_MAX_BATCH = 8


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
    #: one LAPACK call in the caller's thread that a default call runs without the
    #: pipeline (``direct_path``): same result, none of the fixed cost
    direct: bool = False

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
            f"({format_bytes(self.bytes_per_matrix)} each, "
            f"budget {format_bytes(self.memory_budget)})",
            f"  verify       {'V^H V = I checked, failures recomputed' if self.verify else 'off'}",
        ]
        lines += [f"  why          {r}" for r in self.reasons]
        return "\n".join(lines)


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
    chunk_size : force at most this many matrices per solver call (an integer >= 1).
    max_memory : bytes the solver's working set may use (default: half the free memory).
    workers : CPU threads to split the batch across (default: all usable cores).
    verify : check ``V^H V = I`` after each chunk and recompute failures (default: on CUDA).
    autotune : time every registered strategy on a sample of this shape once, exactly as
        ``execute`` runs it, and take the fastest (cached per n, batch size class, dtype and
        device). Default: on CUDA with torch < 2.12 for n > 32, where the right path
        depends on the machine.

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
    chunk_size = check_count(chunk_size, "chunk_size")
    workers = check_count(workers, "workers")
    max_memory = check_positive(max_memory, "max_memory")
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
        max_memory is not None,
        registry_version(),
    )


def choose_strategy(
    n: int,
    batch: int,
    dtype: torch.dtype,
    device: torch.device,
    vectors: bool,
    workers: int,
    budget: int,
    verify: bool | None,
    autotune_: bool | None,
) -> tuple[str, list[str]]:
    """The strategy for a batch the caller did not force one for, and why.

    The one place the default choice is made: autotune where asked (or on legacy CUDA for
    n > 32); else the registered strategy that claims the problem (``Runs.prefers``: the
    kernels where measured faster on the CPU, a batched path on legacy CUDA), from the batch
    size it claims it for; else batched ``torch``.
    """
    legacy_cuda = device.type == "cuda" and not cuda_batched_everywhere()
    if autotune_ or (autotune_ is None and legacy_cuda and n > LEGACY_CUDA_BATCHED_MAX_N):
        sample = min(size_class(batch), MAX_SAMPLE)
        name, timings = autotune(
            _candidates(n, sample, dtype, device, vectors, workers, budget, verify),
            registry_version(),
        )
        shown = ", ".join(f"{k} {1e3 * t:.2f} ms" for k, t in timings)
        return name, [f"autotuned on {sample} sample matrices: {shown}"]
    claim = preferred(n, dtype, device, vectors)  # measured: where a strategy wins
    if claim is not None:
        name, why = claim
        if batch >= why.min_batch:
            return name, [why.reason]
        return "torch", [
            f"{batch} < {why.min_batch} matrices: LAPACK (a kernel pays from "
            f"{why.min_batch}, and never makes a small call wait for numba)"
        ]
    if device.type == "cuda" and not (legacy_cuda and n > LEGACY_CUDA_BATCHED_MAX_N):
        return "torch", ["one batched cuSOLVER call per chunk"]
    return "torch", []


def _candidates(
    n: int,
    sample: int,
    dtype: torch.dtype,
    device: torch.device,
    vectors: bool,
    workers: int,
    budget: int,
    verify: bool | None,
) -> tuple[Plan, ...]:
    """The plans the autotuner times: every tunable strategy that runs on ``device``,
    planned for the sample exactly as the call would be (only the strategy forced)."""
    out = []
    for name, s in STRATEGIES.items():
        if device.type in s.runs.tunable_on and s.supports(device):
            out.append(
                plan(
                    n,
                    sample,
                    dtype,
                    device,
                    vectors=vectors,
                    strategy=name,
                    max_memory=budget,
                    workers=workers,
                    verify=verify,
                    autotune=False,
                )
            )
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def _plan_cached(
    n: int,
    batch: int,
    dtype: torch.dtype,
    device: torch.device,
    vectors: bool,
    strategy: str | None,
    chunk_size: int | None,
    budget: int,
    workers: int,
    verify: bool | None,
    autotune_: bool | None,
    budget_given: bool = False,
    version: int = 0,  # the registry's (a cache key: replaced strategies are replanned)
) -> Plan:
    reasons: list[str] = []
    if strategy is not None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; registered: {sorted(STRATEGIES)}")
        if not STRATEGIES[strategy].supports(device):
            raise ValueError(f"strategy {strategy!r} cannot run on {device}")
        name = strategy
        reasons.append(f"strategy={strategy!r} given")
    else:
        name, why = choose_strategy(
            n, batch, dtype, device, vectors, workers, budget, verify, autotune_
        )
        reasons += why
    chosen = STRATEGIES[name]
    per_matrix = chosen.bytes_per_matrix(n, dtype)
    fits = rows_within(budget, per_matrix, batch)
    if budget_given and per_matrix > budget and batch > 0:
        warnings.warn(
            f"max_memory={budget:,} B is below the working set of one {n}x{n} matrix "
            f"(~{per_matrix:,} B): solving one matrix at a time, above the budget",
            ResourceWarning,
            stacklevel=4,
        )
    if chunk_size is not None:
        size = chunk_size
        reasons.append(f"chunk_size={chunk_size} given")
    else:
        size = fits
        if batch > fits:
            reasons.append(f"batch cut into chunks of {size} to fit the {budget:,} B budget")
    do_verify = device.type == "cuda" if verify is None else bool(verify)
    if do_verify and verify is None:
        reasons.append("CUDA results are checked (cuSOLVER has shipped silent eigenvector bugs)")
    used_workers = 1
    if device.type == "cpu" and chosen.runs.fan_out:
        serial = min(size, batch) * chosen.matrix_seconds(n, dtype, device)
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
    direct = (
        device.type == "cpu"
        and name == "torch"
        and used_workers == 1
        and size >= batch
        and direct_path(n, batch, dtype, vectors)
    )
    if direct:
        reasons.append(
            "direct path: a default call runs this one LAPACK call without the pipeline "
            "(quick check, solve, NumPy gauge)"
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
        direct,
    )
