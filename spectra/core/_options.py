"""One options object for the execution and backward of a solve, validated on creation.

``spectra.eigh(a, options=Options(workers=2))`` and ``spectra.eigh(a, workers=2)`` are the
same call; a :class:`~spectra.core.Plan` handed back (``eigh(a, plan=p)``) becomes the
options that reproduce it (:meth:`Options.from_plan`).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from ._errors import InputError
from ._pipeline._autograd import BackwardOptions, check_policy

if TYPE_CHECKING:  # pragma: no cover
    from ._pipeline._plan import Plan

#: the keywords of the planner (:func:`spectra.core.plan`) that an :class:`Options` sets
PLANNING_FIELDS = ("strategy", "chunk_size", "max_memory", "workers", "verify", "autotune")


def as_int(value: Any, name: str) -> int:
    """``value`` as a Python int: ints, NumPy and torch integer scalars; never bools."""
    if isinstance(value, bool) or str(getattr(value, "dtype", "")).endswith("bool"):
        raise InputError(name, f"must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise InputError(name, f"must be an integer, got {value!r}") from None


def check_count(value: Any, name: str, minimum: int = 1, *, allow_none: bool = False) -> Any:
    """``value`` as an int ``>= minimum`` (Python, NumPy or torch integers; never bools nor
    floats), else :class:`InputError` naming ``name``; ``None`` passes with ``allow_none``.

    The one count check of the core and the domains (``workers``, ``chunk_size``, ``k``,
    ``walk_length``, ``n_components``, ...).

    >>> check_count(3, "k"), check_count(None, "workers", allow_none=True)
    (3, None)
    >>> check_count(0, "k")
    Traceback (most recent call last):
    ...
    spectra.core._errors.InputError: k must be an integer >= 1, got 0
    """
    if value is None and allow_none:
        return None
    word = "a non-negative integer" if minimum == 0 else f"an integer >= {minimum}"
    try:
        out = as_int(value, name)
    except InputError:  # the same words for a float, a bool or a string as for 0
        raise InputError(name, f"must be {word}, got {value!r}") from None
    if out < minimum:
        raise InputError(name, f"must be {word}, got {value!r}")
    return out


def check_positive(value: Any, name: str) -> int | None:
    """``None`` or a byte count > 0 (``max_memory``)."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(name, f"must be a number of bytes > 0, got {value!r}") from None
    if not (math.isfinite(number) and number > 0):
        raise InputError(name, f"must be a finite number of bytes > 0, got {value!r}")
    return int(number) if number >= 1 else 1


