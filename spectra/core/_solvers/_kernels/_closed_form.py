"""Closed-form eigenpairs of 1x1, 2x2 and 3x3 Hermitian matrices, one lane per matrix.

Every matrix of the batch is a *lane*: each entry ``a[:, i, j]`` is a ``(B,)`` tensor and the
algorithm is a fixed sequence of elementwise operations on those lanes, so it runs unchanged
on CPU and CUDA tensors (and maps one-to-one onto a Triton kernel whose program instances
are lanes). Only ``+ - * /``, ``sqrt``, comparisons, ``where`` and exact power-of-two scaling
are used: each is correctly rounded (or exact), so a lane's result does not depend on where
it sits in the batch or how the batch is chunked (vectorized transcendental functions, and
torch's complex kernels, round differently in SIMD bodies and tails). Complex numbers are
carried as separate real and imaginary tensors for the same reason.

3x3 follows Kopp's hybrid idea ("Efficient numerical diagonalization of hermitian 3x3
matrices", 2008) in the fully robust form described by Eberly ("A robust eigensolver for
3x3 symmetric matrices", 2014):

1. scale by a power of two (exact) so the largest entry is O(1), shift by the mean
   eigenvalue ``q = tr/3`` and scale the shifted matrix ``B`` again, so 1e+-150 inputs
   neither overflow nor underflow;
2. the trigonometric solution ``2 p cos(acos(r)/3 + 2 pi k/3)`` of the depressed cubic is
   used only for the eigenvalue *far* from the other two (the largest if ``det(B/p) >= 0``,
   else the smallest); its cosine ``x = cos(acos(|r|)/3)`` is the root in
   ``[sqrt(3)/2, 1]`` of ``4x^3 - 3x = |r|``, computed by Newton's method from ``x = 1``
   (monotone and quadratic there: 6 steps reach double precision), so no libm is involved;
3. its eigenvector is the largest cross product of two rows of ``B - lambda I`` (its
   eigenvalue is separated by at least ``sqrt(3) p``, so the cross product is large);
4. the two remaining eigenpairs, which may be arbitrarily close (the case where the plain
   trigonometric and cross-product formulas lose accuracy), come from the exact 2x2
   problem in an orthonormal basis of the complement: one Jacobi rotation.

Every step is backward stable, so no lane needs a fallback: residuals and orthogonality are
O(eps ||A||) for clustered, repeated, graded and rank-one inputs alike. A shifted matrix that
is exactly zero (``A = q I``) gives ``V = I``.
"""

from __future__ import annotations

import torch


class Z:
    """A lane array of complex numbers as real tensors ``re`` and ``im`` (``None``: real)."""

    __slots__ = ("im", "re")

    def __init__(self, re: torch.Tensor, im: torch.Tensor | None = None) -> None:
        self.re, self.im = re, im

    def __add__(self, o: Z) -> Z:
        return Z(self.re + o.re, _add(self.im, o.im))

    def __sub__(self, o: Z) -> Z:
        return Z(self.re - o.re, _add(self.im, _neg(o.im)))

    def __mul__(self, o: Z) -> Z:
        if self.im is None and o.im is None:
            return Z(self.re * o.re)
        if o.im is None:
            return Z(self.re * o.re, self.im * o.re)  # type: ignore[operator]
        if self.im is None:
            return Z(self.re * o.re, self.re * o.im)
        return Z(self.re * o.re - self.im * o.im, self.re * o.im + self.im * o.re)

    def scale(self, t: torch.Tensor) -> Z:
        """Multiply by the real lane array ``t``."""
        return Z(self.re * t, None if self.im is None else self.im * t)

    def unscale(self, t: torch.Tensor) -> Z:
        """Divide by the real lane array ``t`` (a power of two: exact, even where ``1 / t``
        would overflow)."""
        return Z(self.re / t, None if self.im is None else self.im / t)

    def conj(self) -> Z:
        return Z(self.re, _neg(self.im))

    def abs2(self) -> torch.Tensor:
        return self.re * self.re if self.im is None else self.re * self.re + self.im * self.im


