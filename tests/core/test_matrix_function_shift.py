"""Shift invariance of matrix_function gradients (issue 24): divided differences at every gap.

The gradient of ``f(A)`` is ``V (conj(F) o (V^H G V)) V^H`` with ``F_ij = f[w_i, w_j]``; it
must not depend on where the spectrum sits: for ``f(w) = g(w - c)`` the gradient at
``A + c I`` is the gradient of ``g`` at ``A``. The reference is exact: divided differences at
the very floating-point eigenvalues, in 60-digit arithmetic (mpmath), with closed-form
derivatives at confluent points. Offsets 0..1e12, gaps 1e-12..1 of ``f``'s length scale, a
real and a complex ``f``, float32 and float64.
"""

from __future__ import annotations

import itertools

import pytest
import torch

import spectra
from spectra.core._matrix_function import _derivatives
from spectra.core._pipeline._divided_differences import (
    divided_differences,
    second_divided_differences,
)

mpmath = pytest.importorskip("mpmath")

OFFSETS = [0.0, 1.0, 1e4, 1e8, 1e12]
RATIOS = [0.0, 1e-12, 1e-9, 1e-6, 1e-4, 1e-3, 1e-2, 0.1, 1.0]


def _families():
    """name -> (length scale, torch f(w, c), [exact f, f', f''/2](x, c) in mpmath)."""
    i100 = mpmath.mpc(0, 100)
    return {
        "sin": (
            1.0,
            lambda w, c: torch.sin(w - c),
            [
                lambda x, c: mpmath.sin(x - c),
                lambda x, c: mpmath.cos(x - c),
                lambda x, c: -mpmath.sin(x - c) / 2,
            ],
        ),
        "exp": (
            1.0,
            lambda w, c: torch.exp(w - c),
            [lambda x, c: mpmath.exp(x - c)] * 2 + [lambda x, c: mpmath.exp(x - c) / 2],
        ),
        "exp100i": (  # complex valued, length scale 0.01
            0.01,
            lambda w, c: torch.exp(100j * (w - c)),
            [
                lambda x, c: mpmath.exp(i100 * (x - c)),
                lambda x, c: i100 * mpmath.exp(i100 * (x - c)),
                lambda x, c: i100**2 * mpmath.exp(i100 * (x - c)) / 2,
            ],
        ),
    }


def _exact_dd(points, derivs, c):
    """f[x_0, ..., x_m] at mpmath points (exact floats), in 60 digits (mpmath's working
    precision is set only inside this call), confluent limits from the closed forms."""
    with mpmath.workdps(60):
        return _dd(points, derivs, mpmath.mpf(c))


def _dd(points, derivs, c):
    xs = sorted(points)
    if xs[0] == xs[-1]:
        return derivs[len(xs) - 1](xs[0], c)
    return (_dd(xs[1:], derivs, c) - _dd(xs[:-1], derivs, c)) / (xs[-1] - xs[0])


def _spectrum(dtype, scale, c, r):
    """A cluster of three (gaps r), a pair (gap r) one length scale away, shifted by c, as
    floats of ``dtype``; the offset as the float the torch ``f`` subtracts."""
    base = torch.tensor([0.0, r, 2 * r, 1.0, 1.0 + r], dtype=torch.float64) * scale
    w = (torch.tensor(c, dtype=torch.float64) + base).to(dtype)
    return w, torch.tensor(c, dtype=dtype).item()