def check_tolerance(value: Any, name: str) -> float | None:
    """``None`` or a finite number >= 0 (tolerances, ``lindep``, ``broadening``)."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(name, f"must be a finite number >= 0, got {value!r}") from None
    if not (math.isfinite(number) and number >= 0):
        raise InputError(name, f"must be a finite number >= 0, got {value!r}")
    return number


@dataclass(frozen=True)
class Options:
    """How a solve runs (see :func:`spectra.core.plan`) and how its backward behaves.

    Parameters
    ----------
    strategy : force a registered strategy (``spectra.core.STRATEGIES``).
    chunk_size : at most this many matrices per solver call (integer >= 1).
    max_memory : bytes the solver's working set may use (> 0; default half the free memory).
    workers : CPU threads to split a batch across (integer >= 1; default all usable cores).
    verify : check ``V^H V = I`` after each chunk and recompute failures (default: CUDA).
    autotune : time the registered strategies on a sample once and take the fastest.
    degenerate_tol : relative gap under which the backward treats eigenvalues as degenerate.
    broadening : Lorentzian broadening of the eigenvector backward (finite, >= 0).
    degenerate : what the backward does with a gradient it cannot resolve at an exact
        degeneracy: ``"warn"``, ``"nan"`` or ``"ignore"``.

    Examples
    --------
    >>> Options(workers=2).workers
    2
    >>> Options(workers=0)
    Traceback (most recent call last):
    ...
    spectra.core._errors.InputError: workers must be an integer >= 1, got 0
    """

    strategy: str | None = None
    chunk_size: int | None = None
    max_memory: int | None = None
    workers: int | None = None
    verify: bool | None = None
    autotune: bool | None = None
    degenerate_tol: float | None = None
    broadening: float = 0.0
    degenerate: str = "warn"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "chunk_size", check_count(self.chunk_size, "chunk_size", allow_none=True))
        set_(self, "workers", check_count(self.workers, "workers", allow_none=True))
        set_(self, "max_memory", check_positive(self.max_memory, "max_memory"))
        set_(self, "degenerate_tol", check_tolerance(self.degenerate_tol, "degenerate_tol"))
        set_(self, "broadening", check_tolerance(self.broadening, "broadening"))
        if self.strategy is not None and not isinstance(self.strategy, str):
            raise InputError("strategy", f"must be a strategy name, got {self.strategy!r}")
        check_policy(self.degenerate)
        # the planner's keywords' values, once (not a field: equality and hash ignore it)
        set_(self, "_planning_key", tuple(getattr(self, name) for name in PLANNING_FIELDS))

    @property
    def planning_key(self) -> tuple[Any, ...]:
        """The values of :meth:`planning`, in ``PLANNING_FIELDS`` order (a cache key).

        >>> Options(workers=2).planning_key
        (None, None, None, 2, None, None)
        """
        key: tuple[Any, ...] = self.__dict__["_planning_key"]
        return key

    def planning(self) -> dict[str, Any]:
        """The planner's keywords these options set (``plan(n, batch, ..., **o.planning())``).

        >>> Options(workers=2).planning()["workers"]
        2
        """
        return dict(zip(PLANNING_FIELDS, self.planning_key, strict=True))

    def backward(self, budget: int | None = None) -> BackwardOptions:
        """The backward's options object (the degenerate policy and tolerance, ``budget``).

        >>> Options(degenerate="nan").backward().degenerate
        'nan'
        """
        return BackwardOptions(self.degenerate_tol, self.broadening, self.degenerate, budget)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names (the keywords ``spectra.eigh`` accepts besides its own)."""
        return _NAMES if cls is Options else tuple(f.name for f in fields(cls))

    @classmethod
    def build(cls, options: Options | None = None, **kwargs: Any) -> Options:
        """``options`` (or the defaults) updated by ``kwargs``; unknown names are a TypeError."""
        unknown = sorted(set(kwargs) - set(cls.names()))
        if unknown:
            raise TypeError(
                f"unknown option(s) {unknown}; execution options are {sorted(cls.names())}"
            )
        if options is not None and not isinstance(options, Options):
            raise TypeError(f"options must be a spectra Options, got {type(options).__name__}")
        return replace(options, **kwargs) if options is not None else cls(**kwargs)

    @classmethod
    def from_plan(cls, p: Plan, base: Options | None = None) -> Options:
        """The options that make the planner reproduce ``p`` (its strategy, chunks, workers,
        budget and verification), keeping ``base``'s backward options."""
        return replace(
            base or cls(),
            strategy=p.strategy,
            chunk_size=p.chunk_size,
            max_memory=p.memory_budget,
            workers=p.workers,
            verify=p.verify,
            autotune=False,
        )


#: :meth:`Options.names` (read on every call with options)
_NAMES = tuple(f.name for f in fields(Options))


#: at most this many distinct option sets are remembered by :func:`build_cached`
BUILT_MAX = 64
_BUILT: dict[tuple[Any, ...], Options] = {}


def build_cached(options: Options | None, kwargs: dict[str, Any]) -> Options:
    """:meth:`Options.build`, remembered for hashable keyword values: a loop that repeats
    its options (``workers=1`` on every call) validates them once. A value's type is part
    of the key (``workers=True`` is not ``workers=1``: it is refused, every time); errors
    are never remembered.

    >>> build_cached(None, {"workers": 1}) is build_cached(None, {"workers": 1})
    True
    """
    try:
        key = (options, tuple((name, type(value), value) for name, value in kwargs.items()))
        hash(key)
    except TypeError:  # an unhashable value: built every time
        return Options.build(options, **kwargs)
    got = _BUILT.get(key)
    if got is None:
        got = Options.build(options, **kwargs)
        if len(_BUILT) >= BUILT_MAX:
            _BUILT.clear()
        _BUILT[key] = got
    return got
