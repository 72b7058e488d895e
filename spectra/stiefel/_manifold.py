"""The Stiefel manifold ``St(n, p) = {X : X^H X = I}`` with the Euclidean or canonical metric."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from ..core import eigvalsh
from ..core.domain import InputError, LinAlgError, as_tensor, default_tolerance, restore
from ._checks import (
    SELF_CORRECTING,
    check_finite,
    check_frames,
    orthogonality_error,
    require_on_manifold,
    verdict,
)
from ._metrics import METRICS, EuclideanMetric, Metric, metric_of, project
from ._polar import herm, polar
from ._retractions import RETRACTIONS
from ._traced import compiling, traced

F = TypeVar("F", bound=Callable[..., Any])


def _array_io(fn: F) -> F:
    """NumPy in, NumPy out: convert array arguments to tensors and the result back."""

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        if not any(hasattr(a, "__array__") and not isinstance(a, torch.Tensor) for a in args):
            return fn(self, *args, **kwargs)
        converted, origin = [], None
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor) or hasattr(a, "__array__"):
                t, o = as_tensor(a, f"argument {i}")
                origin = origin or o
                converted.append(t)
            else:
                converted.append(a)
        out = fn(self, *converted, **kwargs)
        if isinstance(out, tuple):
            return tuple(restore(t, origin) for t in out)  # type: ignore[arg-type]
        return restore(out, origin)  # type: ignore[arg-type]

    return wrapper  # type: ignore[return-value]


class Stiefel:
    """Batches of ``n x p`` matrices with orthonormal columns, ``X^H X = I``.

    Works on ``(..., n, p)`` tensors, real (orthonormal frames) or complex (unitary frames);
    every method handles the whole batch at once. The polar retraction, ``projx``,
    ``random`` and ``distance_to_manifold`` make ONE core call on the ``p x p`` Gram
    matrices of the batch. NumPy arrays in give NumPy arrays out.

    Parameters
    ----------
    retraction : ``"polar"`` (through the core), ``"qr"`` or ``"cayley"``: the retraction
        used by :meth:`retract` and by the optimizers when none is named. Default:
        ``"polar"`` for the Euclidean metric, ``"cayley"`` for the canonical one.
    metric : ``"euclidean"`` (default; geoopt's ``EuclideanStiefel``) or ``"canonical"``
        (geoopt's default ``Stiefel()``, ``CanonicalStiefel``): ``<u, v> = Re tr(u^H (I -
        X X^H / 2) v)``, Riemannian gradient ``G - X G^H X``, and ``"cayley"`` is geoopt's
        ``CanonicalStiefel.retr`` ``(I - A/2)^(-1)(I + A/2) X`` with ``A = u X^H - X u^H``,
        computed through a ``2p x 2p`` solve. Under the Euclidean metric ``"cayley"`` is
        Wen & Yin's form, which moves along a tangent ``xi`` to first order. A
        :class:`~spectra.stiefel.Metric` instance is accepted too; ``.metric`` is always
        the metric object (it compares equal to its name: ``st.metric == "canonical"``).

    geoopt's method names are aliases where they mean the same: ``egrad2rgrad``, ``proju``
    (under the canonical metric, geoopt's ``proju`` is its gradient conversion, and so is
    ours), ``retr``, ``retr_transp``, ``transp``, ``projx``. ``dist(x, y)`` is the distance
    between two points; :meth:`distance_to_manifold` measures how far a matrix is from it.

    Examples
    --------
    >>> import torch
    >>> from spectra.stiefel import Stiefel
    >>> st = Stiefel()
    >>> x = st.random(1000, 16, 4, dtype=torch.float64)
    >>> g = torch.randn_like(x)
    >>> xi = st.proj(x, g)                       # Riemannian gradient of <g, X>
    >>> y = st.retract(x, -0.1 * xi)             # one eigh call for the 1000 Gram matrices
    >>> bool(st.orthogonality_error(y).max() < 1e-12)
    True
    """

    ndim = 2

    def __init__(self, retraction: str | None = None, metric: str | Metric = "euclidean") -> None:
        self.metric: Metric = metric_of(metric)
        if retraction is None:
            retraction = self.metric.default_retraction
        _check_method(retraction)
        self.retraction = retraction

    def __repr__(self) -> str:
        if type(self.metric) is EuclideanMetric:
            return f"Stiefel(retraction={self.retraction!r})"
        name = self.metric.name or self.metric
        return f"Stiefel(retraction={self.retraction!r}, metric={name!r})"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other.retraction == self.retraction  # type: ignore[attr-defined]
            and other.metric == self.metric  # type: ignore[attr-defined]
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.retraction, self.metric))

    def __reduce__(self) -> tuple[Any, ...]:
        # plain arguments (the metric by name): torch.load(weights_only=True) rebuilds it
        named = metric_of(self.metric.name) if self.metric.name else None
        return type(self), (
            self.retraction,
            self.metric.name if named == self.metric else self.metric,
        )

    # tangent spaces -------------------------------------------------------------------
    @_array_io
    def proj(self, x: Any, u: Any) -> Any:
        """Orthogonal projection of ``u`` onto the tangent space at ``x``: ``u - x herm(x^H u)``.

        Under the Euclidean metric this is also the Riemannian gradient of a function with
        Euclidean gradient ``u`` (:meth:`egrad2rgrad`).
        """
        check_frames(x)
        return project(x, u)

    @_array_io
    def egrad2rgrad(self, x: Any, g: Any) -> Any:
        """Riemannian gradient from the Euclidean gradient ``g`` (the metric's):
        :meth:`proj` under the Euclidean metric, ``g - x g^H x`` under the canonical one
        (as geoopt).

        >>> import torch
        >>> from spectra.stiefel import Stiefel
        >>> st = Stiefel(metric="canonical")
        >>> x = st.random(5, 6, 2, dtype=torch.float64); g = torch.randn_like(x)
        >>> bool(st.check_tangent(x, st.egrad2rgrad(x, g)))
        True
        """
        check_frames(x)
        return self.metric.egrad2rgrad(x, g)

    @_array_io
    def proju(self, x: Any, u: Any) -> Any:
        """geoopt's ``proju``: :meth:`proj` under the Euclidean metric; under the canonical
        metric geoopt's ``CanonicalStiefel.proju`` is its gradient conversion
        ``u - x u^H x`` (not idempotent on tangent vectors), and so is this."""
        check_frames(x)
        return self.metric.proju(x, u)

    @_array_io
    def transport(self, x: Any, y: Any, v: Any) -> Any:
        """Vector transport of ``v`` (tangent at ``x``) to ``y`` by projection."""
        check_frames(y, "Y")
        return project(y, v)

    transp = transport

    @_array_io
    def inner(self, x: Any, u: Any, v: Any = None, *, keepdim: bool = False) -> Any:
        """Inner product of tangent vectors per matrix: ``Re tr(u^H v)`` (Euclidean) or
        ``Re tr(u^H (I - x x^H / 2) v)`` (canonical)."""
        return self.metric.inner(x, u, u if v is None else v, keepdim)

    def norm(self, x: Any, u: Any, *, keepdim: bool = False) -> Any:
        """Norm of the tangent vector ``u`` at ``x``, per matrix."""
        return self.inner(x, u, keepdim=keepdim) ** 0.5

    # points -------------------------------------------------------------------------
    @_array_io
    def retract(self, x: Any, xi: Any, method: str | None = None) -> Any:
        """Move from ``x`` along the tangent step ``xi`` and land on the manifold.

        Parameters
        ----------
        x : ``(..., n, p)`` points on the manifold.
        xi : tangent steps at ``x``, same shape (batch dimensions broadcast).
        method : ``"polar"`` (one core eigh call for the whole batch), ``"qr"`` or
            ``"cayley"``; default: the manifold's ``retraction``.

        Gradients flow through all three; the polar backward stays finite for tiny steps
        (divided differences of ``l^(-1/2)``). Polar and QR map any full-rank ``x + xi``
        onto the manifold; Cayley keeps ``x``'s departure from it, so it refuses ``x`` with
        ``max |X^H X - I|`` above ``ON_MANIFOLD_TOL`` (1e-5 double, 1e-3 single precision)
        with an :class:`spectra.InputError` giving the distance and the batch indices.

        >>> import torch
        >>> from spectra.stiefel import Stiefel
        >>> st = Stiefel(metric="canonical")
        >>> x = st.random(3, 6, 2, dtype=torch.float64)
        >>> try:
        ...     st.retract(2 * x, torch.zeros_like(x))
        ... except ValueError as exc:
        ...     print(str(exc).split(",")[0])
        X is not on the Stiefel manifold (max |X^H X - I| = 3 > 1e-05
        """
        if compiling() and isinstance(x, torch.Tensor) and isinstance(xi, torch.Tensor):
            name = self._traced_retraction(method)
            if name is not None:  # torch.compile / export: one opaque op, eager inside
                return traced(name, x, xi)
        return self._retract(x, xi, method, [])[0]

    retr = retract

    def _traced_retraction(self, method: str | None) -> str | None:
        """The op's name for this retraction, or ``None`` for a metric that is not a
        registered one (then traced as Python). Nothing is checked here: the op's eager
        implementation raises what eager raises (an exception raised while Dynamo traces
        would reach the caller as a bare ``Unsupported``, without its message)."""
        name = self.metric.name
        if not name or METRICS.get(name) != self.metric:
            return None
        return f"retract/{self.retraction if method is None else method}/{name}"

    def _retract(
        self, x: Any, xi: Any, method: str | None, vectors: list[torch.Tensor]
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        method = self.retraction if method is None else method
        _check_method(method)
        check_frames(x)
        if xi.shape[-2:] != x.shape[-2:]:
            raise InputError(
                "xi",
                f"has shape {tuple(xi.shape)}, expected (..., {x.shape[-2]}, {x.shape[-1]}) like X",
            )
        if method not in SELF_CORRECTING:
            require_on_manifold(x, f"retract(method={method!r})")
        try:
            if vectors:
                y, moved = self.metric.retract_transport(x, xi, vectors, method)
            else:
                y, moved = self.metric.retraction(method)(x, xi), []
            if method != "polar":  # polar already checked its Gram eigenvalues
                check_finite(y.detach(), f"retract(method={method!r}) output")
        except ValueError:  # name the culprit input (checked on the error path only)
            check_finite(x.detach(), "X")
            check_finite(xi.detach(), "xi")
            raise
        return y, moved

    @_array_io
    def retract_transport(
        self, x: Any, xi: Any, v: Any, method: str | None = None
    ) -> tuple[Any, Any]:
        """Retract ``x`` along ``xi`` and transport ``v`` to the new point (geoopt's
        ``retr_transp``): by projection, or, for the canonical Cayley retraction, by the
        same Cayley operator (geoopt's ``transp_follow_retr``), in one ``2p x 2p`` solve."""
        y, (w,) = self._retract(x, xi, method, [v])
        return y, w

    retr_transp = retract_transport

    def transport_step(self, x: Any, xi: Any, y: Any, v: Any, method: str | None = None) -> Any:
        """Transport ``v`` from ``x`` to ``y = retract(x, xi, method)`` the way
        :meth:`retract_transport` does (the optimizers' momentum transport)."""
        return self.metric.transport(x, xi, y, v, self.retraction if method is None else method)

    @_array_io
    def projx(self, x: Any) -> Any:
        """The nearest point on the manifold (Frobenius norm): the polar factor of ``x``.

        Scale invariant (``projx(c x) = projx(x)`` for ``c > 0``, down to subnormal and up to
        huge entries: each matrix is first scaled by a power of two). The nearest point of a
        matrix that is not of full column rank is not unique: such matrices (a zero matrix,
        a repeated column, smallest singular value below ``10 max(n, p) eps`` times the
        largest) are refused with an :class:`spectra.InputError` naming the batch indices,
        on both metrics.

        >>> import torch
        >>> from spectra.stiefel import Stiefel
        >>> y = torch.randn(4, 6, 3, dtype=torch.float64)
        >>> bool(torch.allclose(Stiefel().projx(1e-300 * y), Stiefel().projx(y)))
        True
        """
        if compiling() and isinstance(x, torch.Tensor):  # one opaque op, eager inside
            return traced("projx", x)
        check_frames(x)
        check_finite(x.detach(), "X")
        try:
            return polar(x, where="projx", precise=True)
        except LinAlgError as exc:
            raise InputError(
                "X",
                "is not of full column rank: its nearest point on the manifold is not unique",
                exc.indices,
                hint="projx refuses it; add a full-rank perturbation or complete the frame",
            ) from None

    def random(
        self,
        *shape: int,
        dtype: torch.dtype | None = None,
        device: Any = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Haar-distributed random points: the polar factors of Gaussian matrices.

        ``random(batch..., n, p)``; complex dtypes give unitary frames.
        """
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        if len(shape) < 2 or shape[-1] > shape[-2]:
            raise InputError("random:", f"expected a shape (..., n, p) with p <= n, got {shape}")
        g = torch.randn(*shape, dtype=dtype, device=device, generator=generator)
        return polar(g, where="random", precise=True)

    # distances ----------------------------------------------------------------------
    @_array_io
    def dist(self, x: Any, y: Any) -> Any:
        """Distance between points ``x`` and ``y``: the chordal (Frobenius) distance
        ``||x - y||_F``, per matrix. The geodesic distance has no closed form on the Stiefel
        manifold (geoopt's ``Stiefel.dist`` raises ``NotImplementedError``); the chordal one
        differs from it by ``O(d^3)`` for nearby points under the Euclidean metric. The
        distance of a matrix *to* the manifold is :meth:`distance_to_manifold`.

        >>> import torch
        >>> from spectra.stiefel import Stiefel
        >>> x = torch.eye(3, 2, dtype=torch.float64)
        >>> round(float(Stiefel().dist(x, -x)) ** 2, 12)
        8.0
        """
        check_frames(x)
        check_frames(y, "Y")
        d = x - y
        sq = (d.conj() * d).real if d.is_complex() else d * d
        return sq.sum((-2, -1)).sqrt()

    @_array_io
    def orthogonality_error(self, x: Any) -> Any:
        """``max |X^H X - I|`` per matrix (shape: the batch shape)."""
        check_frames(x)
        return orthogonality_error(x)

    @_array_io
    def distance_to_manifold(self, x: Any) -> Any:
        """Frobenius distance from ``x`` to the manifold, ``sqrt(sum_i (s_i - 1)^2)``.

        ``s_i`` are the singular values of ``x``, from one core ``eigvalsh`` call on the
        Gram matrices ``x^H x``.
        """
        check_frames(x)
        if x.shape[-1] == 0:
            return x.real.sum((-2, -1)) * 0
        check_finite(x.detach(), "X")
        w = eigvalsh(herm(x.mH @ x).detach(), check=False).clamp_min(0)
        return ((w.sqrt() - 1) ** 2).sum(-1).sqrt()

    def check(self, x: Any, *, atol: float | None = None, raise_error: bool = False) -> bool:
        """Whether every matrix of ``x`` satisfies ``max |X^H X - I| <= atol``.

        ``atol`` defaults to 1e-4 in single and 1e-10 in double precision. With
        ``raise_error=True`` a failure raises :class:`spectra.InputError` naming the batch
        indices.
        """
        t, _ = as_tensor(x, "X")
        check_frames(t)
        atol = default_tolerance(t.dtype) if atol is None else atol
        err = self.orthogonality_error(t.detach())
        return verdict(err, atol, raise_error, "X is not on the Stiefel manifold", "|X^H X - I|")

    def check_tangent(
        self, x: Any, u: Any, *, atol: float | None = None, raise_error: bool = False
    ) -> bool:
        """Whether ``u`` is tangent at ``x``: ``max |x^H u + u^H x| <= atol`` for every matrix."""
        xt, _ = as_tensor(x, "X")
        ut, _ = as_tensor(u, "u")
        check_frames(xt)
        atol = default_tolerance(xt.dtype) if atol is None else atol
        s = xt.mH @ ut
        err = (s + s.mH).abs().flatten(-2).amax(-1) if xt.shape[-1] else s.real.sum((-2, -1))
        return verdict(err, atol, raise_error, "u is not tangent at X", "|X^H u + u^H X|")


def _check_method(method: str) -> None:
    if method not in RETRACTIONS:
        raise InputError("", f"unknown retraction {method!r}; choose one of {sorted(RETRACTIONS)}")
