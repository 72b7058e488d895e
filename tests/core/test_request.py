"""The request object and the one list of forwardable options (issue 23)."""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np
import pytest
import torch

import spectra
from spectra.core import Options
from spectra.core._errors import InputError
from spectra.core._pipeline._autograd import DEGENERATE_POLICIES, BackwardOptions, check_policy
from spectra.core._request import EIGH_OPTION_NAMES, PROBLEM_KEYWORDS, Request


def _signature_keywords(fn) -> set[str]:
    params = inspect.signature(fn).parameters
    names = {n for n, p in params.items() if p.kind is not p.VAR_KEYWORD}
    assert any(p.kind is p.VAR_KEYWORD for p in params.values())  # **execution
    return names | set(Options.names())


@pytest.mark.parametrize("fn", [spectra.eigh, spectra.eigvalsh])
def test_option_names_are_eighs_keywords_minus_the_problem(fn):
    # the one list the domains forward from: exactly eigh's keywords less a, b, k, ...
    assert _signature_keywords(fn) - PROBLEM_KEYWORDS == EIGH_OPTION_NAMES
    assert _signature_keywords(fn) >= PROBLEM_KEYWORDS


def test_domains_forward_the_cores_list():
    from spectra.pca._sklearn import eigh_option_names

    assert eigh_option_names() == EIGH_OPTION_NAMES


def test_request_is_frozen_and_validated():
    r = Request.build(k=3, largest=True, lindep=1e-6, symmetry_tol=0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.k = 2  # type: ignore[misc]
    assert (r.lindep, r.symmetry_tol) == (1e-6, 0.0)
    for name in ("lindep", "symmetry_tol"):
        with pytest.raises(InputError, match=name):
            Request.build(**{name: math.nan})
    assert r.whole() == dataclasses.replace(r, k=None, largest=False)
    assert r.sized(5).k == 3
    with pytest.raises(InputError, match="k"):
        r.sized(2)  # k = 3 > n = 2: the core's own message
    kw = r.keywords()
    assert set(kw) == {"k", "largest", "lindep", "lindep_fill", "check", "symmetry_tol", "device"}
    assert set(kw) <= PROBLEM_KEYWORDS | EIGH_OPTION_NAMES


def test_the_request_reaches_the_solver(monkeypatch):
    """eigh's keywords arrive at the dense solver as one request, k checked for n."""
    from spectra.core import _eigh

    seen = []
    real = _eigh.solve_dense

    def spy(a, b, request, opts, pre=None):
        seen.append(request)
        return real(a, b, request, opts, pre=pre)

    monkeypatch.setattr(_eigh, "solve_dense", spy)
    a = torch.randn(40, 6, 6, dtype=torch.float64)
    a = a + a.mT
    b = torch.eye(6, dtype=torch.float64).expand(40, 6, 6)
    w = spectra.eigvalsh(a, b, k=np.int64(2), largest=True, lindep=1e-9, workers=1)
    (r,) = seen
    assert r == Request(
        vectors=False, k=2, largest=True, lindep=1e-9, check=True, symmetry_tol=None
    )
    assert type(r.k) is int
    torch.testing.assert_close(w, torch.linalg.eigvalsh(a)[:, -2:], rtol=1e-12, atol=1e-12)


def test_one_policy_list_one_check():
    assert DEGENERATE_POLICIES == ("warn", "nan", "ignore")
    for bad in ("raise", None, 1):
        with pytest.raises(InputError, match="degenerate"):
            check_policy(bad)
        with pytest.raises(InputError, match="degenerate"):
            Options(degenerate=bad)  # type: ignore[arg-type]
        w = torch.tensor([1.0, 2.0], dtype=torch.float64)
        with pytest.raises(InputError, match="degenerate"):
            spectra.core.domain.eigh_backward(
                w, torch.eye(2, dtype=torch.float64), w, None, 1e-9, 0.0, bad
            )  # type: ignore[arg-type]
    o = Options(degenerate="nan", broadening=1e-3, degenerate_tol=1e-7).backward(123)
    assert o == BackwardOptions(1e-7, 1e-3, "nan", 123)
    assert BackwardOptions().resolved(torch.float32).degenerate_tol == pytest.approx(
        1e3 * torch.finfo(torch.float32).eps
    )


def test_backward_options_reach_the_backward():
    """Options(degenerate="nan") makes the backward return NaN at an unresolvable
    degeneracy, through the one options object."""
    a = torch.diag(torch.tensor([1.0, 1.0, 2.0], dtype=torch.float64)).expand(40, 3, 3)
    a = a.clone().requires_grad_()
    _, v = spectra.eigh(a, degenerate="nan", workers=1)
    v[..., 0].sum().backward()
    assert a.grad is not None and bool(torch.isnan(a.grad).all())
