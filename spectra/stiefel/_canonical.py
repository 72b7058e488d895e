"""The canonical metric on the Stiefel manifold (geoopt's default ``Stiefel()``).

``<u, v>_X = Re tr(u^H (I - X X^H / 2) v)``; the Riemannian gradient of a function with
Euclidean gradient ``G`` is ``G - X G^H X``; the Cayley retraction (geoopt's
``CanonicalStiefel.retr``) is

    R_X(u) = (I - A/2)^(-1) (I + A/2) X,    A = u X^H - X u^H,

and the vector transport that follows it applies the same Cayley operator to ``v``. Here the
``n x n`` solve is never formed: ``A = U V^H`` with ``U = [u, X]``, ``V = [X, -u]`` (rank
``2p``), and the Sherman-Morrison-Woodbury identity gives

    (I - A/2)^(-1) (I + A/2) Z = Z + U (I - V^H U / 2)^(-1) V^H Z,

one ``2p x 2p`` solve per matrix for the point and every transported vector together
(where ``2p >= n`` the ``n x n`` solve is the smaller one and is used instead).
"""

from __future__ import annotations

import numpy as np
import torch

from ._retractions import _fanned


def canonical_rgrad(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Riemannian gradient under the canonical metric: ``G - X G^H X``."""
    return g - x @ (g.mH @ x)


def canonical_inner(
    x: torch.Tensor, u: torch.Tensor, v: torch.Tensor, keepdim: bool
) -> torch.Tensor:
    """``Re tr(u^H v) - Re tr((X^H u)^H (X^H v)) / 2`` per matrix."""
    xu, xv = x.mH @ u, x.mH @ v

    def re_dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        prod = a.conj() * b if a.is_complex() or b.is_complex() else a * b
        return (prod.real if prod.is_complex() else prod).sum((-2, -1), keepdim=keepdim)

    return re_dot(u, v) - 0.5 * re_dot(xu, xv)


def _cayley_apply(x: torch.Tensor, u: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``(I - A/2)^(-1) (I + A/2) Z`` with ``A = u X^H - X u^H``: the ``2p x 2p`` form when
    ``2p < n``, else the ``n x n`` one (no smaller)."""
    n, p = x.shape[-2:]
    if 2 * p >= n:
        a = u @ x.mH - x @ u.mH
        eye_n = torch.eye(n, dtype=x.dtype, device=x.device)
        return torch.linalg.solve(eye_n - 0.5 * a, z + 0.5 * (a @ z))
    left = torch.cat([u, x], dim=-1)  # U
    right = torch.cat([x, -u], dim=-1)  # V
    eye = torch.eye(2 * p, dtype=x.dtype, device=x.device)
    lhs = eye - 0.5 * (right.mH @ left)
    return z + left @ torch.linalg.solve(lhs, right.mH @ z)


def cayley_step(
    x: torch.Tensor, u: torch.Tensor, vectors: list[torch.Tensor], tol: float
) -> tuple[torch.Tensor, list[torch.Tensor]] | None:
    """One CPU ``(n, p)`` matrix's Cayley point and its ``vectors`` moved by the same
    operator (:func:`cayley_transport`), in one ``2p x 2p`` solve, with ``X``'s distance
    from the manifold (``max |X^H X - I|``) read from that system's own ``X^H X`` block:
    an optimizer step on one parameter. On NumPy arrays: at ``St(50, 5)`` each of the
    step's ~15 small operations costs ~1 us there against 3-10 us as a torch call
    (``benchmarks/RESULTS.md``, 2026-12-06); the results agree with the torch route to
    rounding. ``None`` where ``2p >= n`` (the ``n x n`` form), that distance is above
    ``tol`` or not finite, the system is singular or the result not finite: the caller's
    checked route then decides and names what is wrong.

    >>> x = torch.eye(5, 2, dtype=torch.float64)
    >>> u = torch.zeros(5, 2, dtype=torch.float64)
    >>> y, _ = cayley_step(x, u, [], 1e-5)
    >>> torch.equal(y, x)
    True
    """
    n, p = x.shape
    if 2 * p >= n:
        return None
    xn, un = _array(x), _array(u)
    left = np.concatenate([un, xn], axis=1)  # U
    right_h = np.concatenate([xn, -un], axis=1).conj().T  # V^H
    m = right_h @ left  # [[X^H u, X^H X], [-u^H u, -u^H X]]
    gram = m[:p, p:].copy()
    gram.flat[:: p + 1] -= 1
    if not np.abs(gram).max() <= tol:  # (NaN fails)
        return None
    z = np.concatenate([xn, *(_array(v) for v in vectors)], axis=1) if vectors else xn
    lhs = m * -0.5  # I - V^H U / 2
    lhs.flat[:: 2 * p + 1] += 1
    try:
        out = z + left @ np.linalg.solve(lhs, right_h @ z)
    except np.linalg.LinAlgError:  # singular
        return None
    if not np.isfinite(out).all():
        return None
    got = torch.from_numpy(out)
    return got[:, :p], [got[:, p * i : p * (i + 1)] for i in range(1, len(vectors) + 1)]


def _array(t: torch.Tensor) -> np.ndarray:
    """``t``'s values as a NumPy array (a view where its layout allows)."""
    return t.detach().resolve_conj().resolve_neg().numpy()


def _cayley_point(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    return _cayley_apply(x, u, x)


def retract_cayley_canonical(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """geoopt's ``CanonicalStiefel.retr``: ``(I - A/2)^(-1)(I + A/2) X``, ``A = u X^H - X u^H``
    (a ``2p x 2p`` solve per matrix instead of geoopt's ``n x n``)."""
    return _fanned(_cayley_point, x, u)


def cayley_transport(
    x: torch.Tensor, u: torch.Tensor, vectors: list[torch.Tensor]
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The retracted point and ``vectors`` moved by the same Cayley operator (geoopt's
    ``retr_transp`` / ``transp_follow_retr``), in one solve."""
    p = x.shape[-1]
    shape = torch.broadcast_shapes(x.shape, u.shape, *(v.shape for v in vectors))
    z = torch.cat([x.expand(shape)] + [v.expand(shape) for v in vectors], dim=-1)
    out = _cayley_apply(x.expand(shape), u.expand(shape), z)
    parts = out.split(p, dim=-1)
    return parts[0], list(parts[1:])


__all__ = [
    "canonical_inner",
    "canonical_rgrad",
    "cayley_step",
    "cayley_transport",
    "retract_cayley_canonical",
]
