"""The C++ one-matrix entry (``spectra/core/_solvers/_native_entry.cpp``): the same bits as
the Python-level compiled route it shortens, outputs laid out and flagged as torch's, and
every input that is not plain left to the Python route (it returns ``None``)."""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import spectra
from spectra.core._pipeline import _direct
from spectra.core._pipeline._autograd_one import _TOL32, _TOL64
from spectra.core._solvers import _native

from .helpers import pin_cpu_vendor

ENTRY = _native.native_entry(_TOL64, _TOL32)
_ROUTED_ENTRY = _direct._entry  # (the fixtures below replace it by a spy)
needs_entry = pytest.mark.skipif(ENTRY is None, reason="the C++ entry is not built")

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
#: sizes the entry takes directly (above them: once the Python route has marked the size)
SIZES = [1, 2, 3, 4, 5, 8, 13, 16, 24, _native.SEQUENTIAL_N - 1]


def test_built_where_ci_runs() -> None:
    """CI builds the entry (scripts/venv.sh installs without build isolation, so torch's
    headers are found): without it the one-matrix figures do not hold."""
    if os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
        pytest.skip("only asserted under CI")
    assert ENTRY is not None, "spectra/core/_solvers/_native_entry.cpp was not built"


def _random(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, n, generator=g, dtype=torch.float64)
    if dtype.is_complex:
        x = x + 1j * torch.randn(n, n, generator=g, dtype=torch.float64)
    return ((x + x.mH) / 2).to(dtype)


class _Counting:
    """An entry call (the one-matrix entry by default), counting the calls it answered."""

    def __init__(self, call: Any = None) -> None:
        self.call = ENTRY if call is None else call
        self.answered = 0

    def __call__(self, *args: Any) -> Any:
        done = self.call(*args)
        self.answered += done is not None
        return done


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> _Counting:
    spy = _Counting()
    monkeypatch.setattr(_direct, "_entry", lambda version: (spy, _direct._closed_direct(version)))
    return spy


def _without_entry(monkeypatch: pytest.MonkeyPatch, fn: Any, *args: Any, **kw: Any) -> Any:
    with monkeypatch.context() as m:
        m.setattr(_direct, "_entry", lambda version: (None, _direct._closed_direct(version)))
        return fn(*args, **kw)


def _cases(dtype: torch.dtype) -> list[tuple[str, torch.Tensor]]:
    out = []
    for n in SIZES:
        out.append((f"random-{n}", _random(n, dtype, n)))
        out.append((f"identity-{n}", torch.eye(n, dtype=dtype)))
        out.append((f"ones-{n}", torch.ones(n, n, dtype=dtype)))
        out.append((f"zeros-{n}", torch.zeros(n, n, dtype=dtype)))
    big = _random(40, dtype, 1)
    out.append(("every-other", big[::2, ::2]))
    out.append(("offset-block", big[3:11, 3:11]))
    out.append(("transposed", big[:9, :9].mT.contiguous().mT))
    return out


