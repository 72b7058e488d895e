"""Divided differences of ``f`` at computed eigenvalues, accurate at every gap and every shift.

The Daleckii-Krein backward of :func:`spectra.matrix_function` needs the Loewner matrix
``F_ij = f[w_i, w_j]`` and, for second derivatives, ``T_ikj = f[w_i, w_k, w_j]``. Both must
not depend on where the spectrum sits: the gradient of ``sin(A - c I)`` at ``A + c I`` is
the gradient of ``sin(A)`` at ``A``. So nothing here compares a gap with ``max |w|``
except the tie bound, and nothing evaluates ``f`` or its derivatives away from the
eigenvalues (a midpoint ``(w_i + w_j) / 2`` is rounded to ``eps |w|``, which at
``|w| = 1e12`` moves ``f'`` by ``1e-4 f''``).

Each ``F_ij`` is one of two candidates:

- the quotient ``Q = (f_i - f_j) / (w_i - w_j)``: ``w_i - w_j`` is exact for close
  eigenvalues (Sterbenz), so its error is the rounding of ``f_i`` and ``f_j`` over the
  gap, ``e_Q = 4 eps (|f_i| + |f_j|) / |w_i - w_j|`` (which also bounds ``4 eps |Q|``);
- the corrected trapezoid ``D = (f'_i + f'_j) / 2 - (w_i - w_j)(f''_i - f''_j) / 12``
  (Euler-Maclaurin for ``f[a, b] = mean of f'`` over ``[a, b]``; error ``O(gap^4 f^(5))``,
  no cancellation), from ``f'`` and ``f''`` at the eigenvalues themselves.

A screen keeps ``Q`` wherever ``e_Q`` is already below ``4 SCREEN eps`` times the size of
``f'`` (most pairs of a spread spectrum: the cost stays that of the plain quotient). The
other pairs take ``D`` where the eigenvalues are tied, ``|w_i - w_j| <= eps max|w|`` (what
the eigenvalues' own rounding, ``eps ||A||``, cannot resolve), where it agrees with ``Q``
within ``e_Q`` (then it is at least as good), or where its estimated truncation error
``|c|^2 / mean |f'|`` (``c`` the correction term) is below ``e_Q`` and it agrees with
``Q`` within the rounding ``f`` may have from its argument (``eps |w| |f'|`` per point);
elsewhere ``Q``. The decision uses gaps and values of ``f``, never ``|w|`` against a gap
(the tie bound aside), so it is shift invariant. Measured against 60-digit divided
differences at the same floats (offsets 0..1e12, gaps 1e-12..1 of ``f``'s length scale):
at most ~3e-14 (float64) and ~3e-6 (float32) of ``max |F|``, the worst near the crossover
gap ``~ eps^(1/5)``; ``f`` whose length scale is near the tie bound (``exp(100 i w)`` at
``1e12``) lose to ~3e-11.

Second divided differences use ``f[x, y, z] = (f[x, y] - f[y, z]) / (x - z)`` with the two
outermost eigenvalues as ``x, z`` (largest denominator, the symmetric form of the same
number), or ``(f''_i + f''_k + f''_j) / 6`` where the three coincide or that agrees with the
quotient within its propagated rounding (error ``O(spread^2 f'''')``: ~2e-11 of ``max |T|``
at worst in float64, ~1e-5 in float32).
"""

from __future__ import annotations

import torch


def _real_eps(x: torch.Tensor) -> float:
    return float(torch.finfo(x.real.dtype if x.is_complex() else x.dtype).eps)


def _tie_bound(w: torch.Tensor) -> torch.Tensor:
    """``eps max|w|`` per matrix ``(..., 1)``: gaps below it are within the rounding of the
    eigenvalues themselves (``eps ||A||``; the computed ones carry a few times that)."""
    return torch.finfo(w.dtype).eps * w.abs().amax(-1, keepdim=True)


#: the quotient is taken without a second look where ``|f_i| + |f_j| < SCREEN (|f'_i| +
#: |f'_j|) / 2 * gap``: its error ``4 eps (|f_i| + |f_j|) / gap`` is then below
#: ``4 SCREEN eps`` times the size of the derivatives
SCREEN = 16.0