def _add(x: torch.Tensor | None, y: torch.Tensor | None) -> torch.Tensor | None:
    if x is None:
        return y
    return x if y is None else x + y


def _neg(x: torch.Tensor | None) -> torch.Tensor | None:
    return None if x is None else -x


def _where(c: torch.Tensor, x: Z, y: Z) -> Z:
    im = None
    if x.im is not None or y.im is not None:
        zx = x.im if x.im is not None else torch.zeros_like(x.re)
        zy = y.im if y.im is not None else torch.zeros_like(y.re)
        im = torch.where(c, zx, zy)
    return Z(torch.where(c, x.re, y.re), im)


def _pow2_scale(m: torch.Tensor) -> torch.Tensor:
    """The power of two ``2^e`` with ``m / 2^e`` in ``[1, 2)`` (1 where ``m == 0``): finite
    for every finite ``m`` (``[0.5, 1)`` would need ``2^1024`` above ``2^1023``)."""
    _, e = torch.frexp(m)
    return torch.where(m == 0, torch.ones_like(m), torch.ldexp(torch.ones_like(m), e - 1))


def _entries(a: torch.Tensor) -> tuple[list[torch.Tensor], dict[tuple[int, int], Z]]:
    """Real diagonal lanes and upper off-diagonal lanes of a ``(B, n, n)`` Hermitian batch,
    read from the lower triangle (as LAPACK's ``uplo='L'``): ``a_ij = conj(a_ji)``, i < j."""
    n = a.shape[-1]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if a.is_complex():
        parts = torch.view_as_real(a)
        diag = [parts[:, i, i, 0] for i in range(n)]
        off = {(i, j): Z(parts[:, j, i, 0], -parts[:, j, i, 1]) for i, j in pairs}
    else:
        diag = [a[:, i, i] for i in range(n)]
        off = {(i, j): Z(a[:, j, i]) for i, j in pairs}
    return diag, off


def _peak(diag: list[torch.Tensor], off: dict[tuple[int, int], Z]) -> torch.Tensor:
    """Largest ``|re|``/``|im|``/``|diag|`` per lane: a scale, not a norm."""
    parts = [d.abs() for d in diag]
    for z in off.values():
        parts.append(z.re.abs())
        if z.im is not None:
            parts.append(z.im.abs())
    m = parts[0]
    for x in parts[1:]:
        m = torch.maximum(m, x)
    return m


def eig2(
    a: torch.Tensor, b: Z, d: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, tuple[Z, Z], tuple[Z, Z]]:
    """Eigenpairs of ``[[a, b], [conj(b), d]]``: ``(w1 <= w2, v1, v2)``.

    ``v2`` is ``(h + r, conj b)`` if ``h = (a - d)/2 >= 0`` else ``(b, r - h)`` (no
    cancellation either way), normalized; ``v1 = (-conj v2[1], conj v2[0])``.
    """
    h = 0.5 * (a - d)
    mid = 0.5 * (a + d)
    # scale (h, b) by a power of two: squares of tiny entries (a 2x2 left after deflating a
    # huge eigenvalue) would underflow and the vectors would lose their norm
    peak = torch.maximum(h.abs(), b.re.abs())
    if b.im is not None:
        peak = torch.maximum(peak, b.im.abs())
    sc = _pow2_scale(peak)
    h, b = h / sc, b.unscale(sc)  # divided: 1 / sc overflows for subnormal sc
    r = torch.sqrt(h * h + b.abs2())
    pos = h >= 0
    x = _where(pos, Z(h + r), b)
    y = _where(pos, b.conj(), Z(r - h))
    norm = torch.sqrt(x.abs2() + y.abs2())
    zero = norm == 0
    inv = 1.0 / torch.where(zero, torch.ones_like(norm), norm)
    one, nil = Z(torch.ones_like(h)), Z(torch.zeros_like(h))
    x = _where(zero, one, x.scale(inv))
    y = _where(zero, nil, y.scale(inv))
    v2 = (x, y)
    v1 = (Z(-y.re, y.im), x.conj())  # (-conj y, conj x)
    return mid - r * sc, mid + r * sc, v1, v2


