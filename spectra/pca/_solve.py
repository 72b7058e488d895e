"""The PCA math: one batched eigh of scatter (or Gram) matrices, then sklearn's conventions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import torch

from ..core import eigh
from ..core.domain import InputError
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


def svd_flip_rows(components: torch.Tensor) -> torch.Tensor:
    """sklearn's ``svd_flip(u_based_decision=False)``: the largest-|entry| of each row > 0.

    Ties go to the first maximal entry (``argmax``), exactly as sklearn; zero rows stay zero.
    """
    if components.numel() == 0:
        return components
    idx = components.abs().argmax(-1, keepdim=True)
    pivot = components.gather(-1, idx)
    return components * torch.where(pivot < 0, -1.0, 1.0).to(components.dtype)


def choose_k(
    ratio: torch.Tensor, rank: torch.Tensor, spec: Any, ev: torch.Tensor, count: torch.Tensor
) -> torch.Tensor:
    """Per-dataset number of components (B,) for ``n_components`` ``spec``.

    ``ratio`` (B, R) are the explained-variance ratios in descending order and ``rank``
    (B,) the number of meaningful ones, ``min(n_samples, n_features)``; ``ev`` (B, R) the
    explained variances and ``count`` (B,) the sample counts (for ``"mle"``).
    """
    if spec is None:
        return rank.clone()
    if isinstance(spec, str):  # "mle": Minka's MLE, which needs n_samples >= n_features
        from ._likelihood import infer_dimension

        if ev.shape[0] == 0:
            return rank.clone()
        return infer_dimension(ev, count).to(rank)
    if isinstance(spec, Integral):
        k = int(spec)
        bad = torch.nonzero(rank < k).flatten().tolist()
        if bad:
            lows = sorted({int(rank[i]) for i in bad})
            raise InputError(
                f"n_components={k}",
                "must be <= min(n_samples, n_features) for every dataset; "
                f"these datasets allow only {lows}",
                [(i,) for i in bad],
            )
        return torch.full_like(rank, k)
    cum = torch.cumsum(ratio.nan_to_num(0.0), -1)
    cols = torch.arange(ratio.shape[-1], device=ratio.device)
    cum = torch.where(cols < rank[:, None], cum, torch.inf).contiguous()
    target = torch.full((ratio.shape[0], 1), float(spec), dtype=cum.dtype, device=cum.device)
    counts = torch.searchsorted(cum, target, right=True).squeeze(-1) + 1
    return torch.minimum(counts, rank)


def finish(
    count: torch.Tensor,
    mean: torch.Tensor,
    lam: torch.Tensor,
    total: torch.Tensor,
    rank: torch.Tensor,
    spec: Any,
    vectors: Callable[[int], torch.Tensor],
) -> PCAFit:
    """sklearn's attributes from the descending eigenvalues of the scatter matrices.

    ``lam`` (B, R): eigenvalues of ``X_c^T X_c`` (= squared singular values), descending;
    ``total`` (B,): its trace; ``rank`` (B,): ``min(n_samples, n_features)``;
    ``vectors(kmax)`` returns the matching leading component columns ``(B, D, kmax)``.
    """
    dof = (count - 1).to(lam.dtype)[:, None]
    lam = lam.clamp(min=0)
    ev_all = lam / dof
    total_var = total.clamp(min=0) / dof[:, 0]
    ratio_all = ev_all / total_var[:, None]
    k = choose_k(ratio_all, rank, spec, ev_all, count)
    if k.numel():
        kmax = int(k.max())
    else:  # no datasets: keep the requested width
        kmax = int(spec) if isinstance(spec, Integral) and not isinstance(spec, bool) else 0
    cols = torch.arange(lam.shape[-1], device=lam.device)
    tail = (cols >= k[:, None]) & (cols < rank[:, None])
    left = (rank - k).to(lam.dtype)
    noise = torch.where(
        left > 0, (ev_all * tail).sum(-1) / left.clamp(min=1), torch.zeros_like(left)
    )
    mask = cols[:kmax] < k[:, None]
    comps = svd_flip_rows(vectors(kmax).mT) * mask[..., None]
    zero = torch.zeros((), dtype=lam.dtype, device=lam.device)
    return PCAFit(
        mean=mean,
        components=comps,
        explained_variance=torch.where(mask, ev_all[:, :kmax], zero),
        explained_variance_ratio=torch.where(mask, ratio_all[:, :kmax], zero),
        singular_values=torch.where(mask, lam[:, :kmax].sqrt(), zero),
        noise_variance=noise,
        n_components=k,
        n_samples=count.to(torch.int64),
        mask=mask,
    )


def drop_roundoff(lam: torch.Tensor, n_features: int) -> torch.Tensor:
    """Descending eigenvalues ``lam`` (B, R) with the round-off-level ones set to exactly 0.

    Below ``10 max(R, D) eps lam_max`` an eigenvalue of a scatter or Gram matrix carries no
    information (an SVD would give a singular value at round-off too); zeroing it keeps
    ``singular_values_`` and the Gram route's null directions well defined.
    """
    if lam.numel() == 0:
        return lam
    eps = torch.finfo(lam.dtype).eps
    floor = 10 * max(lam.shape[-1], n_features) * eps * lam[:, :1].clamp(min=0)
    return torch.where(lam > floor, lam, torch.zeros_like(lam))


def check_counts(count: torch.Tensor, spec: Any = None, n_features: int = 0) -> None:
    """PCA needs two samples per dataset (the variance divides by ``n_samples - 1``);
    ``n_components="mle"`` needs ``n_samples >= n_features`` (as sklearn)."""
    bad = torch.nonzero(count < 2).flatten().tolist()
    if bad:
        have = sorted({int(count[i]) for i in bad})
        raise InputError(
            "X",
            f"has datasets with fewer than 2 samples (PCA needs at least 2 samples per "
            f"dataset; these have {have})",
            [(i,) for i in bad],
        )
    if isinstance(spec, str):
        bad = torch.nonzero(count < n_features).flatten().tolist()
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


def check_stats(
    mean: torch.Tensor, total: torch.Tensor, on_bad: Callable[[list[int]], None]
) -> None:
    """Finite means and trace imply finite scatter (|S_ij| <= sqrt(S_ii S_jj)): one cheap test
    on (B, D) numbers instead of a pass over the data; ``on_bad`` gets the bad datasets."""
    bad = ~(torch.isfinite(mean).all(-1) & torch.isfinite(total))
    if bool(bad.any()):
        on_bad(torch.nonzero(bad).flatten().tolist())
        overflow(torch.nonzero(bad).flatten().tolist())


def _eigh(a: torch.Tensor, eigh_kw: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    # symmetric by construction and checked finite: skip the core's input scan by default
    w, v = eigh(a, **{"check": False, **eigh_kw})
    return w, v


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
    check_counts(count, spec, d)
    total = scatter.diagonal(dim1=-2, dim2=-1).sum(-1)
    check_stats(mean, total, on_bad)
    w, v = _eigh(scatter, eigh_kw)
    lam = drop_roundoff(w.flip(-1), d)
    rank = count.clamp(max=d)
    return finish(count, mean, lam, total, rank, spec, lambda kmax: v[..., d - kmax :].flip(-1))


def complete(vecs: torch.Tensor, good: torch.Tensor) -> torch.Tensor:
    """Replace the columns outside ``good`` by an orthonormal complement of the good ones.

    Good columns come first in each dataset (descending variance), so the Householder QR
    of the matrix with the bad columns zeroed continues the basis with unit vectors
    orthogonal to the good columns, deterministically.
    """
    if bool(good.all()):
        return vecs
    vecs = vecs * good[:, None, :]
    q, _ = torch.linalg.qr(vecs, mode="complete")
    return torch.where(good[:, None, :], vecs, q[..., : vecs.shape[-1]])


def ill_conditioned(lam: torch.Tensor, rank: torch.Tensor | None = None) -> torch.Tensor:
    """``(B,)`` True where the covariance route loses digits: ``lambda_max / lambda_min``
    (over the non-zero eigenvalues) above ``eps^(-1/3)`` (1.6e5 in float64, 203 in float32),
    or, given the expected ``rank`` ``(B,)``, fewer non-zero eigenvalues than that (the
    route rounded a small variance to 0, which the SVD route may still resolve).

    The covariance route's relative error in ``lambda_min`` is ``~eps kappa``: below the
    threshold it stays under ``eps^(2/3)`` (4e-11 in float64), the SVD route's error
    ``~eps sqrt(kappa)`` under ``eps^(5/6)``.
    """
    if lam.numel() == 0:
        return torch.zeros(lam.shape[0], dtype=torch.bool, device=lam.device)
    limit = torch.finfo(lam.dtype).eps ** (-1.0 / 3.0)
    positive = lam > 0
    low = torch.where(positive, lam, torch.inf).amin(-1)
    bad = positive.any(-1) & (lam[:, 0] > limit * low)
    if rank is not None:
        bad = bad | (positive.any(-1) & (positive.sum(-1) < rank))
    return bad


def _base_spectrum(
    xc: torch.Tensor, route: str, eigh_kw: dict[str, Any], check: Callable[[torch.Tensor], None]
) -> tuple[torch.Tensor, torch.Tensor, Callable[[int], torch.Tensor]]:
    """``(lam, total, vectors)`` of the covariance or Gram route (``vectors(kmax)`` raw);
    ``check(total)`` runs before the eigh (non-finite statistics never reach it)."""
    d = xc.shape[-1]
    if route == "covariance":
        scatter = xc.mT @ xc  # symmetric up to round-off; eigh reads one triangle
        total = scatter.diagonal(dim1=-2, dim2=-1).sum(-1)
        check(total)
        w, v = _eigh(scatter, eigh_kw)
        return drop_roundoff(w.flip(-1), d), total, lambda kmax: v[..., d - kmax :].flip(-1)
    gram = xc @ xc.mT
    total = gram.diagonal(dim1=-2, dim2=-1).sum(-1)
    check(total)
    w, u = _eigh(gram, eigh_kw)
    lam, u = drop_roundoff(w.flip(-1), d), u.flip(-1)

    def vectors(kmax: int) -> torch.Tensor:
        lk = lam[:, :kmax]
        scale = torch.where(lk > 0, lk, 1.0).sqrt()
        return (xc.mT @ u[..., :kmax]) / scale[:, None, :]

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
    SVD route. Returns the fit and the datasets the SVD route solved.

    Directions with no variance (round-off eigenvalues: centering leaves rank ``N - 1``)
    are filled, where asked for, with an orthonormal complement of the others (as an SVD).
    """
    n, d = xc.shape[-2], xc.shape[-1]
    check_counts(count, spec, d)
    rank = count.clamp(max=d)
    base = route if route != "auto" else ("gram" if n < d else "covariance")
    if base == "svd":
        check_stats(mean, xc.square().sum((-2, -1)), on_bad)
        lam, vecs = svd_spectrum(xc, eigh_kw)
        redo = list(range(xc.shape[0]))
        exact = torch.zeros_like(count, dtype=torch.bool)
        return finish_vectors(count, mean, lam, lam.sum(-1), rank, spec, vecs, exact), redo
    lam, total, vectors = _base_spectrum(
        xc, base, eigh_kw, lambda total: check_stats(mean, total, on_bad)
    )
    exact = torch.full_like(count, base == "covariance", dtype=torch.bool)
    # centred data has rank min(N - 1, D) unless its columns are dependent
    expected = (count - 1).clamp(min=0, max=d)
    bad = ill_conditioned(lam, expected) if route == "auto" else torch.zeros_like(exact)
    redo = torch.nonzero(bad).flatten().tolist()
    vecs_fn = vectors
    if redo:
        idx = torch.nonzero(bad).flatten()
        lam_s, vecs_s = svd_spectrum(xc[idx], eigh_kw)
        lam = lam.index_copy(0, idx, lam_s)
        total = total.index_copy(0, idx, lam_s.sum(-1))
        exact = exact & ~bad

        def vecs_fn(kmax: int) -> torch.Tensor:
            return vectors(kmax).index_copy(0, idx, vecs_s[..., :kmax])

    return finish_vectors(count, mean, lam, total, rank, spec, vecs_fn, exact), redo


def finish_vectors(
    count: torch.Tensor,
    mean: torch.Tensor,
    lam: torch.Tensor,
    total: torch.Tensor,
    rank: torch.Tensor,
    spec: Any,
    vectors: torch.Tensor | Callable[[int], torch.Tensor],
    exact: torch.Tensor,
) -> PCAFit:
    """:func:`finish`, completing the null columns of the datasets not marked ``exact``
    (whose vectors did not come from an eigh of the scatter matrix itself)."""

    def leading(kmax: int) -> torch.Tensor:
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
