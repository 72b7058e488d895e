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
from typing import TYPE_CHECKING, Any, NamedTuple, overload

import torch

from .._options import check_count, check_positive
from .._solvers._native import CLOSED_FORM_MAX_N, native_module
from .._solvers._torch_lapack import THREADED_LAPACK_MIN_N
from .._strategies import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    Strategy,
    claims,
    preferred,
    registry_version,
    window_claims,
)
from .._support._memory import default_budget, format_bytes, rows_within
from .._support._threads import cpu_count
from .._support._versions import LEGACY_CUDA_BATCHED_MAX_N, cuda_batched_everywhere
from ._autotune import MAX_SAMPLE, autotune, size_class
from ._cost import DECLINED, matrix_seconds

if TYPE_CHECKING:
    from .._sparse import SparsePlan

__all__ = ["Ask", "Plan", "choose_strategy", "direct_path", "format_bytes", "plan"]

_MIN_PARALLEL_BATCH = 2
#: Fanning out costs a thread hand-off (tens of microseconds, milliseconds under load) and
#: on the 2-core CI VM a second core that only runs at full speed after a few milliseconds:
#: there, 1,024 8 x 8 matrices (3 ms serial) took 1.3x longer split in two, 2,048 (5 ms)
#: broke even and 16,384 (48 ms) ran 1.7x faster (2026-11-30, interleaved, quiet machine).
#: Batches whose serial solve is estimated below this stay in the caller's thread.
_MIN_PARALLEL_SECONDS = 4e-3


def direct_path(n: int, batch: int, dtype: torch.dtype, vectors: bool) -> bool:
    """Whether a default CPU call on ``batch`` matrices of size ``n`` is planned as one
    LAPACK call in the caller's thread, which the direct path (``_direct``) then runs
    without the pipeline, on the plan's kernel threads (one, or the caller's from
    ``_torch_lapack.threaded_from``): no kernel (fewer than ``KERNEL_MIN_BATCH`` matrices,
    or a size LAPACK wins), too little work to fan out, one chunk (a few small matrices
    always fit the budget's 64 MiB floor), ``n`` below ``THREADED_LAPACK_MIN_N``. A strategy
    claiming the problem (``Runs.prefers``) from this batch on takes it off the direct path.
    The planner reports it (``Plan.direct``).

    >>> direct_path(8, 1, torch.float64, True), direct_path(8, 4096, torch.float64, True)
    (True, False)
    """
    if n >= THREADED_LAPACK_MIN_N or batch > DIRECT_MAX_BATCH or batch < 1:
        return False
    cpu = torch.device("cpu")
    claimed = preferred(n, dtype, cpu, vectors, batch)
    if claimed is not None:
        return compiled_closed_form(claimed[0], n)
    return batch < _MIN_PARALLEL_BATCH or batch * matrix_seconds(n, dtype, cpu) < (
        _MIN_PARALLEL_SECONDS
    )


def compiled_closed_form(strategy: str, n: int) -> bool:
    """Whether ``strategy`` on ``n x n`` CPU matrices (real or complex) is the compiled
    helper's closed form (``n <= 3``), which the direct path runs in one call, as it runs
    LAPACK."""
    return strategy == "closed-form" and n <= CLOSED_FORM_MAX_N and native_module() is not None