def _cross(u: list[Z], v: list[Z]) -> list[Z]:
    """Bilinear cross product: ``sum_j u_j (u x v)_j = 0 = sum_j v_j (u x v)_j``."""
    return [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]


def _norm2(u: list[Z]) -> torch.Tensor:
    return u[0].abs2() + u[1].abs2() + u[2].abs2()


def _dot_h(u: list[Z], v: list[Z]) -> Z:
    """``u^H v``."""
    return u[0].conj() * v[0] + u[1].conj() * v[1] + u[2].conj() * v[2]


def _matvec(rows: list[list[Z]], v: list[Z]) -> list[Z]:
    return [r[0] * v[0] + r[1] * v[1] + r[2] * v[2] for r in rows]


def _far_root(r: torch.Tensor) -> torch.Tensor:
    """``cos(acos(r)/3)`` for ``r`` in ``[0, 1]``: Newton on ``4x^3 - 3x - r`` from ``x = 1``."""
    x = torch.ones_like(r)
    for _ in range(6):
        x2 = x * x
        x = x - (x * (4.0 * x2 - 3.0) - r) / (12.0 * x2 - 3.0)
    return x


def eig3(a: torch.Tensor, vectors: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Eigenpairs of a ``(B, 3, 3)`` Hermitian batch (ascending values, columns)."""
    diag, off = _entries(a)
    real = diag[0].dtype
    s = _pow2_scale(_peak(diag, off))
    diag = [d / s for d in diag]  # exact: a power of two (1 / s overflows if subnormal)
    off = {k: z.unscale(s) for k, z in off.items()}
    q = (diag[0] + diag[1] + diag[2]) / 3.0
    bd = [d - q for d in diag]
    t = _pow2_scale(_peak(bd, off))
    bd = [d / t for d in bd]
    off = {k: z.unscale(t) for k, z in off.items()}
    b01, b02, b12 = off[0, 1], off[0, 2], off[1, 2]
    flat = (bd[0] == 0) & (bd[1] == 0) & (bd[2] == 0)
    flat &= (b01.abs2() == 0) & (b02.abs2() == 0) & (b12.abs2() == 0)
    # depressed cubic of C = B / p, p^2 = ||B||_F^2 / 6; r = det(C) / 2
    p2 = (bd[0] * bd[0] + bd[1] * bd[1] + bd[2] * bd[2]) + 2.0 * (
        b01.abs2() + b02.abs2() + b12.abs2()
    )
    p = torch.sqrt(p2 / 6.0)
    p = torch.where(flat, torch.ones_like(p), p)
    triple = (b01 * b12 * b02.conj()).re
    det = (
        bd[0] * bd[1] * bd[2]
        + 2.0 * triple
        - bd[0] * b12.abs2()
        - bd[1] * b02.abs2()
        - bd[2] * b01.abs2()
    )
    r = det / (2.0 * p * p * p)
    top = r >= 0  # the far eigenvalue is the largest (else the smallest)
    x = _far_root(torch.clamp(r.abs(), max=1.0))
    far = torch.where(top, 2.0 * x, -2.0 * x) * p
    far = torch.where(flat, torch.zeros_like(far), far)
    # its eigenvector: the largest cross product of two rows of B - far I
    rows = [
        [Z(bd[0] - far), b01, b02],
        [b01.conj(), Z(bd[1] - far), b12],
        [b02.conj(), b12.conj(), Z(bd[2] - far)],
    ]
    c01, c02, c12 = _cross(rows[0], rows[1]), _cross(rows[0], rows[2]), _cross(rows[1], rows[2])
    n01, n02, n12 = _norm2(c01), _norm2(c02), _norm2(c12)
    pick02 = n02 > n01
    best = [_where(pick02, c02[i], c01[i]) for i in range(3)]
    nbest = torch.where(pick02, n02, n01)
    pick12 = n12 > nbest
    best = [_where(pick12, c12[i], best[i]) for i in range(3)]
    nbest = torch.where(pick12, n12, nbest)
    nbest = torch.where(flat, torch.ones_like(nbest), nbest)
    inv = 1.0 / torch.sqrt(nbest)
    e0 = Z(torch.ones_like(q))
    nil = Z(torch.zeros_like(q))
    v = [_where(flat, e0 if i == 0 else nil, best[i].scale(inv)) for i in range(3)]
    # orthonormal complement (u, w) of v: u avoids the smaller of |v0|, |v1|
    big0 = v[0].abs2() >= v[1].abs2()
    u = [
        _where(big0, Z(-v[2].re, v[2].im), nil),
        _where(big0, nil, v[2].conj()),
        _where(big0, v[0].conj(), Z(-v[1].re, v[1].im)),
    ]
    inv_u = 1.0 / torch.sqrt(_norm2(u))
    u = [z.scale(inv_u) for z in u]
    w = [z.conj() for z in _cross(v, u)]  # (conj(v x u)): orthogonal to v and u, unit
    bmat = [
        [Z(bd[0]), b01, b02],
        [b01.conj(), Z(bd[1]), b12],
        [b02.conj(), b12.conj(), Z(bd[2])],
    ]
    bu, bw = _matvec(bmat, u), _matvec(bmat, w)
    m_uu, m_ww, m_uw = _dot_h(u, bu).re, _dot_h(w, bw).re, _dot_h(u, bw)
    mu1, mu2, y1, y2 = eig2(m_uu, m_uw, m_ww)
    x1 = [u[i] * y1[0] + w[i] * y1[1] for i in range(3)]
    x2 = [u[i] * y2[0] + w[i] * y2[1] for i in range(3)]
    # ascending: (mu1, mu2, far) if far is the largest, else (far, mu1, mu2)
    lam = [torch.where(top, mu1, far), torch.where(top, mu2, mu1), torch.where(top, far, mu2)]
    wvals = torch.stack([(q + t * l_) * s for l_ in lam], -1)
    if not vectors:
        return wvals.to(real), None
    cols = [
        [_where(top, x1[i], v[i]) for i in range(3)],
        [_where(top, x2[i], x1[i]) for i in range(3)],
        [_where(top, v[i], x2[i]) for i in range(3)],
    ]
    return wvals, _assemble(cols, a)


def _assemble(cols: list[list[Z]], a: torch.Tensor) -> torch.Tensor:
    """Stack lane columns ``cols[j][i]`` (entry ``i`` of column ``j``) into ``(B, n, n)``."""
    n = len(cols)
    re = torch.stack([torch.stack([cols[j][i].re for j in range(n)], -1) for i in range(n)], -2)
    if not a.is_complex():
        return re
    zero = torch.zeros_like(re[:, 0, 0])

    def imag(z: Z) -> torch.Tensor:
        return z.im if z.im is not None else zero

    im = torch.stack([torch.stack([imag(cols[j][i]) for j in range(n)], -1) for i in range(n)], -2)
    return torch.complex(re, im)


def eig_small(a: torch.Tensor, vectors: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Eigenpairs of a ``(B, n, n)`` Hermitian batch with ``n <= 3`` in closed form."""
    n = a.shape[-1]
    if n == 3:
        return eig3(a, vectors)
    real = a.dtype.to_real()
    if n == 0:
        return a.new_zeros(a.shape[:-1], dtype=real), (a.clone() if vectors else None)
    if n == 1:
        w = a[:, :, 0].real.clone() if a.is_complex() else a[:, :, 0].clone()
        return w, (torch.ones_like(a) if vectors else None)
    if n != 2:
        raise ValueError(f"closed forms exist here for n <= 3, got n = {n}")
    diag, off = _entries(a)
    s = _pow2_scale(_peak(diag, off))
    w1, w2, v1, v2 = eig2(diag[0] / s, off[0, 1].unscale(s), diag[1] / s)
    wvals = torch.stack([w1 * s, w2 * s], -1)
    if not vectors:
        return wvals, None
    return wvals, _assemble([list(v1), list(v2)], a)
