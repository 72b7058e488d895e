"""Property tests (hypothesis): gauge, chunking and ragged equivalence."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import spectra


@st.composite
def hermitian_batches(draw):
    batch = draw(st.integers(0, 6))
    n = draw(st.integers(1, 9))
    complex_ = draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, n, n))
    if complex_:
        x = x + 1j * rng.standard_normal((batch, n, n))
    return torch.from_numpy(0.5 * (x + np.conj(np.swapaxes(x, -1, -2))))


@settings(max_examples=40, deadline=None)
@given(hermitian_batches(), st.integers(1, 7))
def test_chunking_never_changes_the_result(a, chunk):
    w0, v0 = spectra.eigh(a)
    w1, v1 = spectra.eigh(a, chunk_size=chunk)
    assert torch.equal(w0, w1) and torch.equal(v0, v1)


@settings(max_examples=40, deadline=None)
@given(hermitian_batches())
def test_gauge_rule_holds_and_is_idempotent(a):
    _, v = spectra.eigh(a)
    if v.numel() == 0:
        return
    mag = v.abs()
    near = mag >= mag.amax(-2, keepdim=True) * (1 - 1e-10)  # the documented pivot rule
    pivot = v.gather(-2, near.to(torch.uint8).argmax(-2, keepdim=True))
    assert (pivot.real > 0).all()
    if v.is_complex():
        assert (pivot.imag.abs() <= 1e-12).all()
    torch.testing.assert_close(spectra.fix_gauge(v), v, atol=1e-14, rtol=0)
    # any re-phasing of the columns maps back to the same gauge
    phases = (
        torch.exp(1j * torch.rand(v.shape[-1], dtype=torch.float64))
        if v.is_complex()
        else torch.where(torch.rand(v.shape[-1]) > 0.5, -1.0, 1.0).to(v.dtype)
    )
    torch.testing.assert_close(spectra.fix_gauge(v * phases), v, atol=1e-12, rtol=0)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=8), st.integers(0, 2**31 - 1))
def test_ragged_equals_one_by_one(sizes, seed):
    rng = np.random.default_rng(seed)
    mats = []
    for n in sizes:
        x = rng.standard_normal((n, n))
        mats.append(torch.from_numpy(x + x.T))
    w, v = spectra.eigh(mats)
    for i, m in enumerate(mats):
        wi, _vi = spectra.eigh(m)
        scale = max(1.0, float(wi.abs().max()))
        torch.testing.assert_close(w[i], wi, atol=1e-12 * scale, rtol=0)
        ok = spectra.validate(m, w[i], v[i]).ok(1e-12)
        assert ok