TOL1 = {torch.float32: 2e-5, torch.float64: 1e-10}
TOL2 = {torch.float32: 1e-4, torch.float64: 1e-8}


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("family", ["sin", "exp", "exp100i"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_divided_differences_match_exact_at_every_gap_and_offset(dtype, family, offset):
    scale, f, derivs = _families()[family]
    for r in RATIOS:
        w, c = _spectrum(dtype, scale, offset, r)
        fw, d1, d2 = _derivatives(lambda x, c=c: f(x, c), w)
        got = divided_differences(w, fw, d1, d2)
        pts, cm = [mpmath.mpf(float(x)) for x in w], c
        ref = [[complex(_exact_dd([p, q], derivs, cm)) for q in pts] for p in pts]
        ref_t = torch.tensor(ref, dtype=torch.complex128)
        err = float((got.to(torch.complex128) - ref_t).abs().max())
        assert err <= TOL1[dtype] * float(ref_t.abs().max()), (r, err)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_inverse_square_root_divided_differences_match_the_closed_form(dtype):
    """The Stiefel polar factor's ``l^(-1/2)`` at Gram spectra ``~ 1`` (tiny steps): against
    ``-1 / (sqrt(a) sqrt(b) (sqrt(a) + sqrt(b)))`` in 60 digits."""
    for r in RATIOS:
        w = (1 + torch.tensor([0.0, r, 2 * r, 0.5, 0.5 + r], dtype=torch.float64)).to(dtype)
        fw, d1, d2 = _derivatives(torch.rsqrt, w)
        got = divided_differences(w, fw, d1, d2).double()
        with mpmath.workdps(60):
            roots = [mpmath.sqrt(mpmath.mpf(float(x))) for x in w]
            ref = torch.tensor(
                [[float(-1 / (p * q * (p + q))) for q in roots] for p in roots],
                dtype=torch.float64,
            )
        err = float((got - ref).abs().max())
        assert err <= TOL1[dtype] * float(ref.abs().max()), (r, err)


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("family", ["sin", "exp100i"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_second_divided_differences_match_exact_at_every_gap_and_offset(dtype, family, offset):
    scale, f, derivs = _families()[family]
    for r in RATIOS:
        w, c = _spectrum(dtype, scale, offset, r)
        fw, d1, d2 = _derivatives(lambda x, c=c: f(x, c), w)
        got = second_divided_differences(w, fw, d1, d2).to(torch.complex128)
        pts, cm = [mpmath.mpf(float(x)) for x in w], c
        n = len(pts)
        ref = torch.zeros(n, n, n, dtype=torch.complex128)
        for i, k, j in itertools.product(range(n), repeat=3):
            ref[i, k, j] = complex(_exact_dd([pts[i], pts[k], pts[j]], derivs, cm))
        top = max(float(ref.abs().max()), float(torch.finfo(dtype).tiny))
        err = float((got - ref).abs().max())
        assert err <= TOL2[dtype] * top, (r, err)


def _exact_gradient(a, f_derivs, c, g):
    """``V (conj(F) o (V^H G V)) V^H`` with the exact F at spectra's own eigenpairs."""
    w, v = spectra.eigh(a)
    pts, cm = [mpmath.mpf(float(x)) for x in w], c
    F = torch.tensor(
        [[complex(_exact_dd([p, q], f_derivs, cm)) for q in pts] for p in pts],
        dtype=torch.complex128,
    )
    vc = v.to(torch.complex128)
    return vc @ (F.conj() * (vc.mH @ g.to(torch.complex128) @ vc)) @ vc.mH


@pytest.mark.parametrize(
    ("family", "offset", "ratio"),
    [
        ("sin", 1e8, 1.0),  # the first example (was 11% off)
        ("exp100i", 1e4, 1.0),  # the second: gaps 0.01 near 1e4 (was 68% off)
        ("sin", 0.0, 1.0),
        ("sin", 1e4, 1e-3),
        ("exp100i", 1e8, 0.1),
        ("exp", 1e6, 1e-2),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128, torch.float32, torch.complex64])
def test_gradient_equals_exact_daleckii_krein_far_from_zero(dtype, family, offset, ratio):
    scale, f, derivs = _families()[family]
    real = torch.float32 if dtype in (torch.float32, torch.complex64) else torch.float64
    if real == torch.float32 and offset > 1e4:
        pytest.skip("float32 cannot hold gaps of this size at this offset")
    gen = torch.Generator().manual_seed(11)
    wide = torch.complex128 if dtype.is_complex else torch.float64
    q = torch.linalg.qr(torch.randn(5, 5, dtype=wide, generator=gen))[0]
    base = torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0 + ratio], dtype=torch.float64) * scale * ratio
    lam = (offset + base).to(q.dtype)
    a = ((q * lam) @ q.mH).to(dtype)
    a = 0.5 * (a + a.mH)
    c = torch.tensor(offset, dtype=real).item()
    g = torch.randn(a.shape, generator=gen, dtype=torch.float64).to(dtype)
    x = a.clone().requires_grad_()
    y = spectra.matrix_function(x, lambda w: f(w, c))
    (y * g.conj()).sum().real.backward()
    ref = _exact_gradient(a, derivs, c, g)
    if not dtype.is_complex:
        ref = ref.real
    err = float((x.grad.to(ref.dtype) - ref).norm() / ref.norm())
    assert err <= (1e-5 if real == torch.float32 else 1e-12), err


def _signed_permutation(dtype):
    perm = torch.tensor([2, 0, 4, 1, 3])
    p = torch.zeros(5, 5, dtype=dtype)
    phases = [1, -1, 1j, -1j, 1] if dtype.is_complex else [1, -1, -1, 1, 1]
    for row, (col, ph) in enumerate(zip(perm.tolist(), phases, strict=True)):
        p[row, col] = ph
    return p


@pytest.mark.parametrize("family", ["sin", "exp100i"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
def test_gradient_of_shifted_function_at_shifted_matrix_is_unchanged(dtype, family):
    """``A = P diag(c + d) P^H`` with a signed permutation ``P`` is exact in floating point,
    so the gradient of ``g(w - c)`` there and of ``g`` at ``P diag(d) P^H`` must agree."""
    scale, f, _ = _families()[family]
    real = torch.float32 if dtype == torch.float32 else torch.float64
    p = _signed_permutation(dtype)
    g = torch.randn(5, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    g = g.to(dtype)
    offsets = [1.0, 1e4, 1e8, 1e12] if real == torch.float64 else [1.0, 1e2, 1e4]
    for offset, r in itertools.product(offsets, RATIOS[1:]):
        base = torch.tensor([0.0, r, 2 * r, 1.0, 1.0 + r], dtype=torch.float64) * scale
        shifted = (torch.tensor(offset, dtype=torch.float64) + base).to(real)
        c = torch.tensor(offset, dtype=real).item()
        d = shifted - c  # exact: what the shifted spectrum really holds
        grads = []
        for lam, cc in ((shifted, c), (d, 0.0)):
            x = (p @ torch.diag(lam.to(dtype)) @ p.mH).requires_grad_()
            y = spectra.matrix_function(x, lambda w, cc=cc: f(w, cc))
            (y * g.conj()).sum().real.backward()
            grads.append(x.grad)
        top = float(grads[1].abs().max())
        err = float((grads[0] - grads[1]).abs().max())
        assert err <= TOL1[real] * 10 * top, (offset, r, err)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_hessian_vector_product_of_shifted_function_is_unchanged(dtype):
    """The second derivatives (second divided differences) are shift invariant too."""
    p = _signed_permutation(dtype)
    gen = torch.Generator().manual_seed(4)
    weight, direction = (torch.randn(5, 5, generator=gen, dtype=torch.float64) for _ in "wd")
    weight, direction = weight.to(dtype), (direction + direction.T).to(dtype)
    offsets = [1.0, 1e4, 1e8, 1e12] if dtype == torch.float64 else [1.0, 1e2, 1e4]
    for offset, r in itertools.product(offsets, RATIOS[1:]):
        base = torch.tensor([0.0, r, 2 * r, 1.0, 1.0 + r], dtype=torch.float64)
        shifted = (torch.tensor(offset, dtype=torch.float64) + base).to(dtype)
        c = torch.tensor(offset, dtype=dtype).item()
        hvps = []
        for lam, cc in ((shifted, c), (shifted - c, 0.0)):
            x = (p @ torch.diag(lam) @ p.mT).requires_grad_()
            y = spectra.matrix_function(x, lambda w, cc=cc: torch.sin(w - cc))
            (g,) = torch.autograd.grad((y * weight).sum(), x, create_graph=True)
            (hvp,) = torch.autograd.grad((g * direction).sum(), x)
            hvps.append(hvp)
        err = float((hvps[0] - hvps[1]).abs().max())
        assert err <= TOL2[dtype] * float(hvps[1].abs().max()), (offset, r, err)


@pytest.mark.parametrize("offset", [0.0, 1e3])
@pytest.mark.parametrize("case", ["identity", "repeated"])
def test_gradcheck_and_gradgradcheck_at_shifted_degeneracies(case, offset):
    if case == "identity":
        lam = torch.ones(4, dtype=torch.float64)
    else:
        lam = torch.tensor([0.3, 0.3, 0.3 + 1e-9, -0.5], dtype=torch.float64)
    q = torch.linalg.qr(torch.randn(4, 4, generator=torch.Generator().manual_seed(5)).double())[0]
    a = ((q * (offset + lam)) @ q.T).requires_grad_()

    def fn(x):
        s = 0.5 * (x + x.mT)
        return spectra.matrix_function(s, lambda w: torch.sin(w - offset) + (w - offset) ** 3)

    assert torch.autograd.gradcheck(fn, (a,), eps=1e-6, atol=1e-5, rtol=1e-4)
    assert torch.autograd.gradgradcheck(fn, (a,), atol=1e-5, rtol=1e-4)


class _OnceExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):  # type: ignore[override]
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):  # type: ignore[override]
        (y,) = ctx.saved_tensors
        return g * y


def test_once_differentiable_f_keeps_its_exact_gradient_and_refuses_a_second():
    a = torch.eye(3, dtype=torch.float64) + torch.diag(torch.tensor([0.0, 1e-9, 1.0]))
    x = a.clone().requires_grad_()
    (gx,) = torch.autograd.grad(spectra.matrix_function(x, _OnceExp.apply).sum(), x)
    y = a.clone().requires_grad_()
    (gy,) = torch.autograd.grad(torch.linalg.matrix_exp(y).sum(), y)
    torch.testing.assert_close(gx, gy, atol=1e-12, rtol=1e-12)
    x = a.clone().requires_grad_()
    (g,) = torch.autograd.grad(
        spectra.matrix_function(x, _OnceExp.apply).sum(), x, create_graph=True
    )
    with pytest.raises(RuntimeError, match="differentiate twice"):
        g.sum().backward()


def _worst_first_difference_errors() -> None:
    """Print the worst error of F over the gap ratios, per dtype, f and offset (``python
    tests/core/test_matrix_function_shift.py``): the figures docs/guarantees.md quotes."""
    for dtype, family in itertools.product([torch.float64, torch.float32], _families()):
        scale, f, derivs = _families()[family]
        row = []
        for offset in OFFSETS:
            worst = 0.0
            for r in [0.0, *torch.logspace(-12, 0, 37, dtype=torch.float64).tolist()]:
                w, c = _spectrum(dtype, scale, offset, r)
                fw, d1, d2 = _derivatives(lambda x, c=c, f=f: f(x, c), w)
                got = divided_differences(w, fw, d1, d2).to(torch.complex128)
                pts = [mpmath.mpf(float(x)) for x in w]
                ref = torch.tensor(
                    [[complex(_exact_dd([p, q], derivs, c)) for q in pts] for p in pts],
                    dtype=torch.complex128,
                )
                worst = max(worst, float((got - ref).abs().max() / ref.abs().max()))
            row.append(f"{offset:g}: {worst:.1e}")
        print(f"{dtype!s:15} {family:8}", "  ".join(row))


if __name__ == "__main__":
    _worst_first_difference_errors()