@needs_entry
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bitwise_the_python_route(
    dtype: torch.dtype, counted: _Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, a in _cases(dtype):
        before = counted.answered
        w, v = spectra.eigh(a)
        values = spectra.eigvalsh(a)
        assert counted.answered == before + 2, name
        pw, pv = _without_entry(monkeypatch, spectra.eigh, a)
        assert torch.equal(w, pw) and torch.equal(v, pv), name
        assert torch.equal(values, _without_entry(monkeypatch, spectra.eigvalsh, a)), name
        n = a.shape[0]
        assert v.stride() == pv.stride() == (1, n) and w.stride() == (1,), name
        assert w.dtype == pw.dtype and v.dtype == a.dtype, name
        assert not (w.requires_grad or v.requires_grad), name


@needs_entry
def test_outputs_are_fresh_tensors(counted: _Counting) -> None:
    a = _random(4, torch.float64, 3)
    w1, v1 = spectra.eigh(a)
    w2, v2 = spectra.eigh(a)
    assert counted.answered == 2
    assert len({w1.data_ptr(), w2.data_ptr(), v1.data_ptr(), v2.data_ptr(), a.data_ptr()}) == 5
    w1.zero_()
    assert torch.equal(w2, spectra.eigh(a).eigenvalues)
    assert w1._base is None and v1._base is None  # own storages, no views


@needs_entry
def test_check_false_reads_the_lower_triangle(counted: _Counting, monkeypatch: Any) -> None:
    a = _random(6, torch.float64, 6)
    a[0, 3] += 5.0  # upper triangle: ignored unchecked, as by torch's eigh
    w, v = spectra.eigh(a, check=False)
    assert counted.answered == 1
    pw, pv = _without_entry(monkeypatch, spectra.eigh, a, check=False)
    assert torch.equal(w, pw) and torch.equal(v, pv)


class _Sub(torch.Tensor):
    pass


class _Functions(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return func(*args, **(kwargs or {}))


class _Dispatch(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return func(*args, **(kwargs or {}))


@needs_entry
def test_what_is_not_plain_goes_the_python_route() -> None:
    assert ENTRY is not None
    _native.reset_entry_routes()  # n = 32: a size no earlier call has marked
    a = _random(4, torch.complex128, 1)
    r = _random(3, torch.float64, 2)
    refused = {
        "conjugate view": a.conj(),
        "negative view": torch._neg_view(r),
        "subclass": r.as_subclass(_Sub),
        "batch": r.expand(2, 3, 3),
        "vector": r[0],
        "empty": torch.zeros(0, 0, dtype=torch.float64),
        "n = 32": _random(32, torch.float64, 3),
        "not square": torch.zeros(3, 4, dtype=torch.float64),
        "integers": torch.eye(3, dtype=torch.int64),
        "half": torch.eye(3, dtype=torch.float16),
        "sparse": r.to_sparse(),
        "meta": torch.empty(3, 3, dtype=torch.float64, device="meta"),
        "not exactly symmetric": r + torch.triu(torch.full((3, 3), 1e-15), 1),
        "NaN": torch.full((3, 3), float("nan"), dtype=torch.float64),
        "Inf": torch.diag(torch.tensor([1.0, float("inf"), 2.0], dtype=torch.float64)),
        "not a tensor": r.numpy(),
    }
    for name, x in refused.items():
        assert ENTRY(x, True, True, True) is None, name
    # tracked n <= 3 (the closed form), a Parameter too (torch counts it as an exact
    # tensor; spectra.eigh's shortcut takes only exact torch.Tensor): pairs without
    # history, for the caller's light node
    for name, x in {
        "parameter": torch.nn.Parameter(r.clone()),
        "tracked under grad mode": r.clone().requires_grad_(),
    }.items():
        got = ENTRY(x, True, True, True)
        assert got is not None and len(got) == 3 and got[2] is None, name
        assert not got[0].requires_grad and not got[1].requires_grad, name
    assert ENTRY(r, True, True, False) is None  # real n <= 3 planned on LAPACK
    assert ENTRY(_random(4, torch.float64, 2), True, True, False) is not None
    with _Functions():
        assert ENTRY(r, True, True, True) is None
    with _Dispatch():
        assert ENTRY(r, True, True, True) is None
    # a vmap wrapper: never answered (1 where the entry returned None, per matrix)
    refused_in_vmap = torch.func.vmap(lambda x: x[0, 0] * 0 + (ENTRY(x, True, True, True) is None))
    assert torch.equal(refused_in_vmap(r.expand(2, 3, 3)), torch.ones(2, dtype=r.dtype))
    # the entry refuses, spectra still answers (the Python route)
    assert torch.allclose(spectra.eigh(a.conj()).eigenvalues, torch.linalg.eigvalsh(a))
    with torch.no_grad():
        assert ENTRY(r.clone().requires_grad_(), True, True, True) is not None


@needs_entry
def test_inference_mode_like_torch(counted: _Counting) -> None:
    a = _random(5, torch.float32, 3)
    with torch.inference_mode():
        w, v = spectra.eigh(a)
        tw, _ = torch.linalg.eigh(a)
        inner = torch.eye(3, dtype=torch.float64)
    assert counted.answered == 1
    assert w.is_inference() and v.is_inference() and tw.is_inference()
    w2, _ = spectra.eigh(inner)  # an inference tensor outside the mode: normal outputs
    assert counted.answered == 2 and not w2.is_inference()


@needs_entry
def test_another_torch_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """Built for one torch, the entry steps aside under another (its ABI)."""
    from spectra.core._solvers import _native_entry  # type: ignore[attr-defined]

    monkeypatch.setattr(_native_entry, "torch_version", "0.0.0")
    _native.forget_native()
    try:
        assert _native.native_entry(_TOL64, _TOL32) is None
        w, _ = spectra.eigh(torch.eye(3, dtype=torch.float64))
        assert w.tolist() == [1.0, 1.0, 1.0]
    finally:
        monkeypatch.undo()
        _native.forget_native()
    assert _native.native_entry(_TOL64, _TOL32) is not None


@needs_entry
def test_invalid_tolerance_still_refused(counted: _Counting) -> None:
    """A ``symmetry_tol`` (valid or not) takes the route that checks it."""
    a = torch.eye(3, dtype=torch.float64)
    with pytest.raises(ValueError, match="symmetry_tol"):
        spectra.eigh(a, symmetry_tol=-1.0)
    assert counted.answered == 0


def _tracked(fn: Any, a: torch.Tensor, weights: torch.Tensor) -> tuple[Any, ...]:
    x = a.clone().requires_grad_()
    out = fn(x)
    w, v = (out, None) if isinstance(out, torch.Tensor) else out
    if v is None:
        loss = 0.3 * w.sum()
    elif v.is_complex():  # a phase-free loss
        loss = 0.3 * w.sum() + (v.abs().square() * weights).sum()
    else:
        loss = 0.3 * w.sum() + (v * weights).sum()
    loss.backward()
    assert x.grad is not None
    name = type(w.grad_fn).__name__
    return w.detach(), None if v is None else v.detach(), x.grad, name


def _entry_like_python(
    fn: Any,
    a: torch.Tensor,
    weights: torch.Tensor,
    counted: _Counting,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> tuple[Any, ...]:
    """:func:`_tracked` through the entry (which must answer) and through the Python
    route: the same values, vectors, gradient and node; the entry's answer."""
    before = counted.answered
    got = _tracked(fn, a, weights)
    assert counted.answered == before + 1, (name, fn.__name__)
    want = _without_entry(monkeypatch, _tracked, fn, a, weights)
    for x, y in zip(got[:3], want[:3], strict=True):
        assert (x is None and y is None) or torch.equal(x, y), (name, fn.__name__)
    assert got[3] == want[3], (name, fn.__name__)
    return got


def _at_the_bound(n: int, dtype: torch.dtype, factor: float) -> torch.Tensor:
    """A diagonal matrix (exact eigenvalues) with one gap ``factor`` times the backward's
    degenerate bound (``tol * max|w|``, the largest eigenvalue ``n``)."""
    tol = _TOL64 if dtype == torch.float64 else _TOL32
    d = torch.arange(1.0, n + 1, dtype=torch.float64)
    d[1] = d[0] + factor * tol * n
    return torch.diag(d).to(dtype)


@needs_entry
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize("n", [4, 5, 8, 16, 25])
def test_tracked_bitwise_the_python_route(
    n: int, dtype: torch.dtype, counted: _Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real input under grad mode: torch's own node made in C++, the gauge written into
    it, the same values, vectors, node and gradient as the Python tracked route; a
    degenerate spectrum (and one gap at, just below and just above the bound) under the
    core's rule exactly where the Python route's separation test puts it."""
    weights = torch.randn(n, n, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    weights = weights.to(dtype)
    cases = {"random": _random(n, dtype, n), "identity": torch.eye(n, dtype=dtype)}
    for factor in (0.5, 0.999999, 1.0, 1.000001, 1.01, 1.1, 2.0):
        cases[f"gap {factor} x bound"] = _at_the_bound(n, dtype, factor)
    for name, a in cases.items():
        for fn in (spectra.eigh, spectra.eigvalsh):
            got = _entry_like_python(fn, a, weights, counted, monkeypatch, name)
            rule = "_EighFunctionBackward"
            if name in ("identity", "random"):
                assert got[3] == (rule if name == "identity" else "LinalgEighBackward0"), got[3]


@needs_entry
def test_tracked_refusals(counted: _Counting) -> None:
    """The tracked routes: torch's node for real n >= 4, pairs without history (for the
    light node) for complex input and n <= 3, under saved-tensor hooks too; what they
    leave to Python: hooks on torch's node, a torch.func transform, asymmetric or NaN
    input."""
    assert ENTRY is not None
    x = _random(5, torch.float64, 1).requires_grad_()
    assert len(ENTRY(x, True, True, True)) == 3
    assert ENTRY(_random(5, torch.float32, 1).requires_grad_(), True, True, True)[2] is not None
    for light in (
        _random(5, torch.complex128, 1),
        _random(3, torch.float64, 1),
        _random(3, torch.float32, 1),
        _random(2, torch.complex64, 1),
    ):
        got = ENTRY(light.requires_grad_(), False, True, True)  # vectors made anyway
        assert got is not None and got[1] is not None and got[2] is None, light.dtype
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            assert ENTRY(light, True, True, True) is not None
        inside = torch.func.grad(lambda y, a=light: (ENTRY(a, True, True, True) is None) * y.sum())
        assert torch.equal(inside(torch.ones(2)), torch.ones(2))  # None inside the transform
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert ENTRY(x, True, True, True) is None
    inside = torch.func.grad(lambda y: (ENTRY(x, True, True, True) is None) * y.sum())
    assert torch.equal(inside(torch.ones(2)), torch.ones(2))  # None inside the transform
    skew = _random(5, torch.float64, 2)
    skew[0, 1] += 1.0
    assert ENTRY(skew.requires_grad_(), True, True, True) is None
    nan = torch.full((5, 5), float("nan"), dtype=torch.float64)
    assert ENTRY(nan.requires_grad_(), True, True, True) is None
    with pytest.raises(ValueError, match=r"(?i)symmetric"):
        spectra.eigh(skew)


@needs_entry
@pytest.mark.parametrize(
    ("dtype", "n"),
    [(torch.complex128, n) for n in (1, 2, 3, 5, 8, 25)]
    + [(torch.complex64, n) for n in (2, 3, 8)]
    + [(torch.float64, n) for n in (1, 2, 3)]
    + [(torch.float32, n) for n in (2, 3)],
)
def test_light_tracked_bitwise_the_python_route(
    dtype: torch.dtype, n: int, counted: _Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Complex input and the closed form's n <= 3 under grad mode: the entry's pairs under
    the light node give the Python tracked route's values, vectors, node and gradient
    bit for bit (a degenerate spectrum under the core's rule, as there)."""
    g = torch.Generator().manual_seed(n)
    weights = torch.randn(n, n, dtype=torch.float64, generator=g).to(dtype).real
    cases = {"random": _random(n, dtype, n), "identity": torch.eye(n, dtype=dtype)}
    for name, a in cases.items():
        for fn in (spectra.eigh, spectra.eigvalsh):
            got = _entry_like_python(fn, a, weights, counted, monkeypatch, name)
            assert got[3] == "_EighSolvedBackward", (name, got[3])


FEW = _native.native_few_entry(_TOL64, _TOL32)


@pytest.fixture
def counted_few(monkeypatch: pytest.MonkeyPatch) -> _Counting:
    spy = _Counting(FEW)
    monkeypatch.setattr(_direct, "_few_entry", lambda version: spy)
    return spy


def _without_few(monkeypatch: pytest.MonkeyPatch, fn: Any, *args: Any, **kw: Any) -> Any:
    with monkeypatch.context() as m:
        m.setattr(_direct, "_few_entry", lambda version: None)
        return fn(*args, **kw)


def _handful(b: int, n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    return torch.stack([_random(n, dtype, seed + i) for i in range(b)])


@needs_entry
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_handful_bitwise_the_python_route(
    dtype: torch.dtype, counted_few: _Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few matrices in one call (the plan's direct path): the C++ entry answers, with the
    bits, layouts and dtypes of the Python route's compiled batch, and each matrix's
    eigenpairs are those of the same matrix alone."""
    for b in (1, 2, 5, 16):
        for n in (1, 2, 3, 4, 8, 13, 25):
            if not _direct._direct(n, b, dtype, True):
                continue
            a = _handful(b, n, dtype, 10 * b + n)
            a[0] = torch.eye(n, dtype=dtype)  # a degenerate one among them
            before = counted_few.answered
            w, v = spectra.eigh(a)
            values = spectra.eigvalsh(a)
            unchecked = spectra.eigh(a, check=False)
            assert counted_few.answered == before + 3, (b, n)
            pw, pv = _without_few(monkeypatch, spectra.eigh, a)
            assert torch.equal(w, pw) and torch.equal(v, pv), (b, n)
            assert torch.equal(values, _without_few(monkeypatch, spectra.eigvalsh, a)), (b, n)
            assert torch.equal(unchecked.eigenvectors, v), (b, n)
            assert v.stride() == pv.stride() == (n * n, 1, n) and w.stride() == (n, 1), (b, n)
            assert w.dtype == pw.dtype and v.dtype == dtype, (b, n)
            for i in (0, b - 1):
                wi, vi = spectra.eigh(a[i].clone())
                assert torch.equal(w[i], wi) and torch.equal(v[i], vi), (b, n, i)


@needs_entry
def test_a_handful_against_scipy(counted_few: _Counting) -> None:
    import numpy as np
    import scipy.linalg

    a = _handful(6, 7, torch.complex128, 5)
    w, v = spectra.eigh(a)
    assert counted_few.answered == 1
    for i in range(6):
        ref = scipy.linalg.eigh(a[i].numpy(), eigvals_only=True)
        np.testing.assert_allclose(w[i].numpy(), ref, rtol=0, atol=1e-12)
        recon = v[i] @ torch.diag(w[i].to(a.dtype)) @ v[i].mH
        assert torch.allclose(recon, a[i], atol=1e-12)


@needs_entry
def test_a_handful_that_is_not_plain_goes_the_python_route(counted_few: _Counting) -> None:
    assert FEW is not None
    a = _handful(3, 5, torch.float64, 1)
    c = _handful(3, 5, torch.complex128, 2)
    refused = {
        "conjugate view": c.conj(),
        "not contiguous": a.mT,
        "subclass": a.as_subclass(_Sub),
        "one matrix": a[0],
        "four dimensions": a[None],
        "empty batch": a[:0],
        "n = 32": _handful(2, 32, torch.float64, 3),
        "not square": torch.zeros(2, 3, 4, dtype=torch.float64),
        "integers": torch.eye(3, dtype=torch.int64).expand(2, 3, 3).contiguous(),
        "tracked under grad mode": a.clone().requires_grad_(),
        "not exactly symmetric": a + torch.triu(torch.full((5, 5), 1e-15, dtype=a.dtype), 1),
        "NaN in one": torch.cat([a[:2], torch.full((1, 5, 5), float("nan"), dtype=a.dtype)]),
        "not a tensor": a.numpy(),
    }
    for name, x in refused.items():
        assert FEW(x, True, True, True) is None, name
    assert FEW(_handful(2, 3, torch.float64, 4), True, True, False) is None  # LAPACK's n <= 3
    with _Functions():
        assert FEW(a, True, True, True) is None
    with _Dispatch():
        assert FEW(a, True, True, True) is None
    with torch.no_grad():
        assert FEW(a.clone().requires_grad_(), True, True, True) is not None
    # the entry refuses, spectra still answers, or refuses with the full path's error
    assert torch.allclose(spectra.eigh(a.mT).eigenvalues, torch.linalg.eigvalsh(a))
    with pytest.raises(ValueError, match="NaN"):
        spectra.eigh(refused["NaN in one"])
    x = a.clone().requires_grad_()
    w, _ = spectra.eigh(x)
    w.sum().backward()
    assert x.grad is not None
    assert counted_few.answered == 0


MID_SIZES = [_native.SEQUENTIAL_N, 31, 32, 40, 64, 100, 255]


@needs_entry
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_larger_matrices_once_the_python_route_found_them_unclaimed(
    dtype: torch.dtype, counted: _Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From SEQUENTIAL_N (26: where LAPACK may thread) the entry takes one plain matrix on
    one kernel thread once the Python route has found no strategy claiming that size: the
    same bits
    (and under grad mode the same node and gradient), the caller's thread counts left as
    they were."""
    from spectra.core._pipeline._direct import _claimed_one
    from spectra.core._strategies import registry_version
    from spectra.core._support._threads import thread_knobs

    pin_cpu_vendor(monkeypatch, "GenuineIntel")  # no size claimed: the entry's sizes
    _ROUTED_ENTRY(registry_version())  # the new version: routes forgotten
    knobs = thread_knobs()
    for n in MID_SIZES:
        assert _claimed_one(n, dtype, True, registry_version()) is None
        a = _random(n, dtype, n)
        assert ENTRY(a, True, True, True) is None, n  # not marked yet
        before = counted.answered
        first = spectra.eigh(a)  # the Python route (marks the size)
        threads, omp = torch.get_num_threads(), knobs.omp_get()
        w, v = spectra.eigh(a)
        assert counted.answered == before + 1, n
        assert torch.get_num_threads() == threads and knobs.omp_get() == omp, n
        assert torch.equal(w, first.eigenvalues) and torch.equal(v, first.eigenvectors), n
        pw, pv = _without_entry(monkeypatch, spectra.eigh, a)
        assert torch.equal(w, pw) and torch.equal(v, pv), n
        assert v.stride() == (1, n) and w.dtype == pw.dtype, n
        values = spectra.eigvalsh(a)  # eigenvalues only: marked separately
        assert torch.equal(spectra.eigvalsh(a), values), n
        # under grad mode too: torch's own node (real) or the light node (complex), the
        # same values, vectors, node and gradient as the Python route
        weights = torch.randn(n, n, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
        for fn in (spectra.eigh, spectra.eigvalsh):
            got = _entry_like_python(fn, a, weights.to(dtype).real, counted, monkeypatch, str(n))
            node = "_EighSolvedBackward" if dtype.is_complex else "LinalgEighBackward0"
            assert got[3] == node, (n, got[3])
            assert torch.get_num_threads() == threads and knobs.omp_get() == omp, n
    # a strategy registered (the registry's version changes): the sizes are forgotten
    from spectra.core import STRATEGIES

    monkeypatch.setitem(STRATEGIES, "torch", STRATEGIES["torch"])
    _ROUTED_ENTRY(registry_version())
    assert ENTRY(_random(64, dtype, 64), True, True, True) is None


@needs_entry
def test_a_claimed_size_stays_with_its_strategy(
    counted: _Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a strategy claims one matrix (``openblas`` on an AMD CPU, made here to claim
    complex128 from n = 56 from one matrix on) the entry never takes it: every call runs
    that strategy, with its bits."""
    from spectra.core._strategies import _openblas, registry_version

    monkeypatch.setitem(_openblas.RANGES, torch.complex128, ((56, 384, 1),))
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    _ROUTED_ENTRY(registry_version())
    a = _random(64, torch.complex128, 5)
    first = spectra.eigh(a)
    again = spectra.eigh(a)
    assert counted.answered == 0
    assert ENTRY(a, True, True, True) is None
    assert torch.equal(first.eigenvectors, again.eigenvectors)
    w, v = _without_entry(monkeypatch, spectra.eigh, a)
    assert torch.equal(again.eigenvalues, w) and torch.equal(again.eigenvectors, v)


@needs_entry
def test_larger_matrices_from_two_threads_give_the_single_threaded_results(
    counted: _Counting,
) -> None:
    """Two threads calling the entry at once on a matrix of n = 128 (the GIL released
    while LAPACK runs, each thread's kernel count set and restored by itself): every
    answer is the entry's, bitwise the one-thread result."""
    import threading

    a = _random(128, torch.float64, 9)
    ref = spectra.eigh(a)  # marks the size
    out: list[Any] = [None, None]

    def run(i: int) -> None:
        out[i] = [spectra.eigh(a) for _ in range(5)]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counted.answered >= 10
    for got in out:
        assert all(torch.equal(g.eigenvectors, ref.eigenvectors) for g in got)
