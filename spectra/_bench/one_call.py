"""``spectra bench --domains``' "one call" table: the calls users make one at a time.

Most calls are not large batches: one matrix, one PyG graph per dataset transform, one
parameter per optimizer step. Each row times a loop of such calls of spectra's API and of
the tool it replaces (torch's batched eigh, PyG's ``AddLaplacianEigenvectorPE``, geoopt's
optimizers) on the same inputs, interleaved like every other table; a cell is the loop's
time (``calls`` in the row: the microseconds per call are ``ms / calls * 1000``).
``benchmarks/bench_overhead.py`` times the same kind of rows with paired rounds and more
sizes; this table is the one the CLI prints. The torch peer is
:func:`spectra.core.baselines.torch_batched` (the core's peer entry: only ``spectra/core``
calls an eigensolver), labelled ``torch batched`` as in the core tables.

Examples
--------
``spectra bench --domains`` prints it after the other domains' tables:

>>> from spectra._bench.domains import DOMAINS
>>> DOMAINS["one_call"] is one_call, STEPS
(True, 9)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch

from ..core import baselines
from .cases import case_row, missing, molecule_like
from .timing import Impl, Timer

#: (n, dtype, calls in a quick run, calls in a full run) of the one-matrix rows
MATRIX_ROWS = (
    (3, torch.float64, 300, 2_000),
    (8, torch.float64, 300, 2_000),
    (8, torch.complex128, 300, 2_000),
    (64, torch.float64, 30, 200),
)
#: the forward + backward row: n, calls (quick, full)
BACKWARD_ROW = (5, 200, 1_000)
#: the generalized row, one pair ``A v = w B v`` per call: n, calls (quick, full)
GENERALIZED_ROW = (8, 300, 2_000)
#: the per-graph transform row: nodes, k, graphs (quick, full)
GRAPH_ROW = (25, 4, 50, 300)
#: the optimizer rows: St(n, p), steps (quick, full)
STIEFEL_ROW = (50, 5, 50, 300)
#: progress steps: one per row (quick and full run the same rows)
STEPS = len(MATRIX_ROWS) + 5


def _loop(fn: Callable[[], Any], calls: int) -> Callable[[], None]:
    def run() -> None:
        for _ in range(calls):
            fn()

    return run


def _hermitian(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, n, dtype=dtype, generator=gen)
    return (x + x.mH) / 2


def _matrix_rows(quick: bool, timer: Timer, step: Callable[[str], None]) -> list[dict[str, Any]]:
    from ..core import eigh

    rows = []
    for n, dtype, quick_calls, full_calls in MATRIX_ROWS:
        calls = quick_calls if quick else full_calls
        name = str(dtype).removeprefix("torch.")
        step(f"one call: eigh {n}x{n} {name}")
        a = _hermitian(n, dtype, seed=n)
        impls = {
            "spectra.eigh": Impl(_loop(partial(eigh, a), calls)),
            "torch batched": Impl(_loop(partial(baselines.torch_batched, a), calls)),
        }
        cells, attempts = timer.measure(impls)
        rows.append(case_row(f"eigh, one {n}x{n} {name}", cells, attempts, calls=calls))
    n, quick_calls, full_calls = BACKWARD_ROW
    calls = quick_calls if quick else full_calls
    step(f"one call: eigh {n}x{n} forward + backward")
    a0 = _hermitian(n, torch.float64, seed=1)
    c = torch.randn(n, n, dtype=torch.float64, generator=torch.Generator().manual_seed(2))

    def fwd_bwd(solve: Callable[[torch.Tensor], Any]) -> Callable[[], None]:
        def run() -> None:
            a = a0.clone().requires_grad_(True)
            w, v = solve(a)
            (w.sum() + (v * v * c).sum()).backward()  # sign-free: either gauge, one loss

        return run

    impls = {
        "spectra.eigh": Impl(_loop(fwd_bwd(eigh), calls)),
        "torch batched": Impl(_loop(fwd_bwd(baselines.torch_batched), calls)),
    }
    cells, attempts = timer.measure(impls)
    case = f"eigh, one {n}x{n} float64, forward + backward"
    rows.append(case_row(case, cells, attempts, calls=calls))
    rows.append(_generalized_row(quick, timer, step))
    return rows


def _generalized_row(quick: bool, timer: Timer, step: Callable[[str], None]) -> dict[str, Any]:
    """One pair ``A v = w B v`` per call (a tight-binding ``H(k), S(k)``, a Fock matrix and
    its overlap), against torch's reduction and SciPy's ``eigh(a, b)``."""
    from ..core import eigh

    n, quick_calls, full_calls = GENERALIZED_ROW
    calls = quick_calls if quick else full_calls
    step(f"one call: eigh(a, b) {n}x{n} float64")
    a = _hermitian(n, torch.float64, seed=3)
    m = _hermitian(n, torch.float64, seed=4)
    b = m @ m.mT + n * torch.eye(n, dtype=torch.float64)  # Hermitian to rounding
    pair = [(a.numpy(), b.numpy())]
    impls = {
        "spectra.eigh": Impl(_loop(partial(eigh, a, b), calls)),
        "torch reduction": Impl(_loop(partial(baselines.generalized_reduction, a, b), calls)),
        "scipy loop (a, b)": Impl(_loop(partial(baselines.scipy_generalized_loop, pair), calls)),
    }
    cells, attempts = timer.measure(impls)
    return case_row(f"eigh(a, b), one {n}x{n} float64 pair", cells, attempts, calls=calls)


def _graph_row(quick: bool, timer: Timer, step: Callable[[str], None]) -> dict[str, Any]:
    from torch_geometric.data import Data
    from torch_geometric.transforms import AddLaplacianEigenvectorPE

    from ..graph import LaplacianPE

    nodes, k, quick_graphs, full_graphs = GRAPH_ROW
    count = quick_graphs if quick else full_graphs
    step(f"one call: LaplacianPE({k}) per graph")
    rng = np.random.default_rng(0)
    graphs = [Data(edge_index=molecule_like(rng, nodes), num_nodes=nodes) for _ in range(count)]
    ours, pyg = LaplacianPE(k), AddLaplacianEigenvectorPE(k, is_undirected=True)

    def each(transform: Callable[[Any], Any]) -> Callable[[], None]:
        def run() -> None:
            for g in graphs:
                transform(g.clone())  # a dataset's transform gets a fresh Data each time

        return run

    impls = {
        "spectra LaplacianPE": Impl(each(ours)),
        "PyG AddLaplacianEigenvectorPE": Impl(each(pyg)),
    }
    cells, attempts = timer.measure(impls)
    case = f"LaplacianPE({k}) as a per-graph transform, {nodes} nodes"
    return case_row(case, cells, attempts, calls=count)


def _stiefel_rows(quick: bool, timer: Timer, step: Callable[[str], None]) -> list[dict[str, Any]]:
    from ..stiefel import RiemannianAdam, RiemannianSGD, Stiefel, StiefelParameter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import geoopt

    n, p, quick_steps, full_steps = STIEFEL_ROW
    steps = quick_steps if quick else full_steps
    gen = torch.Generator().manual_seed(0)
    start = Stiefel().random(n, p, dtype=torch.float64, generator=gen)
    grads = [torch.randn(n, p, dtype=torch.float64, generator=gen) for _ in range(8)]

    def stepper(param: torch.Tensor, opt: Any) -> Callable[[], None]:
        def run() -> None:
            for i in range(steps):
                param.grad = grads[i % len(grads)]
                opt.step()

        return run

    def ours(opt_cls: Any, retraction: str) -> Callable[[], None]:
        param = StiefelParameter(start.clone(), manifold=Stiefel(retraction))
        return stepper(param, opt_cls([param], lr=1e-3))

    def theirs(opt_cls: Any) -> Callable[[], None]:
        param = geoopt.ManifoldParameter(start.clone(), manifold=geoopt.EuclideanStiefel())
        return stepper(param, opt_cls([param], lr=1e-3))

    rows = []
    step(f"one call: RSGD step St({n}, {p})")
    impls = {
        "spectra polar": Impl(ours(RiemannianSGD, "polar")),
        "spectra qr": Impl(ours(RiemannianSGD, "qr")),
        "geoopt EuclideanStiefel (QR)": Impl(theirs(geoopt.optim.RiemannianSGD)),
    }
    with torch.no_grad():
        cells, attempts = timer.measure(impls)
    rows.append(case_row(f"RSGD step, one St({n}, {p}) float64", cells, attempts, calls=steps))
    step(f"one call: RAdam step St({n}, {p})")
    impls = {
        "spectra polar": Impl(ours(RiemannianAdam, "polar")),
        "geoopt EuclideanStiefel (QR)": Impl(theirs(geoopt.optim.RiemannianAdam)),
    }
    with torch.no_grad():
        cells, attempts = timer.measure(impls)
    rows.append(case_row(f"RAdam step, one St({n}, {p}) float64", cells, attempts, calls=steps))
    return rows


def one_call(quick: bool, timer: Timer, step: Callable[[str], None]) -> dict[str, Any]:
    """The "one call" table: one matrix, forward + backward of one matrix, one generalized
    pair, a per-graph transform and one optimizer parameter, each against the tool it
    replaces. Rows whose
    peer is not installed are skipped and named."""
    table: dict[str, Any] = {
        "title": (
            "one call: one matrix, one pair, one graph, one optimizer step vs the tool "
            "each replaces"
        ),
        "rows": _matrix_rows(quick, timer, step),
        "notes": [
            "Each cell times a loop of `calls` calls (the row's JSON): microseconds per call "
            "= ms / calls x 1000; the graphs are cloned per call, as a dataset transform gets them."
        ],
        "skipped": [],
    }
    skip = missing("torch_geometric", "pip install 'torch-spectra[graph]'")
    if skip:
        table["skipped"].append(skip)
        step("one call: LaplacianPE skipped")
    else:
        table["rows"].append(_graph_row(quick, timer, step))
    skip = missing("geoopt")
    if skip:
        table["skipped"].append(skip)
        step("one call: RSGD skipped")
        step("one call: RAdam skipped")
    else:
        table["rows"] += _stiefel_rows(quick, timer, step)
    return table
