"""Errors raised by the core, carrying the batch indices of the offending matrices."""

from __future__ import annotations

import numpy as np


class LinAlgError(np.linalg.LinAlgError):
    """A batch member could not be decomposed (e.g. ``b`` not positive definite).

    A subclass of ``numpy.linalg.LinAlgError`` (itself a ``ValueError``); ``indices``
    lists the offending batch indices as tuples.
    """

    def __init__(self, message: str, indices: list[tuple[int, ...]] | None = None):
        super().__init__(message)
        self.indices = indices or []


def format_indices(indices: list[tuple[int, ...]], limit: int = 10) -> str:
    """Render batch indices as ``[(0, 2), (1, 0), ...]`` with a count past ``limit``."""
    shown = ", ".join(str(i[0]) if len(i) == 1 else str(i) for i in indices[:limit])
    more = f", ... ({len(indices)} in all)" if len(indices) > limit else ""
    return f"[{shown}{more}]"
