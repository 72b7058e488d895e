"""Errors raised by the core, carrying the batch indices of the offending matrices.

Errors are data, not strings: :class:`InputError` and :class:`LinAlgError` carry
``indices`` (batch index tuples) and ``what`` (the argument's name), and their message is
formatted in one place (:func:`format_indices`). A caller that re-indexes a batch (Dask
blocks, ragged size groups) rebuilds the error with :meth:`InputError.reindexed` instead of
rewriting the message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Index = tuple[int, ...]


def format_indices(indices: Sequence[Index], limit: int = 10) -> str:
    """Render batch indices as ``[(0, 2), (1, 0), ...]`` with a count past ``limit``.

    >>> format_indices([(3,), (5,)])
    '[3, 5]'
    >>> format_indices([(0, 1)])
    '[(0, 1)]'
    """
    shown = ", ".join(str(i[0]) if len(i) == 1 else str(i) for i in indices[:limit])
    more = f", ... ({len(indices)} in all)" if len(indices) > limit else ""
    return f"[{shown}{more}]"


class _IndexedError:
    """Mixin: ``what`` failed ``problem`` at batch ``indices``; the message is derived."""

    what: str
    problem: str
    indices: list[Index]
    hint: str

    def _init(self, what: str, problem: str, indices: Sequence[Index] | None, hint: str) -> str:
        self.what, self.problem, self.hint = what, problem, hint
        self.indices = [tuple(int(j) for j in i) for i in (indices or [])]
        return self.render()

    def render(self) -> str:
        where = ""
        if self.indices and self.indices != [()]:
            where = f" at batch indices {format_indices(self.indices)}"
        msg = f"{self.what} {self.problem}{where}" if self.what else f"{self.problem}{where}"
        return f"{msg} ({self.hint})" if self.hint else msg

    def reindexed(self, fn: Callable[[Index], Index], what: str | None = None):  # type: ignore[no-untyped-def]
        """The same error with every index mapped by ``fn`` (and optionally renamed)."""
        return type(self)(  # type: ignore[call-arg]
            what if what is not None else self.what,
            self.problem,
            [fn(i) for i in self.indices],
            hint=self.hint,
        )


class InputError(_IndexedError, ValueError):
    """Bad input: ``what`` (e.g. ``"a"``, ``"b[3]"``) ``problem`` at batch ``indices``.

    >>> err = InputError("a", "contains NaN or Inf", [(2,)])
    >>> str(err), err.indices, err.what
    ('a contains NaN or Inf at batch indices [2]', [(2,)], 'a')
    """

    def __init__(
        self, what: str, problem: str, indices: Sequence[Index] | None = None, hint: str = ""
    ):
        ValueError.__init__(self, self._init(what, problem, indices, hint))


class LinAlgError(_IndexedError, np.linalg.LinAlgError):
    """A batch member could not be decomposed (e.g. ``b`` not positive definite).

    A subclass of ``numpy.linalg.LinAlgError`` (itself a ``ValueError``); ``indices``
    lists the offending batch indices as tuples, ``what`` names the argument.

    >>> str(LinAlgError("b", "is not positive definite", [(1,)]))
    'b is not positive definite at batch indices [1]'
    """

    def __init__(
        self, what: str, problem: str = "", indices: Sequence[Index] | None = None, hint: str = ""
    ):
        if not problem:  # LinAlgError(message) as a plain exception
            problem, what = what, ""
        np.linalg.LinAlgError.__init__(self, self._init(what, problem, indices, hint))
