"""scikit-learn's estimator protocol for BatchPCA, without making sklearn a dependency.

When sklearn is importable, :class:`EstimatorBase` derives from its ``TransformerMixin``
and ``BaseEstimator`` (so ``clone``, ``Pipeline``, ``GridSearchCV``, ``set_output`` and the
HTML repr work) and :class:`NotFittedError` *is* ``sklearn.exceptions.NotFittedError``;
otherwise both are small stand-ins with the same behaviour.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..core.domain import EIGH_OPTION_NAMES, InputError

# explicit parameters of BatchPCA.__init__, stored unchanged (sklearn's convention)
PARAMS = (
    "n_components",
    "whiten",
    "center",
    "solver",
    "svd_solver",
    "precision",
    "iterated_power",
    "n_oversamples",
    "random_state",
)


def eigh_option_names() -> frozenset[str]:
    """The keyword options of :func:`spectra.eigh` that BatchPCA forwards (the core's list:
    the PCA decides the problem keywords ``k``, ``largest``, ``lindep`` itself)."""
    return EIGH_OPTION_NAMES


def check_eigh_options(options: dict[str, Any]) -> None:
    """``TypeError`` for a keyword that is neither a BatchPCA parameter nor an eigh option."""
    allowed = eigh_option_names()
    unknown = sorted(set(options) - allowed)
    if unknown:
        hint = ""
        if set(unknown) & {"tol", "copy", "power_iteration_normalizer"}:
            hint = (
                " (sklearn's PCA options tol, copy and power_iteration_normalizer have no "
                "meaning here: BatchPCA never modifies X, and its randomized solver "
                "normalizes power iterations by QR)"
            )
        raise TypeError(
            f"BatchPCA got unexpected keyword argument(s) {unknown}{hint}; it takes "
            f"{list(PARAMS)} and the spectra.eigh options {sorted(allowed)}"
        )


try:  # pragma: no branch - sklearn is a test dependency
    from sklearn.base import BaseEstimator, TransformerMixin
    from sklearn.exceptions import NotFittedError

    HAVE_SKLEARN = True
    _Bases: tuple[type, ...] = (TransformerMixin, BaseEstimator)
except ImportError:  # pragma: no cover - exercised only without sklearn
    HAVE_SKLEARN = False
    _Bases = (object,)

    class NotFittedError(ValueError, AttributeError):  # type: ignore[no-redef]
        """The model was used before ``fit`` (a ValueError and AttributeError, as sklearn's)."""


class EstimatorBase(*_Bases):  # type: ignore[misc]
    """get_params/set_params over the explicit parameters plus the forwarded eigh options."""

    eigh_options: dict[str, Any]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments: explicit parameters, then the eigh options given."""
        params = {name: getattr(self, name) for name in PARAMS}
        params.update(self.eigh_options)
        return params

    def set_params(self, **params: Any) -> EstimatorBase:
        """Set parameters (and eigh options) by name; unknown names raise ``InputError``
        (a ``ValueError``, as sklearn's)."""
        allowed = eigh_option_names()
        for key, value in params.items():
            if key in PARAMS:
                setattr(self, key, value)
            elif key in allowed:
                self.eigh_options = {**self.eigh_options, key: value}
            else:
                raise InputError(
                    "",
                    f"Invalid parameter {key!r} for estimator {self!r}. Valid parameters "
                    f"are: {sorted([*PARAMS, *allowed])!r}.",
                )
        return self

    def get_feature_names_out(self, input_features: Any = None) -> Any:
        """Output feature names ``batchpca0, batchpca1, ...`` (sklearn's class-name rule)."""
        import numpy as np

        width = int(self.components_.shape[-2])  # type: ignore[attr-defined]
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(width)], dtype=object)

    if HAVE_SKLEARN:

        def __sklearn_tags__(self) -> Any:
            tags = super().__sklearn_tags__()
            tags.transformer_tags.preserves_dtype = ["float64", "float32"]
            return tags

    def __repr__(self) -> str:
        defaults = {
            name: p.default for name, p in inspect.signature(type(self).__init__).parameters.items()
        }
        shown = [
            f"{k}={v!r}"
            for k, v in self.get_params().items()
            if k not in defaults or (defaults[k] is not v and defaults[k] != v)
        ]
        return f"{type(self).__name__}({', '.join(shown)})"
