"""``spectra bench --domains``: one small table per domain, timed like the core table.

Each case times spectra's domain API and the peers a user of that field knows, interleaved
(round-robin) after a warm-up, on the same inputs; peers that loop in Python over datasets,
k-points or graphs run on the first items and are scaled linearly (labelled extrapolated).
A missing peer package is skipped with the extra that installs it.

The SciPy per-k loop's solves come from :mod:`spectra.core.baselines`; the other peers
(sklearn, PythTB, PyG, geoopt) are called through their own APIs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch

from ..core import baselines
from .cases import PEERS_EXTRA, case_row, missing, molecule_like
from .one_call import STEPS as ONE_CALL_STEPS
from .one_call import one_call
from .timing import Impl, Timer

__all__ = ["DOMAINS", "PEERS_EXTRA", "STEPS", "case_row", "missing", "molecule_like"]


def pca(quick: bool, timer: Timer, step: Callable[[str], None]) -> dict[str, Any]:
    from spectra.pca import BatchPCA

    table: dict[str, Any] = {"title": "PCA: BatchPCA vs sklearn PCA per dataset", "rows": []}
    table["unit"] = "datasets"
    skip = missing("sklearn")
    table["skipped"] = [skip] if skip else []
    b, n, d, k = (200, 200, 32, 5) if quick else (500, 200, 32, 5)
    sample = 50 if quick else 125
    for dtype in ("float64",) if quick else ("float64", "float32"):
        step(f"PCA {b}x{n}x{d} {dtype}")
        rng = np.random.default_rng(0)
        x = (rng.normal(size=(b, n, d)) * np.geomspace(10.0, 1.0, d) ** 0.5).astype(dtype)
        impls = {"spectra BatchPCA": Impl(partial(BatchPCA(k).fit, x))}
        if not skip:
            from sklearn.decomposition import PCA

            def loop(x: np.ndarray = x) -> None:
                for xi in x[:sample]:
                    PCA(k, svd_solver="full").fit(xi)

            impls["sklearn PCA loop"] = Impl(loop, sample, b)
        cells, attempts = timer.measure(impls)
        table["rows"].append(case_row(f"{b} datasets {n}x{d} k={k} {dtype}", cells, attempts))
    return table


def to_pythtb(model: Any) -> Any:
    """The same model in PythTB (hoppings from the model's H(R) blocks).

    Also used by ``benchmarks/bench_tightbinding.py``.
    """
    import pythtb

    p = pythtb.tb_model(model.dim_k, model.dim, model.lattice, model.orbitals)
    rv, hr, _ = model.blocks()
    zero = next(i for i, r in enumerate(rv) if not r.any())
    p.set_onsite(np.real(np.diag(hr[zero])).tolist())
    seen = set()
    for r, blk in zip(rv, hr, strict=True):
        for i, j in zip(*np.nonzero(blk), strict=True):
            if i == j and not r.any():
                continue
            key = min((int(i), int(j), tuple(r)), (int(j), int(i), tuple(-r)))
            if key not in seen:
                seen.add(key)
                p.set_hop(blk[i, j], int(i), int(j), r.tolist())
    return p


def random_model(norb: int, seed: int = 0) -> Any:
    """A random 2D model: ``norb`` orbitals, nearest- and next-nearest-cell hoppings.

    Also used by ``benchmarks/bench_tightbinding.py``.
    """
    from spectra.tightbinding import Model

    rng = np.random.default_rng(seed)
    m = Model(np.eye(2), rng.random((norb, 2)))
    m.set_onsite(rng.standard_normal(norb))
    for r in ([0, 0], [1, 0], [0, 1], [1, 1], [1, -1]):
        for i in range(norb):
            for j in rng.choice(norb, 4, replace=False):
                if (i == j and not any(r)) or (not any(r) and j < i):
                    continue
                m.add_hopping(complex(*rng.standard_normal(2)) * 0.3, i, int(j), r, replace=True)
    return m


def tightbinding(quick: bool, timer: Timer, step: Callable[[str], None]) -> dict[str, Any]:
    from threadpoolctl import threadpool_limits

    from spectra.tightbinding import graphene

    table: dict[str, Any] = {
        "title": "tight-binding bands: Model.bands vs PythTB and a SciPy per-k loop",
        "rows": [],
        "unit": "k-points",
    }
    skip = missing("pythtb")
    table["skipped"] = [skip] if skip else []
    cases = [("graphene", graphene(), 2_000 if quick else 10_000, 500 if quick else 2_000)]
    cases.append(("random 32-orbital 2D", random_model(32), 500 if quick else 4_000, 20))
    for name, model, nk, sample in cases:
        step(f"bands {name} {nk} k")
        k = np.random.default_rng(1).random((nk, model.dim_k))
        rv, hr, _ = model.blocks()

        def scipy_loop(kp: np.ndarray = k[:sample], rv: Any = rv, hr: Any = hr) -> None:
            with threadpool_limits(1):  # threaded LAPACK only oversubscribes one small H(k)
                hs = (np.tensordot(np.exp(2j * np.pi * (rv @ kk)), hr, axes=1) for kk in kp)
                baselines.scipy_loop(hs, eigvals_only=True)  # one H(k) built, one solved

        def pythtb_loop(p: Any, kp: np.ndarray = k[:sample]) -> None:
            with threadpool_limits(1):
                p.solve_all(kp)

        impls = {"spectra Model.bands": Impl(partial(model.bands, k))}
        if not skip:
            p = to_pythtb(model)
            impls["PythTB solve_all"] = Impl(partial(pythtb_loop, p), sample, nk)
        impls["SciPy per-k loop"] = Impl(scipy_loop, sample, nk)
        cells, attempts = timer.measure(impls)
        table["rows"].append(case_row(f"{name}, {model.nstates} bands, {nk} k", cells, attempts))
    return table


def graph(quick: bool, timer: Timer, step: Callable[[str], None]) -> dict[str, Any]:
    table: dict[str, Any] = {
        "title": "graph: LaplacianPE vs PyG AddLaplacianEigenvectorPE",
        "rows": [],
        "unit": "graphs",
    }
    skip = missing("torch_geometric", "pip install 'torch-spectra[graph]'")
    table["skipped"] = [skip] if skip else []
    if skip:  # both sides need PyG's Data/Batch
        return table
    from torch_geometric.data import Batch, Data
    from torch_geometric.transforms import AddLaplacianEigenvectorPE

    from spectra.graph import LaplacianPE

    count, k = (500, 8) if quick else (2_000, 8)
    sample = 100 if quick else 400
    step(f"LaplacianPE {count} graphs")
    rng = np.random.default_rng(0)
    sizes = rng.integers(10, 41, size=count)
    graphs = [Data(edge_index=molecule_like(rng, int(s)), num_nodes=int(s)) for s in sizes]
    batch = Batch.from_data_list(graphs)
    ours, pyg = LaplacianPE(k), AddLaplacianEigenvectorPE(k, is_undirected=True)

    def pyg_loop() -> None:
        for g in graphs[:sample]:
            pyg(g)

    impls = {
        "spectra LaplacianPE": Impl(lambda: ours(batch)),
        "PyG per-graph loop": Impl(pyg_loop, sample, count),
    }
    cells, attempts = timer.measure(impls)
    table["rows"].append(case_row(f"{count} graphs of 10-40 nodes, k={k}", cells, attempts))
    return table


class Orthogonal(torch.nn.Module):
    """A free weight behind ``torch.nn.utils.parametrizations.orthogonal``: ``.weight`` is
    the frame, recomputed from the free weight on every access (also used by
    ``benchmarks/bench_stiefel.py``)."""

    def __init__(self, x: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(x.clone())
        torch.nn.utils.parametrizations.orthogonal(self, "weight")


def stiefel(quick: bool, timer: Timer, step: Callable[[str], None]) -> dict[str, Any]:
    from spectra.stiefel import RiemannianSGD, Stiefel, StiefelParameter

    batch, n, p = (1024, 64, 8) if quick else (4096, 64, 8)
    table: dict[str, Any] = {
        "title": f"Stiefel: {batch} frames {n}x{p} float32, polar retraction / SGD step",
        "rows": [],
        "notes": [
            "torch orthogonal: torch.nn.utils.parametrizations.orthogonal, the frame "
            "recomputed from the free weight (its retraction); torch default threads."
        ],
    }
    skip = missing("geoopt")
    table["skipped"] = [skip] if skip else []
    gen = torch.Generator().manual_seed(0)
    st = Stiefel()
    x0 = st.random(batch, n, p, generator=gen)
    xi = st.proj(x0, 0.1 * torch.randn(x0.shape, generator=gen))
    c = torch.randn(x0.shape, generator=gen)
    if not skip:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import geoopt
    ortho = Orthogonal(x0)

    step("Stiefel retraction")
    impls = {"spectra polar": Impl(lambda: st.retract(x0, xi))}
    if not skip:
        man = geoopt.EuclideanStiefel()
        impls["geoopt EuclideanStiefel (QR)"] = Impl(lambda: man.retr(x0, xi))
    impls["torch orthogonal"] = Impl(lambda: ortho.weight)
    with torch.no_grad():
        cells, attempts = timer.measure(impls)
    table["rows"].append(case_row("retraction", cells, attempts))

    step("Stiefel SGD step")
    sp = StiefelParameter(x0.clone(), check=False)
    steps: dict[str, tuple[Any, Callable[[], torch.Tensor]]] = {
        "spectra polar": (RiemannianSGD([sp], lr=0.1), lambda: sp)
    }
    if not skip:
        gp = geoopt.ManifoldParameter(x0.clone(), manifold=geoopt.EuclideanStiefel())
        steps["geoopt EuclideanStiefel (QR)"] = (
            geoopt.optim.RiemannianSGD([gp], lr=0.1),
            lambda: gp,
        )
    steps["torch orthogonal"] = (
        torch.optim.SGD(ortho.parameters(), lr=0.1),
        lambda: ortho.weight,
    )

    def make(opt: Any, frame: Callable[[], torch.Tensor]) -> Callable[[], None]:
        def run() -> None:
            opt.zero_grad()
            (frame() * c).sum().backward()
            opt.step()

        return run

    cells, attempts = timer.measure({k: Impl(make(*v)) for k, v in steps.items()})
    table["rows"].append(case_row("SGD step (loss, backward, step)", cells, attempts))
    return table


DOMAINS: dict[str, Callable[[bool, Timer, Callable[[str], None]], dict[str, Any]]] = {
    "pca": pca,
    "tightbinding": tightbinding,
    "graph": graph,
    "stiefel": stiefel,
    "one_call": one_call,
}
#: progress steps per domain (quick, full)
STEPS = {
    "pca": (1, 2),
    "tightbinding": (2, 2),
    "graph": (1, 1),
    "stiefel": (2, 2),
    "one_call": (ONE_CALL_STEPS, ONE_CALL_STEPS),
}
