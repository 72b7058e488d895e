"""``StiefelParameter``: a ``torch.nn.Parameter`` tagged with its Stiefel manifold.

It pickles as ``_rebuild(data, requires_grad, Stiefel(retraction, metric name))``, and both
callables are registered with ``torch.serialization.add_safe_globals`` when this module is
imported, so ``torch.load`` with its default ``weights_only=True`` (torch >= 2.6) loads saved
parameters, models' ``state_dict(keep_vars=True)`` and manifolds. (A custom
:class:`~spectra.stiefel.Metric` subclass must be registered by its author in the same way.)
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.domain import InputError, default_tolerance
from ._checks import batch_indices, check_frames, not_finite, orthogonality_error
from ._manifold import Stiefel


def _rebuild(data: torch.Tensor, requires_grad: bool, manifold: Stiefel) -> StiefelParameter:
    return StiefelParameter(data, manifold=manifold, requires_grad=requires_grad, check=False)


class StiefelParameter(torch.nn.Parameter):
    """A parameter whose matrices ``(..., n, p)`` live on the Stiefel manifold.

    :class:`~spectra.stiefel.RiemannianSGD` and :class:`~spectra.stiefel.RiemannianAdam`
    read ``.manifold`` and keep the parameter on it; ordinary parameters in the same
    optimizer get the usual Euclidean update.

    Parameters
    ----------
    data : the initial frames; must satisfy ``X^H X = I`` unless ``project=True``.
    manifold : a :class:`Stiefel` (default ``Stiefel()``, polar retraction).
    requires_grad : as for ``torch.nn.Parameter``.
    project : replace ``data`` by its nearest point on the manifold (polar factor).
    check : verify that ``data`` is finite and on the manifold (``max |X^H X - I|`` within
        1e-4 in single, 1e-10 in double precision); raises :class:`spectra.InputError`
        naming the batch indices that are not.

    Examples
    --------
    >>> import torch
    >>> from spectra.stiefel import StiefelParameter
    >>> w = StiefelParameter(torch.randn(4, 10, 3), project=True)
    >>> w.manifold, w.shape
    (Stiefel(retraction='polar'), torch.Size([4, 10, 3]))
    """

    manifold: Stiefel

    def __new__(
        cls,
        data: torch.Tensor | None = None,
        manifold: Stiefel | None = None,
        requires_grad: bool = True,
        *,
        project: bool = False,
        check: bool = True,
    ) -> StiefelParameter:
        if data is None:
            raise InputError("StiefelParameter", "needs data of shape (..., n, p)")
        manifold = Stiefel() if manifold is None else manifold
        if not isinstance(manifold, Stiefel):
            raise TypeError(
                f"manifold must be a spectra.stiefel.Stiefel, got {type(manifold).__name__}"
            )
        data = data.detach()
        check_frames(data, "StiefelParameter data")
        if (project or check) and data.numel():
            bad = not_finite(data)
            if bool(bad.any()):  # no projection can help
                raise InputError(
                    "StiefelParameter data",
                    "is not finite (contains NaN or Inf)",
                    batch_indices(bad),
                )
        if project:
            data = manifold.projx(data)
        elif check and data.numel():
            err = orthogonality_error(data)
            tol = default_tolerance(data.dtype)
            bad = ~(err <= tol)
            if bool(bad.any()):
                raise InputError(
                    "StiefelParameter data",
                    f"is not on the Stiefel manifold (max |X^H X - I| = "
                    f"{float(err.max()):.3g} > atol={tol:g})",
                    batch_indices(bad),
                    hint="pass project=True to start from the nearest point on the manifold, "
                    "the polar factor of data",
                )
        inst = torch.Tensor._make_subclass(cls, data, requires_grad)
        inst.manifold = manifold
        return inst

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        return f"StiefelParameter on {self.manifold!r} containing:\n{self.data!r}"

    def __deepcopy__(self, memo: dict[int, Any]) -> StiefelParameter:
        if id(self) in memo:
            return memo[id(self)]
        out = StiefelParameter(
            self.data.clone(memory_format=torch.preserve_format),
            manifold=self.manifold,
            requires_grad=self.requires_grad,
            check=False,
        )
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, proto: Any) -> Any:
        return _rebuild, (self.data, self.requires_grad, self.manifold)


# torch.load(weights_only=True) rebuilds saved parameters and manifolds from these two
torch.serialization.add_safe_globals([_rebuild, Stiefel])
