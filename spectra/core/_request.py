"""What one call asks for: a frozen :class:`Request`, built once at the entry point.

``spectra.eigh(a, b, k=..., largest=..., lindep=..., ...)`` describes a problem (the
matrices) and a question about it: which eigenpairs, with or without vectors, how the
overlap's near-null space is treated, how strictly the input is checked, where it is
solved. The question travels down the pipeline as one :class:`Request`, beside the
:class:`~spectra.core.Options` (how it runs), instead of as ten positional values.

:data:`EIGH_OPTION_NAMES` is the one list of :func:`spectra.eigh` keywords that a domain
may forward from its own callers (everything except the problem and the question a domain
decides itself).

>>> r = Request.build(vectors=False, k=2)
>>> r.k, r.vectors, r.sized(5).k
(2, False, 2)
>>> r.whole().k is None
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from ._options import Options, check_tolerance
from ._pipeline._prepare import check_k

#: the keywords of :func:`spectra.eigh` that describe the problem and the question; a domain
#: decides these itself and never forwards them from its callers
PROBLEM_KEYWORDS = frozenset({"a", "b", "k", "largest", "lindep", "lindep_fill"})

#: the keywords of :func:`spectra.eigh` a domain may forward from its own callers: the
#: checks, the device, a plan, the options object and every :class:`Options` field
EIGH_OPTION_NAMES = frozenset(
    {"check", "symmetry_tol", "device", "plan", "options", *Options.names()}
)


@dataclass(frozen=True)
class Request:
    """The question a call asks (see :func:`spectra.eigh` for each field).

    Parameters
    ----------
    vectors : eigenvectors too (``eigh``) or eigenvalues only (``eigvalsh``).
    k : how many eigenpairs (``None``: all); validated against ``n`` by :meth:`sized`.
    largest : the ``k`` largest instead of the smallest.
    lindep : with ``b``, the overlap eigenvalue below which its directions are dropped.
    lindep_fill : the eigenvalue the dropped pairs get.
    check : check for NaN/Inf and asymmetry.
    symmetry_tol : the relative asymmetry tolerated (``None``: the dtype's default).
    device : the device to solve on (``None``: the input's).

    Examples
    --------
    >>> Request.build(lindep=-1)
    Traceback (most recent call last):
    ...
    spectra.core._errors.InputError: lindep must be a finite number >= 0, got -1
    """

    vectors: bool = True
    k: Any = None
    largest: bool = False
    lindep: float | None = None
    lindep_fill: float = math.inf
    check: bool = True
    symmetry_tol: float | None = None
    device: Any = None

    @classmethod
    def build(
        cls,
        vectors: bool = True,
        k: Any = None,
        largest: bool = False,
        lindep: Any = None,
        lindep_fill: float = math.inf,
        check: bool = True,
        symmetry_tol: Any = None,
        device: Any = None,
    ) -> Request:
        """The request of a call, its tolerances validated (``k`` is checked per size); the
        arguments in the order of the fields."""
        return cls(
            vectors=vectors,
            k=k,
            largest=largest,
            lindep=check_tolerance(lindep, "lindep"),
            lindep_fill=lindep_fill,
            check=check,
            symmetry_tol=check_tolerance(symmetry_tol, "symmetry_tol"),
            device=device,
        )

    def sized(self, n: int, what: str = "k") -> Request:
        """This request with ``k`` checked against matrices of size ``n`` (an int or None)."""
        return replace(self, k=check_k(self.k, n, what))

    def keywords(self) -> dict[str, Any]:
        """The question as :func:`spectra.eigh` keywords (all but ``vectors``), e.g. for a
        collection's own ``eigh`` (``spectra.distributed``)."""
        return {
            "k": self.k,
            "largest": self.largest,
            "lindep": self.lindep,
            "lindep_fill": self.lindep_fill,
            "check": self.check,
            "symmetry_tol": self.symmetry_tol,
            "device": self.device,
        }

    def whole(self) -> Request:
        """The same question about every eigenpair (the selection of ``k`` comes later)."""
        if self.k is None and not self.largest:
            return self
        return replace(self, k=None, largest=False)
