"""What a strategy is, and the registry of them.

A :class:`Strategy` is four things and three groups: its ``name``, the ``devices`` it runs
on, ``solve(a, vectors)`` on a flat ``(B, n, n)`` block, a ``description``; how and where
the planner may run it (:class:`Runs`), what a matrix costs (:class:`Cost`), and the
optional abilities the executor uses when present (:class:`Abilities`, each a typed
``Protocol``). The planner asks strategies, never compares their names: which problems
each solves on its own path (``Runs.serves``), where each was measured to beat the
default (``Runs.prefers``, a :class:`Claim`), its working set and its time per matrix.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import torch

from .._pipeline._cost import Claim, matrix_seconds
from .._solvers._torch_lapack import empty_result
from .._support._memory import LAPACK_MATRICES, matrix_bytes

Result = tuple[torch.Tensor, "torch.Tensor | None"]
#: ``solve(a, vectors)``: a ``(B, n, n)`` block in, ``(w ascending, v or None)`` out
SolveFn = Callable[[torch.Tensor, bool], Result]


class WritesInto(Protocol):
    """``into(a, w, v)``: solve ``a`` writing straight into the executor's outputs ``w``
    (``(B, n)``) and ``v`` (``(B, n, n)`` column-major, as LAPACK returns it, or ``None``)."""

    def __call__(self, a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, /) -> None: ...


class WritesWindow(Protocol):
    """``window(a, w, v, lo, hi)``: eigenpairs ``lo .. hi - 1`` only (0-based, ascending)
    of each matrix of ``a``, written into ``w`` (``(B, hi - lo)``) and ``v`` (``(B, n, hi -
    lo)`` column-major, or ``None``): a partial solve for ``k`` of ``n`` eigenpairs."""

    def __call__(
        self, a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, lo: int, hi: int, /
    ) -> None: ...


class WritesChecked(Protocol):
    """``fused(a, w, v, check) -> bool``: the input check (exact Hermitian and finite, with
    ``check``), the solve and the core's gauge of every matrix of ``a`` in one pass per
    matrix, written into the executor's outputs as :class:`WritesInto` writes them;
    ``False`` where it declines or is not sure (a matrix not exactly Hermitian or not
    finite, a failed or non-finite solve, a gauge it leaves): the executor then runs its own
    check, solve and gauge on the block, which decide and name what is wrong."""

    def __call__(
        self, a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, check: bool, /
    ) -> bool: ...


class ChecksBlock(Protocol):
    """``check(a, tol)``: the executor's input check in one fused pass: ``True`` every
    matrix finite and Hermitian within ``tol``; ``False`` maybe not (the caller's own check
    then decides and names what is wrong); ``None`` not applicable to this block."""

    def __call__(self, a: torch.Tensor, tol: float, /) -> bool | None: ...


@runtime_checkable
class FusableCheck(Protocol):
    """A per-block input check (``pre(block, offset)``) that a strategy's :class:`ChecksBlock`
    may stand in for: it says which symmetry tolerance it applies."""

    def __call__(self, block: torch.Tensor, offset: int, /) -> None: ...

    def tolerance(self, dtype: torch.dtype) -> float: ...


#: ``prefers(n, dtype, device, vectors)``: a :class:`Claim` where measured faster, else None
PrefersFn = Callable[[int, torch.dtype, torch.device, bool], "Claim | None"]
#: ``prefers_window(n, k, dtype, device, vectors)``: a :class:`Claim` to solve only ``k`` of
#: ``n`` eigenpairs (``Abilities.window``) where measured faster than the full solve
WindowPrefersFn = Callable[[int, int, torch.dtype, torch.device, bool], "Claim | None"]


def _always() -> bool:
    return True


def _everything(n: int, dtype: torch.dtype) -> bool:
    return True


def _never(n: int, dtype: torch.dtype, device: torch.device, vectors: bool) -> Claim | None:
    return None


def _never_window(
    n: int, k: int, dtype: torch.dtype, device: torch.device, vectors: bool
) -> Claim | None:
    return None


@dataclass(frozen=True)
class Runs:
    """How and where the planner may run a strategy.

    available : whether it can run at all here (e.g. its optional dependency is installed).
    tunable_on : device types the autotuner may time and pick it on.
    serves : ``serves(n, dtype)``: it solves such matrices on its own path; where not, it
        hands them to ``torch.linalg.eigh`` (e.g. the closed form above n = 3).
    prefers : ``prefers(n, dtype, device, vectors)``: a :class:`Claim` to be the default
        where it was measured faster than LAPACK, else ``None`` (the default: never).
    fan_out : it releases the GIL: the executor may split a CPU batch across threads.
    blas_pool : it runs on the BLAS thread pool (limited to one thread per worker).
    prefers_window : ``prefers_window(n, k, dtype, device, vectors)``: a :class:`Claim` to
        solve only the ``k`` wanted of ``n`` eigenpairs (its ``Abilities.window``) where
        measured faster than the full decomposition, else ``None`` (the default: never).
    threaded_from : ``threaded_from(dtype, vectors)``: the size from which a single-worker
        CPU call runs it on the caller's kernel threads (``None``, the default: the
        planner's ``THREADED_LAPACK_MIN_N``); below it every solve has one kernel thread.
    unit : the matrices it solves together (a lane kernel's block): the executor's CPU
        sub-blocks are a multiple of it (default 1).
    """

    available: Callable[[], bool] = _always
    tunable_on: tuple[str, ...] = ("cpu", "cuda")
    serves: Callable[[int, torch.dtype], bool] = _everything
    prefers: PrefersFn = _never
    fan_out: bool = False
    blas_pool: bool = False
    prefers_window: WindowPrefersFn = _never_window
    threaded_from: Callable[[torch.dtype, bool], int] | None = None
    unit: int = 1


@dataclass(frozen=True)
class Cost:
    """What one matrix costs a strategy.

    memory : peak working set per matrix, in ``n x n`` matrices of the input dtype (the
        named factors of ``_memory``: ``LAPACK_MATRICES``, ``LANE_MATRICES``, ...).
    seconds : ``seconds(n, dtype)``: one thread's time per matrix on the CPU, for the
        fan-out decision (default: LAPACK's model, ``_cost.matrix_seconds``).
    """

    memory: float = LAPACK_MATRICES
    seconds: Callable[[int, torch.dtype], float] | None = None


@dataclass(frozen=True)
class Abilities:
    """What the executor may use besides ``solve``, each optional.

    into : a :class:`WritesInto` (no copy-out of the results).
    check : a :class:`ChecksBlock` standing in for the executor's input check.
    gauged : eigenvectors come out already in the core's gauge (``fix_gauge_``): the
        executor skips its gauge pass unless verification may have recomputed some.
    window : a :class:`WritesWindow` (a partial solve: ``k`` of ``n`` eigenpairs), which
        the planner takes where ``Runs.prefers_window`` claims the problem.
    fused : a :class:`WritesChecked` (check, solve and gauge of each matrix in one pass,
        its data in cache throughout), tried first on a CPU full solve whose gauge is the
        core's, where ``into`` is offered too (it stands for ``into`` and the gauge, with
        their bits: a replacement that drops ``into`` to reach its ``solve`` drops it).
    """

    into: WritesInto | None = None
    check: ChecksBlock | None = None
    gauged: bool = False
    window: WritesWindow | None = None
    fused: WritesChecked | None = None


PLAIN = Abilities()


@dataclass(frozen=True)
class Strategy:
    """One way of solving a batch: what it is, how it runs, what it costs, what it offers.

    >>> s = Strategy("demo-s", ("cpu",), lambda a, vectors: (a, None), "demo")
    >>> s.runs.fan_out, s.cost.memory, s.abilities.into is None, s.serves(3, torch.float64)
    (False, 4.0, True, True)
    """

    name: str
    devices: tuple[str, ...]
    solve: SolveFn
    description: str
    runs: Runs = field(default_factory=Runs)
    cost: Cost = field(default_factory=Cost)
    abilities: Abilities = PLAIN

    def supports(self, device: torch.device) -> bool:
        """It runs on ``device`` here (its device type, and ``runs.available()``)."""
        return device.type in self.devices and self.runs.available()

    def serves(self, n: int, dtype: torch.dtype) -> bool:
        """It solves ``n x n`` matrices of ``dtype`` on its own path (``runs.serves``)."""
        return self.runs.serves(n, dtype)

    def bytes_per_matrix(self, n: int, dtype: torch.dtype) -> int:
        """Its working set per ``n x n`` matrix of ``dtype``, in bytes."""
        return matrix_bytes(n, torch.empty((), dtype=dtype).element_size(), self.cost.memory)

    def matrix_seconds(self, n: int, dtype: torch.dtype, device: torch.device) -> float:
        """One thread's time per matrix (``cost.seconds``, else LAPACK's cost model)."""
        each = self.cost.seconds
        return each(n, dtype) if each is not None else matrix_seconds(n, dtype, device)

    def input_check(self, pre: Callable[[torch.Tensor, int], None] | None) -> InputCheck | None:
        """The per-block input check the executor runs for ``pre``: a callable
        ``check(block, offset) -> bool`` (``True``: every entry known finite) that runs this
        strategy's fused :class:`ChecksBlock` where ``pre`` is a :class:`FusableCheck`, and
        ``pre`` itself where the fused check does not apply or is not sure."""
        if pre is None:
            return None
        fused = self.abilities.check
        # FusableCheck's one distinguishing member, looked up directly: a runtime
        # isinstance on a Protocol costs ~20 us, which a small batch's call would feel
        tolerance = getattr(pre, "tolerance", None)
        if fused is None or tolerance is None:
            return _Plain(pre)
        return _Fused(pre, tolerance, fused)


#: the flat keywords of the first releases' ``Strategy(...)``, still accepted: each goes
#: to its field of the groups (``runs``, ``cost``, ``abilities``)
LEGACY_KEYWORDS = {
    "available": ("runs", "available"),
    "tunable_on": ("runs", "tunable_on"),
    "serves": ("runs", "serves"),
    "threadable": ("runs", "fan_out"),
    "blas_pool": ("runs", "blas_pool"),
    "memory_factor": ("cost", "memory"),
    "matrix_seconds": ("cost", "seconds"),
    "solve_into": ("abilities", "into"),
    "check_block": ("abilities", "check"),
    "gauged": ("abilities", "gauged"),
}
_GROUP_DEFAULTS: dict[str, Callable[[], Any]] = {
    "runs": Runs,
    "cost": Cost,
    "abilities": lambda: PLAIN,
}
_grouped_init = Strategy.__init__


def _init_with_legacy_keywords(self: Strategy, *args: Any, **kwargs: Any) -> None:
    """``Strategy(name, devices, solve, description, tunable_on=(), threadable=True)``, as
    the first releases wrote it, builds the same record as the grouped keywords.

    >>> s = Strategy("old-style", ("cpu",), lambda a, v: (a, None), "x", threadable=True)
    >>> s.runs.fan_out, s.cost.memory
    (True, 4.0)
    """
    moved: dict[str, dict[str, Any]] = {}
    for key in [k for k in kwargs if k in LEGACY_KEYWORDS]:
        group, name = LEGACY_KEYWORDS[key]
        moved.setdefault(group, {})[name] = kwargs.pop(key)
    for group, values in moved.items():
        base = kwargs.get(group) or _GROUP_DEFAULTS[group]()
        kwargs[group] = replace(base, **values)
    _grouped_init(self, *args, **kwargs)


Strategy.__init__ = _init_with_legacy_keywords  # type: ignore[method-assign]


class InputCheck(Protocol):
    """What :meth:`Strategy.input_check` returns: ``check(block, offset) -> known finite``."""

    def __call__(self, block: torch.Tensor, offset: int, /) -> bool: ...


class _Plain:
    __slots__ = ("pre",)

    def __init__(self, pre: Callable[[torch.Tensor, int], None]) -> None:
        self.pre = pre

    def __call__(self, block: torch.Tensor, offset: int) -> bool:
        self.pre(block, offset)
        return False


class _Fused:
    __slots__ = ("fused", "pre", "tolerance")

    def __init__(
        self,
        pre: Callable[[torch.Tensor, int], None],
        tolerance: Callable[[torch.dtype], float],
        fused: ChecksBlock,
    ) -> None:
        self.pre, self.tolerance, self.fused = pre, tolerance, fused

    def __call__(self, block: torch.Tensor, offset: int) -> bool:
        if self.fused(block, self.tolerance(block.dtype)):
            return True
        self.pre(block, offset)  # the caller's check decides (and names what is wrong)
        return False


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
#: the strategy the planner takes where no other claims a problem (``_torch``)
DEFAULT_STRATEGY = "torch"


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
        from .._errors import InputError

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


#: context managers :func:`claims` enters around one planning's claims: the numba kernels'
#: call scope (``_kernels.one_planning``: every gated claim of one planning holds the same
#: numba-load threshold, a float64 ``n = 24`` has two: ``numba-ql``'s and ``twisted``'s)
PLANNING_SCOPES: list[Callable[[], AbstractContextManager[Any]]] = []


def claims(
    n: int, dtype: torch.dtype, device: torch.device, vectors: bool
) -> list[tuple[str, Claim]]:
    """Every registered strategy running on ``device`` that claims to be the default for
    ``n x n`` matrices of ``dtype`` (``Runs.prefers``), with its :class:`Claim`: the highest
    rank first, then in the registry's order.

    >>> [name for name, _ in claims(8, torch.float64, torch.device("cpu"), True)]
    ['numba-ql']
    """
    found = []
    with ExitStack() as scopes:
        for scope in PLANNING_SCOPES:
            scopes.enter_context(scope())
        for name, s in STRATEGIES.items():
            if s.supports(device):
                claim = s.runs.prefers(n, dtype, device, vectors)
                if claim is not None:
                    found.append((name, claim))
    return sorted(found, key=lambda c: -c[1].rank)


def window_claims(
    n: int, k: int, dtype: torch.dtype, device: torch.device, vectors: bool
) -> list[tuple[str, Claim]]:
    """Every registered strategy running on ``device`` with a partial solve
    (``Abilities.window``) that claims ``k`` of ``n`` eigenpairs of ``dtype``
    (``Runs.prefers_window``), the highest rank first.

    >>> [name for name, _ in window_claims(300, 9, torch.float64, torch.device("cpu"), True)]
    ['lapack-subset']
    >>> window_claims(300, 200, torch.float64, torch.device("cpu"), True)
    []
    """
    found = []
    for name, s in STRATEGIES.items():
        if s.abilities.window is not None and s.supports(device):
            claim = s.runs.prefers_window(n, k, dtype, device, vectors)
            if claim is not None:
                found.append((name, claim))
    return sorted(found, key=lambda c: -c[1].rank)


def preferred(
    n: int, dtype: torch.dtype, device: torch.device, vectors: bool, batch: int
) -> tuple[str, Claim] | None:
    """The first of :func:`claims` that holds for ``batch`` matrices (``min_batch``), or
    ``None`` where none does (the default, ``torch``, stays).

    >>> preferred(8, torch.float64, torch.device("cpu"), True, 1000)[0]
    'numba-ql'
    >>> preferred(8, torch.float64, torch.device("cpu"), True, 4) is None
    True
    """
    for name, claim in claims(n, dtype, device, vectors):
        if batch >= claim.min_batch:
            return name, claim
    return None


def solve_through(into: WritesInto) -> SolveFn:
    """A ``solve(a, vectors)`` built on ``into(a, w, v)`` (outputs from :func:`empty_result`)."""

    def solve(a: torch.Tensor, vectors: bool) -> Result:
        w, v = empty_result(a, vectors)
        into(a, w, v)
        return w, v

    return solve
