"""How a BatchPCA fit runs: the solver and the route, chosen from shapes, with the reason.

``BatchPCA.plan(X)`` shows the decision before a fit; ``BatchPCA.plan_`` is the plan a fit
followed, with the datasets that the SVD-accurate route solved (``svd_datasets``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from numbers import Integral
from typing import Any

from ..core.domain import InputError
from ._randomized import auto_iterations

SOLVERS = ("auto", "covariance", "gram", "svd")
SVD_SOLVERS = ("auto", "full", "randomized")
#: the randomized solver is chosen by ``svd_solver="auto"`` from this many features on
MIN_RANDOMIZED_FEATURES = 1000


@dataclass(frozen=True)
class PCAPlan:
    """A BatchPCA fit's solver (``"full"`` or ``"randomized"``) and route, and why.

    ``route`` is ``"covariance"`` (eigh of ``D x D`` scatter matrices), ``"gram"`` (eigh of
    ``N x N`` Gram matrices), ``"svd"`` (QR of the centred data and the dilation eigh of
    its triangular factor: SVD-accurate), ``"auto"`` (covariance, or Gram when ``N < D``,
    with ill-conditioned datasets, and those that lost a variance to round-off, re-solved
    by ``"svd"``) or ``"randomized"``.
    ``svd_datasets`` lists the datasets the SVD route solved (known after a fit).

    Examples
    --------
    >>> from spectra.pca import BatchPCA
    >>> print(BatchPCA(10).plan(shape=(20, 2000, 5000)).route)
    randomized
    """

    svd_solver: str
    route: str
    reason: str
    n_iter: int | None = None
    n_oversamples: int | None = None
    svd_datasets: tuple[int, ...] = ()

    def __str__(self) -> str:
        lines = [f"BatchPCA plan: svd_solver={self.svd_solver!r}, route={self.route!r}"]
        if self.route == "randomized":
            lines.append(f"  power iterations: {self.n_iter}, oversamples: {self.n_oversamples}")
        lines.append(f"  why: {self.reason}")
        if self.svd_datasets:
            shown = ", ".join(map(str, self.svd_datasets[:10]))
            more = f", ... ({len(self.svd_datasets)} in all)" if len(self.svd_datasets) > 10 else ""
            lines.append(f"  solved by the SVD route: datasets [{shown}{more}]")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """Plain values (for ``state_dict``)."""
        out = asdict(self)
        out["svd_datasets"] = list(self.svd_datasets)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PCAPlan:
        """The inverse of :meth:`as_dict`."""
        return cls(**{**d, "svd_datasets": tuple(d.get("svd_datasets", ()))})


def _int_k(spec: Any) -> int | None:
    if isinstance(spec, Integral) and not isinstance(spec, bool):
        return int(spec)
    return None


def randomized_pays(k: int, n: int, d: int, n_iter: int, n_oversamples: int) -> bool:
    """Whether ``svd_solver="auto"`` takes the randomized solver for ``(N, D)`` data.

    From :data:`MIN_RANDOMIZED_FEATURES` features on, when its ``2 n_iter + 2`` products
    with ``k + n_oversamples`` columns cost at most half the exact route's leading term
    (``N D min(N, D)``): ``(2 n_iter + 2)(k + p) <= min(N, D) / 2``.
    """
    return d >= MIN_RANDOMIZED_FEATURES and (2 * n_iter + 2) * (k + n_oversamples) <= min(n, d) / 2


def make_plan(
    spec: Any,
    n: int,
    d: int,
    *,
    solver: str,
    svd_solver: str,
    iterated_power: Any,
    n_oversamples: int,
) -> PCAPlan:
    """The plan of a fit on ``(B, N, D)`` data (``N`` the padded sample count)."""
    k = _int_k(spec)
    n_iter = None
    if k is not None:
        n_iter = auto_iterations(k, n, d) if iterated_power == "auto" else int(iterated_power)
    if svd_solver == "randomized":
        if k is None or k < 1:
            raise InputError(
                "n_components",
                f"must be an int >= 1 with svd_solver='randomized', got {spec!r}",
            )
        return PCAPlan("randomized", "randomized", "svd_solver='randomized'", n_iter, n_oversamples)
    if (
        svd_solver == "auto"
        and solver == "auto"
        and k is not None
        and k >= 1
        and n_iter is not None
        and randomized_pays(k, n, d, n_iter, n_oversamples)
    ):
        cost = (2 * n_iter + 2) * (k + n_oversamples)
        why = (
            f"svd_solver='auto': D = {d} >= {MIN_RANDOMIZED_FEATURES} features and "
            f"(2 n_iter + 2)(k + n_oversamples) = {cost} <= min(N, D) / 2 = {min(n, d) / 2:g}"
        )
        return PCAPlan("randomized", "randomized", why, n_iter, n_oversamples)
    if solver == "auto":
        base = "Gram (N < D)" if n < d else "covariance (N >= D)"
        why = (
            f"exact: the {base} route; datasets whose eigenvalues span more than "
            "eps^(-1/3) (1.6e5 in float64), or that lost a variance to round-off, are "
            "solved again by the SVD route"
        )
    else:
        why = f"exact: solver={solver!r}"
    return PCAPlan("full", solver, why)


def check_solver_params(
    solver: Any, svd_solver: Any, iterated_power: Any, n_oversamples: Any, random_state: Any
) -> None:
    """Validate BatchPCA's solver parameters (at construction and again at fit)."""
    if solver not in SOLVERS:
        raise InputError("solver", f"must be one of {list(SOLVERS)}, got {solver!r}")
    if svd_solver not in SVD_SOLVERS:
        raise InputError(
            "svd_solver",
            f"must be one of {list(SVD_SOLVERS)}, got {svd_solver!r} (BatchPCA has no "
            "'arpack' or 'covariance_eigh': solver='covariance' is sklearn's covariance_eigh)",
        )
    if iterated_power != "auto" and not (
        isinstance(iterated_power, Integral)
        and not isinstance(iterated_power, bool)
        and int(iterated_power) >= 0
    ):
        raise InputError("iterated_power", f"must be 'auto' or an int >= 0, got {iterated_power!r}")
    if not (
        isinstance(n_oversamples, Integral)
        and not isinstance(n_oversamples, bool)
        and int(n_oversamples) >= 1
    ):
        raise InputError("n_oversamples", f"must be an int >= 1, got {n_oversamples!r}")
    if random_state is not None and not (
        isinstance(random_state, Integral) and not isinstance(random_state, bool)
    ):
        raise InputError("random_state", f"must be None or an int seed, got {random_state!r}")
