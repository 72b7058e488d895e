"""One parameter on the canonical metric's Cayley retraction (issue 26): its point and
transported vectors in one ``2p x 2p`` solve on NumPy arrays, the on-manifold check read
from that system (``_canonical.cayley_step``, ``_batched._cayley_one``); against the torch
route, geoopt's trajectories and the checked route's errors."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch

import spectra.stiefel._batched as batched_module
from spectra.stiefel import RiemannianAdam, RiemannianSGD, Stiefel, StiefelParameter
from spectra.stiefel._canonical import _cayley_apply, cayley_step

from .helpers import DTYPES, haar, tol

with warnings.catch_warnings():  # geoopt 0.5 scripts functions with torch.jit at import
    warnings.simplefilter("ignore", DeprecationWarning)
    import geoopt


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each one-parameter step: whether ``_cayley_one`` took it."""
    runs: list[bool] = []
    real = batched_module._cayley_one

    def spy(*args: Any) -> bool:
        got = real(*args)
        runs.append(got)
        return got

    monkeypatch.setattr(batched_module, "_cayley_one", spy)
    return runs


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(50, 5), (9, 4), (7, 1)])
def test_the_step_is_the_torch_routes_point_and_transport(dtype: torch.dtype, shape) -> None:
    """Against ``_cayley_apply`` (the torch route, each vector its own solve): the point
    and two transported vectors to rounding; ``X^H X = I`` kept; ``2p >= n`` declined."""
    g = torch.Generator().manual_seed(sum(shape))
    st = Stiefel(metric="canonical")
    x = haar(*shape, dtype=dtype, generator=g)
    u = -0.3 * st.egrad2rgrad(x, torch.randn(*shape, generator=g).to(dtype))
    vs = [st.egrad2rgrad(x, torch.randn(*shape, generator=g).to(dtype)) for _ in range(2)]
    got = cayley_step(x, u, vs, 1e-3)
    assert got is not None
    y, moved = got
    t = 50 * tol(dtype)
    torch.testing.assert_close(y, _cayley_apply(x, u, x), atol=t, rtol=0)
    for v, m in zip(vs, moved, strict=True):
        torch.testing.assert_close(m, _cayley_apply(x, u, v), atol=t, rtol=0)
    eye = torch.eye(shape[1], dtype=dtype)
    assert float((y.mH @ y - eye).abs().max()) <= t
    square = haar(6, 3, dtype=dtype, generator=g)
    assert cayley_step(square, torch.zeros_like(square), [], 1e-3) is None  # n x n form


def _trajectory(opt: str, x0: torch.Tensor, grads: list[torch.Tensor], ours: bool) -> Any:
    """30 steps of spectra's (``ours``) or geoopt's optimizer on one canonical-metric
    parameter from ``x0``: ``(parameter, optimizer)``."""
    kw: dict[str, Any] = {"lr": 0.05, **({"momentum": 0.9} if opt == "sgd momentum" else {})}
    if ours:
        p: Any = StiefelParameter(x0.clone(), manifold=Stiefel(metric="canonical"))
        o: Any = (RiemannianAdam if opt == "adam" else RiemannianSGD)([p], **kw)
    else:
        p = geoopt.ManifoldParameter(x0.clone(), manifold=geoopt.Stiefel())
        o = (geoopt.optim.RiemannianAdam if opt == "adam" else geoopt.optim.RiemannianSGD)(
            [p], **kw
        )
    for grad in grads:
        p.grad = grad.clone()
        o.step()
    return p, o


@pytest.mark.parametrize("opt", ["sgd", "sgd momentum", "adam"])
@pytest.mark.parametrize("shape", [(50, 5), (12, 3)])
def test_one_parameter_follows_the_checked_route_and_geoopt(
    opt: str, shape, served: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """RSGD (plain and with momentum: the transported buffer) and RAdam on one
    ``St(n, p)`` parameter, ``2p < n``: every step taken by the one-solve route; the
    trajectory over 30 steps that of the checked torch route (to 1e-12) and, without
    momentum, of geoopt's ``Stiefel()`` (canonical, Cayley; to 1e-10). (geoopt's momentum
    buffer starts at ``(1 + momentum) g``, torch's and spectra's at ``g``.)"""
    g = torch.Generator().manual_seed(5)
    x0 = haar(*shape, generator=g)
    grads = [torch.randn(*shape, dtype=torch.float64, generator=g) for _ in range(30)]
    p, o = _trajectory(opt, x0, grads, ours=True)
    assert served == [True] * len(grads)
    with monkeypatch.context() as m:
        m.setattr(batched_module, "_cayley_one", lambda *args: False)
        ref, ref_o = _trajectory(opt, x0, grads, ours=True)
    torch.testing.assert_close(p.detach(), ref.detach(), atol=1e-12, rtol=0)
    if opt == "sgd momentum":
        buffers = o.state[p]["momentum_buffer"], ref_o.state[ref]["momentum_buffer"]
        torch.testing.assert_close(*buffers, atol=1e-12, rtol=0)
        return
    theirs, their_o = _trajectory(opt, x0, grads, ours=False)
    torch.testing.assert_close(p.detach(), theirs.detach(), atol=1e-10, rtol=0)
    if opt == "adam":
        state = o.state[p]["exp_avg"], their_o.state[theirs]["exp_avg"]
        torch.testing.assert_close(*state, atol=1e-10, rtol=0)


def test_what_the_checked_route_names(served: list[bool]) -> None:
    """A point that drifted off the manifold and a NaN gradient: the one-solve route
    declines, writes nothing, and the checked route names what is wrong."""
    g = torch.Generator().manual_seed(6)
    x = haar(50, 5, generator=g)
    p = StiefelParameter(x.clone(), manifold=Stiefel(metric="canonical"))
    opt = RiemannianSGD([p], lr=0.01)
    with torch.no_grad():
        p.mul_(1.01)  # off the manifold by ~2e-2
    before = p.detach().clone()
    p.grad = torch.randn(50, 5, dtype=torch.float64, generator=g)
    with pytest.raises(ValueError, match="not on the Stiefel manifold"):
        opt.step()
    assert served == [False] and torch.equal(p.detach(), before)
    served.clear()
    q = StiefelParameter(x.clone(), manifold=Stiefel(metric="canonical"))
    opt = RiemannianSGD([q], lr=0.01)
    q.grad = torch.randn(50, 5, dtype=torch.float64, generator=g)
    q.grad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN or Inf"):
        opt.step()
    assert served == [False] and torch.equal(q.detach(), x)