def _choose(
    gap: torch.Tensor,
    tied: torch.Tensor,
    fi: torch.Tensor,
    fj: torch.Tensor,
    d1i: torch.Tensor,
    d1j: torch.Tensor,
    d2i: torch.Tensor | None,
    d2j: torch.Tensor | None,
    awi: torch.Tensor,
    awj: torch.Tensor,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(F, e)`` for a list of pairs (1-D tensors): the rule of the module docstring."""
    tiny = torch.finfo(gap.dtype).tiny
    agap = gap.abs()
    inv = agap.reciprocal()  # inf on exact ties, which are tied: the quotient is never used
    quotient = (fi - fj) / gap
    e_q = 4 * eps * (fi.abs() + fj.abs()) * inv
    mean_d = 0.5 * (d1i + d1j)
    mean_ad = 0.5 * (d1i.abs() + d1j.abs())
    if d2i is None or d2j is None:
        derivative = mean_d
        e_d = torch.full_like(agap, float("inf"))
    else:
        correction = gap * (d2i - d2j) / 12
        derivative = mean_d - correction
        e_d = correction.abs().square() / mean_ad.clamp_min(tiny)
    # the rounding f may take from its own argument, eps |w| |f'| per point (f(100 w), ...)
    e_arg = e_q + 4 * eps * (awi * d1i.abs() + awj * d1j.abs()) * inv
    disagreement = (quotient - derivative).abs()
    use_d = tied | (disagreement <= e_q) | ((e_d <= e_q) & (disagreement <= e_arg))
    # fmin, not minimum: e_q is NaN at an exact tie of zero values
    noise_d = 4 * eps * (mean_ad + (derivative - mean_d).abs()) + torch.fmin(e_d, e_q)
    return torch.where(use_d, derivative, quotient), torch.where(use_d, noise_d, e_q)


def loewner(
    w: torch.Tensor,
    fw: torch.Tensor,
    dfw: torch.Tensor,
    d2fw: torch.Tensor | None = None,
    noise: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(F, e)``: the Loewner matrix ``F_ij = f[w_i, w_j]`` and (``noise=True``) an
    estimate of its error, else ``None``.

    ``w`` ``(..., n)`` real, ``fw``, ``dfw``, ``d2fw`` the values of ``f``, ``f'``, ``f''`` at
    ``w`` (real or complex; ``d2fw=None`` when ``f`` is not twice differentiable: the
    trapezoid then goes uncorrected). See the module docstring for the rule; a cheap screen
    (:data:`SCREEN`) settles the pairs whose quotient is at rounding level, the others (near
    ties, typically few) get the full comparison.
    """
    eps = max(_real_eps(fw), _real_eps(dfw))
    gap = w.unsqueeze(-1) - w.unsqueeze(-2)
    out = (fw.unsqueeze(-1) - fw.unsqueeze(-2)) / gap
    afw, adf = fw.abs(), (0.5 * SCREEN) * dfw.abs()
    size = afw.unsqueeze(-1) + afw.unsqueeze(-2)
    # reviewed: near ties, exact ties (0 >= 0) and anything NaN (an infinite f' at a tie)
    review = ~(size < (adf.unsqueeze(-1) + adf.unsqueeze(-2)) * gap.abs())
    err = 4 * eps * size / gap.abs() if noise else None
    b, i, j = review.reshape(-1, *review.shape[-2:]).nonzero(as_tuple=True)
    if b.numel():
        n = w.shape[-1]
        # one gather per side: (w, f, f', f'') stacked in a dtype that holds all four
        # exactly (complex when f is)
        common = torch.promote_types(torch.promote_types(w.dtype, fw.dtype), dfw.dtype)
        cols = [w.to(common), fw.to(common), dfw.to(common)]
        if d2fw is not None:
            cols.append(d2fw.to(common))
        table = torch.stack(cols, -1).reshape(-1, n, len(cols))
        left, right = table[b, i], table[b, j]
        wi, wj = left[:, 0].real, right[:, 0].real
        tau = _tie_bound(w.reshape(-1, n))[b, 0]
        g = wi - wj
        value, e = _choose(
            g,
            g.abs() <= tau,
            left[:, 1],
            right[:, 1],
            left[:, 2],
            right[:, 2],
            None if d2fw is None else left[:, 3],
            None if d2fw is None else right[:, 3],
            wi.abs(),
            wj.abs(),
            eps,
        )
        out[review] = value.to(out.dtype)
        if err is not None:
            err[review] = e.to(err.dtype)
    return out, err


def divided_differences(
    w: torch.Tensor, fw: torch.Tensor, dfw: torch.Tensor, d2fw: torch.Tensor | None = None
) -> torch.Tensor:
    """The Loewner matrix ``F_ij = f[w_i, w_j]`` (``f'(w_i)`` on ties), shift invariant.

    Parameters
    ----------
    w : torch.Tensor ``(..., n)``, real eigenvalues.
    fw, dfw : ``f(w)`` and ``f'(w)`` (real or complex).
    d2fw : ``f''(w)``, or ``None`` (then the near-tie formula is the plain trapezoid).

    Returns
    -------
    torch.Tensor ``(..., n, n)``

    Examples
    --------
    >>> import torch
    >>> from spectra.core._pipeline._divided_differences import divided_differences
    >>> w = torch.tensor([1e8, 1e8 + 1], dtype=torch.float64)
    >>> f = torch.sin(w - 1e8)
    >>> divided_differences(w, f, torch.cos(w - 1e8), -f)[0, 1].item()  # sin(1) / 1
    0.8414709848078965
    """
    return loewner(w, fw, dfw, d2fw)[0]


def second_divided_differences(
    w: torch.Tensor, fw: torch.Tensor, dfw: torch.Tensor, d2fw: torch.Tensor
) -> torch.Tensor:
    """``T[..., i, k, j] = f[w_i, w_k, w_j]`` (``f''/2`` where all three tie), shift invariant.

    Parameters
    ----------
    w : torch.Tensor ``(..., n)``, real eigenvalues.
    fw, dfw, d2fw : ``f``, ``f'`` and ``f''`` at ``w``.

    Returns
    -------
    torch.Tensor ``(..., n, n, n)``

    Examples
    --------
    >>> import torch
    >>> from spectra.core._pipeline._divided_differences import second_divided_differences
    >>> w = torch.tensor([0.0, 1.0, 3.0], dtype=torch.float64) + 1e8
    >>> x = w - 1e8
    >>> t = second_divided_differences(w, x**2, 2 * x, 2 + 0 * x)  # f[a, b, c] of x^2 is 1
    >>> torch.allclose(t, torch.ones(3, 3, 3, dtype=torch.float64))
    True
    """
    f2, noise = loewner(w, fw, dfw, d2fw, noise=True)
    assert noise is not None
    eps = max(_real_eps(fw), _real_eps(d2fw))
    wi, wk, wj = w[..., :, None, None], w[..., None, :, None], w[..., None, None, :]
    f_ik, f_kj, f_ij = f2.unsqueeze(-1), f2.unsqueeze(-3), f2.unsqueeze(-2)
    n_ik, n_kj, n_ij = noise.unsqueeze(-1), noise.unsqueeze(-3), noise.unsqueeze(-2)
    # f[x, y, z] = (f[x, y] - f[y, z]) / (x - z) with x, z the outermost pair
    d_ij, d_kj, d_ik = wi - wj, wk - wj, wi - wk
    a_ij, a_kj, a_ik = d_ij.abs(), d_kj.abs(), d_ik.abs()
    by_ij = (a_ij >= a_kj) & (a_ij >= a_ik)  # k in the middle
    by_kj = ~by_ij & (a_kj >= a_ik)  # i in the middle: (f[k, i] - f[i, j]) / (w_k - w_j)
    num = torch.where(by_ij, f_ik - f_kj, torch.where(by_kj, f_ik - f_ij, f_ij - f_kj))
    num_noise = torch.where(by_ij, n_ik + n_kj, torch.where(by_kj, n_ik + n_ij, n_ij + n_kj))
    den = torch.where(by_ij, d_ij, torch.where(by_kj, d_kj, d_ik))
    spread = den.abs()
    safe = torch.where(spread > 0, den, torch.ones_like(den))
    quotient = num / safe
    e_q = num_noise / spread.clamp_min(torch.finfo(w.dtype).tiny) + 2 * eps * quotient.abs()
    d2i, d2k, d2j = d2fw[..., :, None, None], d2fw[..., None, :, None], d2fw[..., None, None, :]
    derivative = (d2i + d2k + d2j) / 6
    # no tie bound here: the quotient of the (accurate) first differences holds down to
    # spreads where its propagated rounding e_q exceeds its disagreement with the mean of
    # f''/2, whose own error O(spread^2 f'''') would show at the tie bound for a fast f
    use_d = (spread == 0) | ((quotient - derivative).abs() <= e_q)
    return torch.where(use_d, derivative, quotient)
