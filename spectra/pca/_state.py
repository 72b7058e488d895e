"""Saving and loading a fitted BatchPCA as plain tensors and values (``state_dict``).

A ``state_dict`` holds only what ``torch.load(..., weights_only=True)`` (torch's default
since 2.6) accepts: tensors, strings, numbers, bools, None, lists and dicts. Pickling the
estimator itself would need spectra's classes registered as safe globals, a process-wide
setting that a library must not change; the state dict needs none.
"""

from __future__ import annotations

from dataclasses import fields
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import torch

from ..core.domain import InputError, Origin
from ._plan import PCAPlan
from ._solve import PCAFit

FORMAT = "spectra.pca.BatchPCA/1"


def _plain(value: Any) -> Any:
    """Python scalars for NumPy/torch scalars (weights_only refuses NumPy objects)."""
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return float(value)
    if isinstance(value, (torch.device, torch.dtype)):
        return str(value)
    return value


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise InputError("state_dict", f"names an unknown dtype {name!r}")
    return dtype


class StateMixin:
    """``state_dict`` / ``load_state_dict`` of :class:`~spectra.pca.BatchPCA`."""

    eigh_options: dict[str, Any]
    n_features_in_: int
    plan_: PCAPlan
    _origin: Origin
    _single: bool

    if TYPE_CHECKING:  # provided by BatchPCA and its bases

        def _fitted(self) -> PCAFit: ...
        def _store(self, fit: PCAFit, origin: Origin, n_features: int) -> None: ...
        def _squeeze(self) -> None: ...
        def _check_params(self) -> None: ...
        def get_params(self, deep: bool = True) -> dict[str, Any]: ...
        def set_params(self, **params: Any) -> Any: ...

    def state_dict(self) -> dict[str, Any]:
        """The fitted model as plain tensors and values, for ``torch.save``.

        ``torch.load`` of it works with ``weights_only=True`` (torch's default), and
        :meth:`load_state_dict` restores a model whose results equal this one's bitwise.
        Tensors stay on their device (pass ``map_location`` to ``torch.load`` to move them).

        Returns
        -------
        dict
            ``format``, ``params`` (``get_params()``), ``fit`` (the fitted tensors),
            ``origin`` (array kind, device and dtype of the results), ``single``,
            ``n_features_in`` and ``plan``.

        Examples
        --------
        >>> import io
        >>> import numpy as np
        >>> import torch
        >>> from spectra.pca import BatchPCA
        >>> X = np.random.default_rng(0).normal(size=(4, 30, 5))
        >>> pca = BatchPCA(2).fit(X)
        >>> buf = io.BytesIO()
        >>> torch.save(pca.state_dict(), buf)
        >>> _ = buf.seek(0)
        >>> again = BatchPCA().load_state_dict(torch.load(buf))  # weights_only=True
        >>> bool((again.transform(X) == pca.transform(X)).all())
        True
        """
        fit = self._fitted()
        origin = self._origin
        return {
            "format": FORMAT,
            "params": {k: _plain(v) for k, v in self.get_params().items()},
            "fit": {f.name: getattr(fit, f.name).detach() for f in fields(fit)},
            "origin": {
                "kind": origin.kind,
                "device": str(origin.device),
                "dtype": str(origin.dtype),
                "low_precision": None
                if origin.low_precision is None
                else str(origin.low_precision),
            },
            "single": bool(getattr(self, "_single", False)),
            "n_features_in": int(self.n_features_in_),
            "plan": self.plan_.as_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> Any:
        """Restore a model saved by :meth:`state_dict` (parameters and fitted results).

        Parameters
        ----------
        state : dict
            What :meth:`state_dict` returned (e.g. through ``torch.save``/``torch.load``).

        Returns
        -------
        BatchPCA
            ``self``, fitted.

        Examples
        --------
        >>> import numpy as np
        >>> from spectra.pca import BatchPCA
        >>> pca = BatchPCA(2).fit(np.random.default_rng(0).normal(size=(3, 20, 4)))
        >>> BatchPCA().load_state_dict(pca.state_dict()).components_.shape
        (3, 2, 4)
        """
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            got = state.get("format") if isinstance(state, dict) else type(state).__name__
            raise InputError(
                "state_dict", f"is not a BatchPCA state (format {FORMAT!r}), got {got!r}"
            )
        names = {f.name for f in fields(PCAFit)}
        missing = sorted(names - set(state["fit"]))
        if missing:
            raise InputError("state_dict", f"lacks the fitted tensors {missing}")
        self.set_params(**state["params"])
        self._check_params()
        fit = PCAFit(**{name: state["fit"][name] for name in names})
        o = state["origin"]
        low = o.get("low_precision")
        origin = Origin(
            o["kind"],
            torch.device(o["device"]),
            _dtype(o["dtype"]),
            None if low is None else _dtype(low),
        )
        self._store(fit, origin, int(state["n_features_in"]))
        self.plan_ = PCAPlan.from_dict(state["plan"])
        if state["single"]:
            self._single = True
            self._squeeze()
        return self