#: at most this many matrices take the direct path (``direct_path``): with the compiled
#: helper a block of them costs one call whatever its size (16 x 8x8: ~2x torch's time
#: through the pipeline's layers, measured); up to the batches from which the lane kernels
#: claim small matrices (``lane_min_batch``: 256 for eigenvalues only), where the work
#: is too little to fan out
DIRECT_MAX_BATCH = 256


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
    #: one LAPACK call in the caller's thread that the call runs without the pipeline
    #: (``direct_path``; a call with options too where they plan it as the default one):
    #: same result, none of the fixed cost
    direct: bool = False
    #: ``(lo, hi)``: only eigenpairs ``lo .. hi - 1`` of each matrix are computed (the
    #: strategy's partial solve, for ``k`` of ``n``); ``None``: all of them
    window: tuple[int, int] | None = None

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
            *(
                [f"  window       eigenpairs {self.window[0]}..{self.window[1] - 1} only"]
                if self.window is not None
                else []
            ),
            f"  workers      {self.workers}"
            + (" (batch split across threads, one kernel thread each)" if self.workers > 1 else ""),
            f"  chunks       {self.n_chunks} of up to {self.chunk_size} matrices "
            f"({format_bytes(self.bytes_per_matrix)} each, "
            f"budget {format_bytes(self.memory_budget)})",
            f"  verify       {'V^H V = I checked, failures recomputed' if self.verify else 'off'}",
        ]
        lines += [f"  why          {r}" for r in self.reasons]
        return "\n".join(lines)


@overload
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
    k: int | None = None,
    largest: bool = False,
) -> Plan: ...


@overload
def plan(
    n: Any,
    *,
    k: int,
    max_memory: int | None = None,
    method: str = "auto",
    precondition: Any = "auto",
    device: torch.device | str | None = None,
) -> SparsePlan: ...


def plan(
    n: Any,
    batch: int | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = "cpu",
    *,
    vectors: bool = True,
    strategy: str | None = None,
    chunk_size: int | None = None,
    max_memory: int | None = None,
    workers: int | None = None,
    verify: bool | None = None,
    autotune: bool | None = None,
    k: int | None = None,
    largest: bool = False,
    **sparse: Any,
) -> Plan | SparsePlan:
    """Decide how ``batch`` matrices of size ``n`` will be solved (cached); or, for sparse
    input ``n`` (a torch/SciPy sparse matrix, a linear operator, a ``BlockDiagonal`` or a
    list of them) and ``k``, how ``spectra.eigh(n, k=k)`` will solve it: dense or iterative
    per matrix and the preconditioner, by size, ``k``, the estimated fill and
    ``max_memory`` (:func:`spectra.core.plan_sparse`, which takes ``method`` and
    ``precondition`` too).

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
    k, largest : only the ``k`` smallest (largest) eigenpairs are wanted: a strategy with a
        partial solve (``lapack-subset``) takes them where its cost model says it beats the
        full decomposition (``Plan.window``); otherwise the full one is sliced.

    Examples
    --------
    >>> import torch
    >>> p = plan(64, 1024, torch.float32, "cpu", workers=2)
    >>> p.workers, p.n_chunks
    (2, 1)
    >>> p.strategy in ("torch", "twisted")  # MKL, or the tridiagonal lanes off Intel CPUs
    True
    """
    if not isinstance(n, int):
        # sparse input is planned by _sparse, whose Rayleigh-Ritz solves plan through
        # _solve -> _plan: moving this dispatch up to the public entry would remove it
        from .._sparse import is_sparse_input, plan_sparse  # circle: deliberate (above)

        if is_sparse_input(n):
            if k is None:
                raise TypeError("plan of sparse input needs k= (the k extreme eigenpairs)")
            where = device if device != "cpu" else None
            return plan_sparse(n, k, max_memory=max_memory, device=where, **sparse)
    if sparse:
        raise TypeError(f"plan() got unexpected keyword arguments {sorted(sparse)}")
    if batch is None or dtype is None:
        raise TypeError("plan(n, batch, dtype) needs batch and dtype for a dense batch")
    device = torch.device(device or "cpu")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    chunks = check_count(chunk_size, "chunk_size", allow_none=True)
    workers = check_count(workers, "workers", allow_none=True)
    max_memory = check_positive(max_memory, "max_memory")
    budget = default_budget(device) if max_memory is None else int(max_memory)
    cores = workers if workers is not None else cpu_count()
    given = max_memory is not None
    if k is not None:
        k = check_count(k, "k")
        if k > n:
            raise ValueError(f"k={k} exceeds the matrix size n={n}")
        k = None if k == n else k
    ask = Ask(
        n, batch, dtype, device, vectors, strategy, chunks, budget, cores, verify, autotune, given
    )
    if k is not None:
        ask = ask._replace(k=k, largest=bool(largest))
    return _plan_cached(ask, registry_version())


