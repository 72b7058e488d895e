"""The metrics of the Stiefel manifold as objects: inner product, gradient, retraction, transport.

A :class:`Metric` answers the four questions that differ between geometries; the manifold
(:class:`~spectra.stiefel.Stiefel`) and the optimizers ask it instead of testing a name:

- :class:`EuclideanMetric` (geoopt's ``EuclideanStiefel``): ``<u, v> = Re tr(u^H v)``,
  gradient ``G - X herm(X^H G)``, transport by projection;
- :class:`CanonicalMetric` (geoopt's default ``Stiefel()``, ``CanonicalStiefel``):
  ``<u, v> = Re tr(u^H (I - X X^H / 2) v)``, gradient ``G - X G^H X``, and its ``"cayley"``
  retraction is geoopt's ``(I - A/2)^(-1)(I + A/2) X``, ``A = u X^H - X u^H``, with vectors
  transported by the same operator.

Every method takes tensors that the caller has checked (shapes, finiteness): they are the
optimizers' per-step path.

>>> import torch
>>> from spectra.stiefel import CanonicalMetric, Stiefel
>>> st = Stiefel(metric="canonical")
>>> isinstance(st.metric, CanonicalMetric), st.metric == "canonical"
(True, True)
"""

from __future__ import annotations

from typing import ClassVar

import torch

from ..core.domain import InputError
from ._canonical import (
    _cayley_apply,
    canonical_inner,
    canonical_rgrad,
    cayley_transport,
    retract_cayley_canonical,
)
from ._retractions import RETRACTIONS, Retraction


def project(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Orthogonal projection onto the tangent space at ``x``: ``u - x herm(x^H u)``."""
    if x.ndim == 2 and u.ndim == 2:  # one matrix: mm and the fused u - x (s + s^H) / 2
        s = torch.mm(x.mH, u)
        return u.addmm(x, s + s.mH, alpha=-0.5)
    s = x.mH @ u
    return torch.sub(u, x @ (s + s.mH), alpha=0.5)


def euclidean_inner(u: torch.Tensor, v: torch.Tensor, keepdim: bool = False) -> torch.Tensor:
    """``Re tr(u^H v)`` per matrix."""
    out = (u.conj() * v).real if u.is_complex() or v.is_complex() else u * v
    return out.sum((-2, -1), keepdim=keepdim)


class Metric:
    """A Riemannian metric on the Stiefel manifold: override the methods that differ.

    The defaults are the Euclidean (embedded) metric's. A metric compares equal to its
    ``name`` (``Stiefel().metric == "euclidean"``) and to every instance of its class.
    """

    name: ClassVar[str] = ""
    default_retraction: ClassVar[str] = "polar"

    def egrad2rgrad(self, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """Riemannian gradient of a function with Euclidean gradient ``g``."""
        return project(x, g)

    def proju(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """geoopt's ``proju`` under this metric."""
        return project(x, u)

    def inner(
        self, x: torch.Tensor, u: torch.Tensor, v: torch.Tensor, keepdim: bool = False
    ) -> torch.Tensor:
        """Inner product of the tangent vectors ``u``, ``v`` at ``x``, per matrix."""
        return euclidean_inner(u, v, keepdim)

    def squared_norm(self, x: torch.Tensor, u: torch.Tensor) -> float:
        """``<u, u>`` at ``x`` for one matrix, as a Python number (Adam's second moment):
        one dot product under the Euclidean inner product."""
        if type(self).inner is Metric.inner and not u.is_complex() and u.is_contiguous():
            flat = u.view(-1)
            return float(torch.dot(flat, flat))
        return float(self.inner(x, u, u))

    def retraction(self, method: str) -> Retraction:
        """The function ``(x, xi) -> y`` of the retraction named ``method``."""
        return RETRACTIONS[method]

    def transport(
        self,
        x: torch.Tensor,
        xi: torch.Tensor | None,
        y: torch.Tensor,
        v: torch.Tensor,
        method: str,
    ) -> torch.Tensor:
        """Move ``v`` (tangent at ``x``) to ``y = retraction(method)(x, xi)``: by projection
        (``xi`` may be ``None`` where the transport does not need it: polar and QR)."""
        return project(y, v)

    def retract_transport(
        self, x: torch.Tensor, xi: torch.Tensor, vectors: list[torch.Tensor], method: str
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The retracted point and ``vectors`` transported to it."""
        y = self.retraction(method)(x, xi)
        return y, [self.transport(x, xi, y, v, method) for v in vectors]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other == self.name
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class EuclideanMetric(Metric):
    """The embedded metric ``Re tr(u^H v)`` (geoopt's ``EuclideanStiefel``); polar by default."""

    name: ClassVar[str] = "euclidean"


class CanonicalMetric(Metric):
    """The canonical metric ``Re tr(u^H (I - X X^H / 2) v)`` (geoopt's ``Stiefel()``).

    Gradient ``G - X G^H X`` (geoopt's ``proju`` is the same map); its ``"cayley"``
    retraction and transport are geoopt's, through one ``2p x 2p`` solve. Default
    retraction: ``"cayley"``.
    """

    name: ClassVar[str] = "canonical"
    default_retraction: ClassVar[str] = "cayley"

    def egrad2rgrad(self, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return canonical_rgrad(x, g)

    def proju(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return canonical_rgrad(x, u)

    def inner(
        self, x: torch.Tensor, u: torch.Tensor, v: torch.Tensor, keepdim: bool = False
    ) -> torch.Tensor:
        return canonical_inner(x, u, v, keepdim)

    def retraction(self, method: str) -> Retraction:
        return retract_cayley_canonical if method == "cayley" else RETRACTIONS[method]

    def transport(
        self,
        x: torch.Tensor,
        xi: torch.Tensor | None,
        y: torch.Tensor,
        v: torch.Tensor,
        method: str,
    ) -> torch.Tensor:
        if method == "cayley":
            assert xi is not None
            return _cayley_apply(x, xi, v)
        return project(y, v)

    def retract_transport(
        self, x: torch.Tensor, xi: torch.Tensor, vectors: list[torch.Tensor], method: str
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        if method == "cayley":
            return cayley_transport(x, xi, vectors)
        return super().retract_transport(x, xi, vectors, method)


#: The metrics by name: ``Stiefel(metric=name)``.
METRICS: dict[str, Metric] = {"euclidean": EuclideanMetric(), "canonical": CanonicalMetric()}


def metric_of(metric: str | Metric) -> Metric:
    """The metric object for a name of :data:`METRICS` or a :class:`Metric` instance."""
    if isinstance(metric, Metric):
        return metric
    if isinstance(metric, str) and metric in METRICS:
        return METRICS[metric]
    raise InputError(
        "", f"unknown metric {metric!r}; choose one of {list(METRICS)} or a Metric instance"
    )
