"""The PCA math: one batched eigh of scatter (or Gram) matrices, then sklearn's conventions."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import torch

from ..core import eigh
from ..core.domain import InputError
from ._host import (
    Array,
    arange,
    as_torch,
    astype,
    at_least,
    at_most,
    copy,
    eps,
    flags,
    flip_last,
    host,
    indices,
    lib,
    like,
    put_rows,
    row_max,
    row_min,
    take_last,
)
from ._svd import svd_spectrum


@dataclass
class PCAFit:
    """A fitted batch of PCAs, as torch tensors (padded to ``kmax`` components).

    Shapes: ``mean`` (B, D), ``components`` (B, K, D), ``explained_variance``,
    ``explained_variance_ratio``, ``singular_values`` (B, K), ``noise_variance`` (B,),
    ``n_components`` and ``n_samples`` (B,) int64, ``mask`` (B, K) bool.
    """

    mean: torch.Tensor
    components: torch.Tensor
    explained_variance: torch.Tensor
    explained_variance_ratio: torch.Tensor
    singular_values: torch.Tensor
    noise_variance: torch.Tensor
    n_components: torch.Tensor
    n_samples: torch.Tensor
    mask: torch.Tensor

    def to(self, dtype: torch.dtype) -> PCAFit:
        """Cast the floating-point fields to ``dtype``."""
        fields = {
            k: (v.to(dtype) if v.is_floating_point() else v) for k, v in self.__dict__.items()
        }
        return PCAFit(**fields)


def check_n_components(spec: Any) -> None:
    """Validate ``n_components``: None, ``"mle"``, an int >= 0, or a float in (0, 1)."""
    if spec is None or (isinstance(spec, str) and spec == "mle"):
        return
    if isinstance(spec, bool):
        raise TypeError("n_components must be None, an int or a float in (0, 1), got a bool")
    if isinstance(spec, Integral):
        if int(spec) < 0:
            raise InputError("n_components", f"must be >= 0, got {spec}")
        return
    if isinstance(spec, Real):
        if not 0.0 < float(spec) < 1.0:
            raise InputError(
                "n_components",
                "as a float is the fraction of variance to keep and "
                f"must lie strictly between 0 and 1, got {spec}",
            )
        return
    raise TypeError(f"n_components must be None, 'mle', an int or a float in (0, 1), got {spec!r}")


def svd_flip_rows(components: Array) -> Array:
    """sklearn's ``svd_flip(u_based_decision=False)``: the largest-|entry| of each row > 0.

    Ties go to the first maximal entry (``argmax``), exactly as sklearn; zero rows stay
    zero. ``components`` is a torch tensor or a NumPy array (returned in the same kind).

    >>> import torch
    >>> svd_flip_rows(torch.tensor([[1.0, -3.0], [0.0, 0.0]]))
    tensor([[-1.,  3.],
            [ 0.,  0.]])
    """
    if 0 in components.shape:
        return components
    pivot = take_last(components, abs(components).argmax(-1)[..., None])
    return lib(components).where(pivot < 0, -components, components)


def choose_k(ratio: Array, rank: Array, spec: Any, ev: Array, count: Array) -> Array:
    """Per-dataset number of components (B,) for ``n_components`` ``spec``.

    ``ratio`` (B, R) are the explained-variance ratios in descending order and ``rank``
    (B,) the number of meaningful ones, ``min(n_samples, n_features)``; ``ev`` (B, R) the
    explained variances and ``count`` (B,) the sample counts (for ``"mle"``). Torch
    tensors or NumPy arrays, all of one kind (the result's).
    """
    xp = lib(rank)
    if spec is None:
        return copy(rank)
    if isinstance(spec, str):  # "mle": Minka's MLE, which needs n_samples >= n_features
        from ._likelihood import infer_dimension

        if ev.shape[0] == 0:
            return copy(rank)
        return astype(like(infer_dimension(as_torch(ev), as_torch(count)), rank), rank)
    if isinstance(spec, Integral):
        k = int(spec)
        bad = rank < k
        if bool(bad.any()):
            rows = indices(bad)
            lows = sorted({int(rank[i]) for i in rows})
            raise InputError(
                f"n_components={k}",
                "must be <= min(n_samples, n_features) for every dataset; "
                f"these datasets allow only {lows}",
                [(i,) for i in rows],
            )
        return xp.full_like(rank, k)
    # the fewest leading components whose cumulative ratio exceeds spec (sklearn's
    # searchsorted(..., side="right") + 1); past the rank nothing counts
    cum = xp.cumsum(xp.nan_to_num(ratio, nan=0.0), -1)
    cum = xp.where(arange(ratio.shape[-1], rank) < rank[:, None], cum, float("inf"))
    return xp.minimum((cum <= float(spec)).sum(-1) + 1, rank)


def finish(
    count: Array,
    mean: torch.Tensor,
    lam: Array,
    total: Array,
    rank: Array,
    spec: Any,
    vectors: Callable[[int], Array],
) -> PCAFit:
    """sklearn's attributes from the descending eigenvalues of the scatter matrices.

    ``lam`` (B, R): eigenvalues of ``X_c^T X_c`` (= squared singular values), descending;
    ``total`` (B,): its trace; ``rank`` (B,): ``min(n_samples, n_features)``;
    ``vectors(kmax)`` returns the matching leading component columns ``(B, D, kmax)``.
    Torch tensors or NumPy views of CPU tensors (:mod:`~spectra.pca._host`), all of one
    kind; the fit's fields are torch tensors.
    """
    xp = lib(lam)
    dof = astype(count - 1, lam)[:, None]
    lam = at_least(lam, 0)
    ev_all = lam / dof
    total_var = at_least(total, 0) / dof[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):  # no variance: 0 / 0, as torch
        ratio_all = ev_all / total_var[:, None]
    k = choose_k(ratio_all, rank, spec, ev_all, count)
    if k.shape[0]:
        kmax = int(k.max())
    else:  # no datasets: keep the requested width
        kmax = int(spec) if isinstance(spec, Integral) and not isinstance(spec, bool) else 0
    cols = arange(lam.shape[-1], lam)
    tail = (cols >= k[:, None]) & (cols < rank[:, None])
    left = astype(rank - k, lam)
    noise = xp.where(left > 0, (ev_all * tail).sum(-1) / at_least(left, 1), 0.0)
    mask = cols[:kmax] < k[:, None]
    comps = svd_flip_rows(vectors(kmax).mT) * mask[..., None]
    return PCAFit(
        mean=mean,
        components=as_torch(comps),
        explained_variance=as_torch(xp.where(mask, ev_all[:, :kmax], 0.0)),
        explained_variance_ratio=as_torch(xp.where(mask, ratio_all[:, :kmax], 0.0)),
        singular_values=as_torch(xp.where(mask, xp.sqrt(lam[:, :kmax]), 0.0)),
        noise_variance=as_torch(noise),
        n_components=as_torch(k),
        n_samples=as_torch(count).to(torch.int64),
        mask=as_torch(mask),
    )


def drop_roundoff(lam: Array, n_features: int) -> Array:
    """Descending eigenvalues ``lam`` (B, R) with the round-off-level ones set to exactly 0.

    Below ``10 max(R, D) eps lam_max`` an eigenvalue of a scatter or Gram matrix carries no
    information (an SVD would give a singular value at round-off too); zeroing it keeps
    ``singular_values_`` and the Gram route's null directions well defined.
    """
    if 0 in lam.shape:
        return lam
    floor = 10 * max(lam.shape[-1], n_features) * eps(lam) * at_least(lam[:, :1], 0)
    return lib(lam).where(lam > floor, lam, 0.0)


def check_counts(count: Array, spec: Any = None, n_features: int = 0) -> None:
    """PCA needs two samples per dataset (the variance divides by ``n_samples - 1``);
    ``n_components="mle"`` needs ``n_samples >= n_features`` (as sklearn)."""
    if count.shape[0] == 0 or (int(count.min()) >= 2 and not isinstance(spec, str)):
        return
    bad = indices(count < 2)
    if bad:
        have = sorted({int(count[i]) for i in bad})
        raise InputError(
            "X",
            f"has datasets with fewer than 2 samples (PCA needs at least 2 samples per "
            f"dataset; these have {have})",
            [(i,) for i in bad],
        )
    if isinstance(spec, str):
        bad = indices(count < n_features)
        if bad:
            raise InputError(
                "n_components='mle'",
                f"is only supported if n_samples >= n_features ({n_features}); "
                "these datasets have fewer samples",
                [(i,) for i in bad],
            )


def overflow(bad: list[int]) -> None:
    """Default report for non-finite statistics (NaN/Inf in the data or an overflow)."""
    raise InputError(
        "X",
        "gives means or scatter matrices that are not finite (NaN/Inf in the data, or "
        "values so large that their squares overflow: rescale the data or use "
        "precision='float64')",
        [(i,) for i in bad],
    )


def check_stats(mean: Array, total: Array, on_bad: Callable[[list[int]], None]) -> None:
    """Finite means and trace imply finite scatter (|S_ij| <= sqrt(S_ii S_jj)): one cheap test
    on (B, D) numbers instead of a pass over the data; ``on_bad`` gets the bad datasets."""
    if math.isfinite(float(mean.sum()) + float(total.sum())):
        return  # every entry finite (a sum that overflows takes the test below)
    xp = lib(total)
    bad = ~(xp.isfinite(like(mean, total)).all(-1) & xp.isfinite(total))
    if bool(bad.any()):
        on_bad(indices(bad))
        overflow(indices(bad))


def _eigh(a: torch.Tensor, eigh_kw: dict[str, Any]) -> tuple[Array, Array]:
    """The core's eigh of the scatter or Gram matrices ``a``, ascending, where the
    bookkeeping runs (:func:`~spectra.pca._host.host`)."""
    # symmetric by construction and checked finite: skip the core's input scan by default
    w, v = eigh(a, **{"check": False, **eigh_kw})
    return host(w), host(v)


def from_scatter(
    count: torch.Tensor,
    mean: torch.Tensor,
    scatter: torch.Tensor,
    spec: Any,
    eigh_kw: dict[str, Any],
    on_bad: Callable[[list[int]], None] = overflow,
) -> PCAFit:
    """Covariance route: one batched eigh of the ``(B, D, D)`` scatter matrices."""
    d = scatter.shape[-1]
    count = host(count)
    check_counts(count, spec, d)
    total = host(scatter.diagonal(dim1=-2, dim2=-1).sum(-1))
    check_stats(mean, total, on_bad)
    w, v = _eigh(scatter, eigh_kw)
    lam = drop_roundoff(flip_last(w), d)
    rank = at_most(count, d)
    return finish(count, mean, lam, total, rank, spec, lambda kmax: flip_last(v[..., d - kmax :]))


def complete(vecs: Array, good: Array) -> Array:
    """Replace the columns outside ``good`` by an orthonormal complement of the good ones.

    Good columns come first in each dataset (descending variance), so the Householder QR
    of the matrix with the bad columns zeroed continues the basis with unit vectors
    orthogonal to the good columns, deterministically (torch's QR, in ``vecs``' kind).
    """
    if bool(good.all()):
        return vecs
    vecs = vecs * good[:, None, :]
    q = like(torch.linalg.qr(as_torch(vecs), mode="complete")[0], vecs)
    return lib(vecs).where(good[:, None, :], vecs, q[..., : vecs.shape[-1]])


def ill_conditioned(lam: Array, rank: Array | None = None) -> Array:
    """``(B,)`` True where the covariance route loses digits: ``lambda_max / lambda_min``
    (over the non-zero eigenvalues) above ``eps^(-1/3)`` (1.6e5 in float64, 203 in float32),
    or, given the expected ``rank`` ``(B,)``, fewer non-zero eigenvalues than that (the
    route rounded a small variance to 0, which the SVD route may still resolve).

    The covariance route's relative error in ``lambda_min`` is ``~eps kappa``: below the
    threshold it stays under ``eps^(2/3)`` (4e-11 in float64), the SVD route's error
    ``~eps sqrt(kappa)`` under ``eps^(5/6)``.
    """
    if 0 in lam.shape:
        return flags(lam.sum(-1), False)
    xp = lib(lam)
    limit = eps(lam) ** (-1.0 / 3.0)
    positive = lam > 0
    low = row_min(xp.where(positive, lam, float("inf")))
    some = positive.any(-1)
    bad = some & (lam[:, 0] > limit * low)
    if rank is not None:
        bad = bad | (some & (positive.sum(-1) < rank))
    return bad


def surely_ill_conditioned(diagonal: Array, count: Array) -> Array:
    """``(B,)`` True where the covariance route's spectrum is sure to be
    :func:`ill_conditioned`, from the scatter matrices' diagonals ``(B, D)`` alone (the
    columns' sums of squares): with ``n_samples - 1 >= D`` every eigenvalue is expected
    positive, and ``lambda_max >= max_j S_jj``, ``lambda_min <= min_j S_jj``, so a diagonal
    spread beyond twice the limit (or an exactly zero column) is one in the spectrum too.

    >>> import numpy as np
    >>> surely_ill_conditioned(np.array([[4.0, 1.0], [1e6, 1e-2], [1.0, 0.0]]), np.array([9, 9, 9]))
    array([False,  True,  True])
    """
    d = diagonal.shape[-1]
    if d == 0:
        return count < 0  # no features: nothing to solve
    limit = eps(diagonal) ** (-1.0 / 3.0)
    spread = row_max(diagonal) > 2 * limit * row_min(diagonal)
    return (count - 1 >= d) & spread


def _base_spectrum(
    xc: torch.Tensor, route: str, eigh_kw: dict[str, Any], check: Callable[[Array], None]
) -> tuple[Array, Array, Callable[[int], Array]]:
    """``(lam, total, vectors)`` of the covariance or Gram route (``vectors(kmax)`` raw),
    where the bookkeeping runs; ``check(total)`` runs before the eigh (non-finite
    statistics never reach it)."""
    d = xc.shape[-1]
    if route == "covariance":
        scatter = xc.mT @ xc  # symmetric up to round-off; eigh reads one triangle
        total = host(scatter.diagonal(dim1=-2, dim2=-1).sum(-1))
        check(total)
        w, v = _eigh(scatter, eigh_kw)
        return drop_roundoff(flip_last(w), d), total, lambda kmax: flip_last(v[..., d - kmax :])
    gram = xc @ xc.mT
    total = host(gram.diagonal(dim1=-2, dim2=-1).sum(-1))
    check(total)
    w, u = _eigh(gram, eigh_kw)
    lam, n = drop_roundoff(flip_last(w), d), gram.shape[-1]

    def vectors(kmax: int) -> Array:
        lk = lam[:, :kmax]
        scale = lib(lk).sqrt(lib(lk).where(lk > 0, lk, 1.0))
        lead = as_torch(flip_last(u[..., n - kmax :]))  # the kmax leading, descending
        return like(xc.mT @ lead, lk) / scale[:, None, :]

    return lam, total, vectors


def from_data(
    count: torch.Tensor,
    mean: torch.Tensor,
    xc: torch.Tensor,
    spec: Any,
    route: str,
    eigh_kw: dict[str, Any],
    on_bad: Callable[[list[int]], None] = overflow,
) -> tuple[PCAFit, list[int]]:
    """The exact PCA of centred data ``xc`` ``(B, N, D)`` by ``route``.

    ``"covariance"``: eigh of ``X_c^T X_c``; ``"gram"``: eigh of ``X_c X_c^T`` and
    ``V = X_c^T U / sqrt(w)``; ``"svd"``: QR and the dilation eigh (SVD-accurate, see
    :mod:`spectra.pca._svd`); ``"auto"``: the Gram route when ``N < D``, else the covariance
    route, and the datasets whose spectrum is :func:`ill_conditioned` solved again by the
    SVD route (all of them by it at once where :func:`surely_ill_conditioned` proves each
    one is). Returns the fit and the datasets the SVD route solved.

    Directions with no variance (round-off eigenvalues: centering leaves rank ``N - 1``)
    are filled, where asked for, with an orthonormal complement of the others (as an SVD).
    """
    n, d = xc.shape[-2], xc.shape[-1]
    count = host(count)
    check_counts(count, spec, d)
    rank = at_most(count, d)
    base = route if route != "auto" else ("gram" if n < d else "covariance")
    squares = None
    if route == "auto" and base == "covariance" and xc.shape[0]:
        # the scatter's diagonal without the scatter: where it proves every dataset
        # ill-conditioned, the SVD route at once (the covariance route would redo them all)
        squares = host(xc.square().sum(-2))
        if bool(surely_ill_conditioned(squares, count).all()):
            base = "svd"
    if base == "svd":
        total = squares.sum(-1) if squares is not None else host(xc.square().sum((-2, -1)))
        check_stats(mean, total, on_bad)
        lam, vecs = (host(t) for t in svd_spectrum(xc, eigh_kw))
        redo = list(range(xc.shape[0]))
        exact = flags(count, False)
        return finish_vectors(count, mean, lam, lam.sum(-1), rank, spec, vecs, exact), redo
    check = functools.partial(check_stats, mean, on_bad=on_bad)
    lam, total, vectors = _base_spectrum(xc, base, eigh_kw, check)
    exact = flags(count, base == "covariance")
    # centred data has rank min(N - 1, D) unless its columns are dependent
    expected = at_most(at_least(count - 1, 0), d)
    bad = ill_conditioned(lam, expected) if route == "auto" else flags(count, False)
    redo = indices(bad)
    vecs_fn = vectors
    if redo:
        lam_s, vecs_s = (host(t) for t in svd_spectrum(xc[redo], eigh_kw))
        lam = put_rows(lam, redo, lam_s)
        total = put_rows(total, redo, lam_s.sum(-1))
        exact = exact & ~bad

        def vecs_fn(kmax: int) -> Array:
            return put_rows(vectors(kmax), redo, vecs_s[..., :kmax])

    return finish_vectors(count, mean, lam, total, rank, spec, vecs_fn, exact), redo


def finish_vectors(
    count: Array,
    mean: torch.Tensor,
    lam: Array,
    total: Array,
    rank: Array,
    spec: Any,
    vectors: Array | Callable[[int], Array],
    exact: Array,
) -> PCAFit:
    """:func:`finish`, completing the null columns of the datasets not marked ``exact``
    (whose vectors did not come from an eigh of the scatter matrix itself)."""

    def leading(kmax: int) -> Array:
        vecs = vectors(kmax) if callable(vectors) else vectors[..., :kmax]
        good = (lam[:, :kmax] > 0) | exact[:, None]
        return complete(vecs, good)

    return finish(count, mean, lam, total, rank, spec, leading)


def from_gram(
    count: torch.Tensor,
    mean: torch.Tensor,
    xc: torch.Tensor,
    spec: Any,
    eigh_kw: dict[str, Any],
    on_bad: Callable[[list[int]], None] = overflow,
) -> PCAFit:
    """Gram route for ``N < D``: eigh of ``X_c X_c^T`` (B, N, N); ``V = X_c^T U / sqrt(w)``."""
    return from_data(count, mean, xc, spec, "gram", eigh_kw, on_bad)[0]