class Ask(NamedTuple):
    """What the planner is asked, validated: the cache key of a plan (with the registry's
    version). ``budget`` is in bytes; ``budget_given``: ``max_memory`` was passed."""

    n: int
    batch: int
    dtype: torch.dtype
    device: torch.device
    vectors: bool = True
    strategy: str | None = None
    chunk_size: int | None = None
    budget: int = 1 << 30
    workers: int = 1
    verify: bool | None = None
    autotune: bool | None = None
    budget_given: bool = False
    k: int | None = None  # only k eigenpairs wanted (a partial solve may take them)
    largest: bool = False


def choose_strategy(ask: Ask) -> tuple[str, list[str]]:
    """The strategy for a batch the caller did not force one for, and why.

    The one place the default choice is made: autotune where asked (or on legacy CUDA for
    n > 32); else the registered strategy that claims the problem (``Runs.prefers``: the
    kernels where measured faster on the CPU, a batched path on legacy CUDA), from the batch
    size it claims it for; else the default, batched ``torch``.

    >>> choose_strategy(Ask(8, 1000, torch.float64, torch.device("cpu")))[0]
    'numba-ql'
    """
    n, batch, device = ask.n, ask.batch, ask.device
    if ask.k is not None and not ask.autotune and not ask.verify:
        for name, why in window_claims(n, ask.k, ask.dtype, device, ask.vectors):
            if batch >= why.min_batch:
                return name, [why.reason]
    legacy = device.type == "cuda" and not cuda_batched_everywhere()
    legacy = legacy and n > LEGACY_CUDA_BATCHED_MAX_N
    if ask.autotune or (ask.autotune is None and legacy):
        sample = min(size_class(batch), MAX_SAMPLE)
        name, timings = autotune(_candidates(ask._replace(batch=sample)), registry_version())
        shown = ", ".join(f"{k} {1e3 * t:.2f} ms" for k, t in timings)
        return name, [f"autotuned on {sample} sample matrices: {shown}"]
    found = claims(n, ask.dtype, device, ask.vectors)  # measured: where a strategy wins
    for name, why in found:
        if batch >= why.min_batch:
            return name, [why.reason]
    if found:
        least = min(why.min_batch for _, why in found)
        if least >= DECLINED:  # every claim declined for now: their reasons say why
            return DEFAULT_STRATEGY, [why.reason for _, why in found]
        return DEFAULT_STRATEGY, [
            f"{batch} < {least} matrices: LAPACK (a kernel pays from "
            f"{least}, and never makes a small call wait for numba)"
        ]
    if device.type == "cuda" and not legacy:
        return DEFAULT_STRATEGY, ["one batched cuSOLVER call per chunk"]
    return DEFAULT_STRATEGY, []


def _candidates(ask: Ask) -> tuple[Plan, ...]:
    """The plans the autotuner times: every tunable strategy that runs on the device,
    planned for the sample (``ask.batch``) exactly as the call would be, only the strategy
    forced."""
    device = ask.device
    return tuple(
        _plan_cached(
            ask._replace(strategy=name, chunk_size=None, autotune=False, budget_given=True),
            registry_version(),
        )
        for name, s in STRATEGIES.items()
        if device.type in s.runs.tunable_on and s.supports(device)
    )


def _forced(ask: Ask) -> tuple[str, list[str]]:
    name = ask.strategy
    assert name is not None
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; registered: {sorted(STRATEGIES)}")
    if not STRATEGIES[name].supports(ask.device):
        raise ValueError(f"strategy {name!r} cannot run on {ask.device}")
    return name, [f"strategy={name!r} given"]


def _chunk_size(ask: Ask, per_matrix: int, reasons: list[str]) -> int:
    """Matrices per chunk: ``chunk_size`` when given, else as many as fit the budget."""
    n, batch, budget = ask.n, ask.batch, ask.budget
    if ask.budget_given and per_matrix > budget and batch > 0:
        warnings.warn(
            f"max_memory={budget:,} B is below the working set of one {n}x{n} matrix "
            f"(~{per_matrix:,} B): solving one matrix at a time, above the budget",
            ResourceWarning,
            stacklevel=5,
        )
    if ask.chunk_size is not None:
        reasons.append(f"chunk_size={ask.chunk_size} given")
        return ask.chunk_size
    size = rows_within(budget, per_matrix, batch)
    if batch > size:
        reasons.append(f"batch cut into chunks of {size} to fit the {budget:,} B budget")
    return size


def _threads(ask: Ask, chosen: Strategy, size: int, reasons: list[str]) -> tuple[int, bool]:
    """``(workers, one kernel thread per solve)`` of a plan."""
    n, device = ask.n, ask.device
    if device.type != "cpu":
        return 1, False
    workers = 1
    if chosen.runs.fan_out:
        part = min(size, ask.batch)
        serial = part * chosen.matrix_seconds(n, ask.dtype, device)
        if ask.workers > 1 and part >= _MIN_PARALLEL_BATCH and serial >= _MIN_PARALLEL_SECONDS:
            workers = min(ask.workers, size)
            reasons.append(
                f"{workers} workers: each chunk split across a persistent "
                "thread pool, 1 intra-op/BLAS thread each"
            )
        else:
            reasons.append(
                "one core, or too little work to share: a single call in the caller's thread"
            )
    fn = chosen.runs.threaded_from
    threaded = THREADED_LAPACK_MIN_N if fn is None else fn(ask.dtype, ask.vectors)
    single = workers > 1 or n < threaded
    if workers == 1:
        reasons.append(
            "one kernel thread per solve"
            if single
            else f"n >= {threaded}: threaded LAPACK inside the one call"
        )
    return workers, single


@functools.lru_cache(maxsize=1024)
def _plan_cached(ask: Ask, version: int = 0) -> Plan:
    """The plan for ``ask`` (``version``: the registry's, a cache key: replaced strategies
    are replanned)."""
    name, reasons = _forced(ask) if ask.strategy is not None else choose_strategy(ask)
    chosen = STRATEGIES[name]
    window = None
    if ask.k is not None and chosen.abilities.window is not None and not ask.verify:
        window = (ask.n - ask.k, ask.n) if ask.largest else (0, ask.k)
    per_matrix = chosen.bytes_per_matrix(ask.n, ask.dtype)
    size = _chunk_size(ask, per_matrix, reasons)
    verify = ask.device.type == "cuda" if ask.verify is None else bool(ask.verify)
    if verify and ask.verify is None:
        reasons.append("CUDA results are checked (cuSOLVER has shipped silent eigenvector bugs)")
    workers, single = _threads(ask, chosen, size, reasons)
    direct = (
        ask.device.type == "cpu"
        and (name == DEFAULT_STRATEGY or compiled_closed_form(name, ask.n))
        and workers == 1
        and size >= ask.batch
        and direct_path(ask.n, ask.batch, ask.dtype, ask.vectors)
    )
    if direct:
        solver = "LAPACK call" if name == DEFAULT_STRATEGY else "compiled closed form"
        reasons.append(
            f"direct path: the call runs this one {solver} without the pipeline "
            "(check, solve and gauge in one compiled call where built)"
        )
    return Plan(
        ask.n,
        ask.batch,
        ask.dtype,
        ask.device,
        ask.vectors,
        name,
        size,
        workers,
        verify,
        per_matrix,
        ask.budget,
        tuple(reasons),
        single,
        direct,
        window,
    )
