"""A batch with graphs on the sparse path and others solved densely: the core calls run as
jobs overlapped over the workers (``spectra.graph._overlap``); the features are those of
the calls in turn and of SciPy / PyG."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import spectra.graph._sparse_path as sparse_path
import spectra.graph._spectrum as spectrum
from spectra.graph import LaplacianPE, laplacian_pe
from spectra.graph._overlap import Job, guided_chunks, run_jobs

from .graphs import batch_of, dense_adj, random_graph, ref_eigh, ref_laplacian

#: graphs of a few hundred nodes go to the sparse path (the cost model's cut is 513)
SPARSE_FROM = 200
SIZES = [30, 45, 150, 260, 35, 330, 180, 240]


def graphs(seed: int, sizes=SIZES) -> list:
    rng = np.random.default_rng(seed)
    return [(*random_graph(rng, n, p=4.0 / n, weighted=True), n) for n in sizes]


@pytest.fixture
def calls(monkeypatch):
    """Every core call of the graph domain: ``(path, thread, workers option)``; and the
    ``workers`` each :func:`run_jobs` was given (``calls.ran``)."""
    sparse_path.core_has_sparse()  # its cached probe is no call of a batch
    seen = _Calls()
    ran: list[int] = []

    def spy(module, name, path):
        inner = getattr(module, name)

        def wrapped(a, *args, **kwargs):
            seen.append((path, threading.get_ident(), kwargs.get("workers")))
            return inner(a, *args, **kwargs)

        monkeypatch.setattr(module, name, wrapped)

    spy(sparse_path, "eigh", "sparse")
    spy(spectrum, "eigh", "dense")
    real_run = spectrum.run_jobs

    def run(jobs, workers):
        ran.append(workers)
        return real_run(jobs, workers)

    monkeypatch.setattr(spectrum, "run_jobs", run)
    seen.ran = ran
    return seen


class _Calls(list[tuple[str, int, object]]):
    ran: list[int]


def _pe(gs, convention="spectra", **options):
    ei, ew, batch, sizes = batch_of(gs)
    out = laplacian_pe(ei, k=6, edge_weight=ew, batch=batch, dtype=torch.float64,
                       convention=convention,
                       eigh_options={"sparse_from": SPARSE_FROM, **options})  # fmt: skip
    return out, np.cumsum([0, *sizes])


@pytest.mark.parametrize("convention", ["spectra", "pyg"])
def test_overlapped_batch_matches_scipy(calls, convention):
    gs = graphs(1)
    out, ptr = _pe(gs, convention, workers=2)
    assert calls.ran == [2]  # overlapped over two workers
    paths = [p for p, _, _ in calls]
    assert paths.count("sparse") >= 1 and paths.count("dense") >= 2
    assert all(w == 1 for _, _, w in calls)  # one kernel thread per job: no nested fan-out
    k = 6
    for g, (gei, gew, n) in enumerate(gs):
        lap = ref_laplacian(dense_adj(gei, n, gew), "sym")
        w, v = ref_eigh(lap)
        first = 1 if convention == "pyg" else int(out.num_components[g])
        np.testing.assert_allclose(out.eigenvalues[g].numpy(), w[first : first + k],
                                   rtol=1e-8, atol=1e-10)  # fmt: skip
        pe = out.pe[ptr[g] : ptr[g + 1]].numpy()
        ref = v[:, first : first + k]
        if convention == "pyg":  # random signs: compare column by column
            pe = pe * np.sign(np.sum(pe * ref, axis=0))
        else:  # the core's gauge: largest-|entry| positive
            ref = ref * np.sign(ref[np.abs(ref).argmax(0), np.arange(k)])
        np.testing.assert_allclose(pe, ref, atol=1e-6)


def test_overlapped_equals_in_turn(calls, monkeypatch):
    gs = graphs(2)
    together, _ = _pe(gs, workers=2)
    assert calls.ran == [2]
    monkeypatch.setattr(spectrum, "overlapped", lambda *args: 1)
    in_turn, _ = _pe(gs, workers=2)
    assert calls.ran == [2, 1]
    torch.testing.assert_close(together.eigenvalues, in_turn.eigenvalues, atol=1e-10, rtol=0)
    torch.testing.assert_close(together.pe, in_turn.pe, atol=1e-7, rtol=0)
    assert torch.equal(together.mask, in_turn.mask)


def test_overlap_needs_both_paths_two_workers_and_no_budget(calls):
    gs = graphs(3)
    _pe(gs, workers=1)
    _pe(gs, workers=2, max_memory=2**30)  # two calls in flight would hold two working sets
    _pe(graphs(3, [30, 45, 150]), workers=2)  # no graph on the sparse path
    assert calls.ran == [1, 1, 1]
    _pe(gs, workers=2)
    assert calls.ran[-1] == 2


def test_jobs_ran_on_two_threads_when_one_is_slow(monkeypatch):
    """With one job holding its worker, the other worker takes the rest (dynamic)."""
    started = threading.Event()
    threads: list[int] = []

    def slow() -> list[str]:
        started.set()
        threads.append(threading.get_ident())
        for _ in range(200):  # until the other worker has taken a job (bounded)
            if len(threads) > 1:
                break
            threading.Event().wait(0.01)
        return ["slow"]

    def quick(name: str):
        def run() -> list[str]:
            started.wait(5)
            threads.append(threading.get_ident())
            return [name]

        return run

    jobs = [Job(1.0, quick("a")), Job(5.0, slow), Job(0.5, quick("b"))]
    assert run_jobs(jobs, 2) == ["a", "slow", "b"]  # the jobs' order, not the run order
    assert len(set(threads)) == 2


def test_a_failing_job_raises_and_stops_the_others():
    ran: list[str] = []

    def bad() -> list[str]:
        raise ValueError("job failed")

    def ok(name: str):
        return lambda: ran.append(name) or [name]

    jobs = [Job(3.0, bad), *(Job(1.0, ok(str(i))) for i in range(50))]
    with pytest.raises(ValueError, match="job failed"):
        run_jobs(jobs, 2)
    assert len(ran) < 50


def test_guided_chunks_cover_everything_large_first():
    rng = np.random.default_rng(0)
    costs = sorted(rng.uniform(1e-3, 5e-2, 80), reverse=True)
    chunks = guided_chunks(list(range(80)), costs, 2, before=0.2)
    assert [g for c in chunks for g in c] == list(range(80))
    sums = [sum(costs[g] for g in c) for c in chunks]
    assert sums[0] > sums[-1] and len(chunks) >= 6


def test_transform_on_a_pyg_batch_matches_pyg_per_graph():
    pytest.importorskip("torch_geometric")
    from torch_geometric.data import Batch, Data
    from torch_geometric.transforms import AddLaplacianEigenvectorPE

    gs = graphs(4)
    data = [Data(edge_index=ei, num_nodes=n) for ei, _, n in gs]
    ours = LaplacianPE(4, convention="pyg", dtype=torch.float64,
                       eigh_options={"sparse_from": SPARSE_FROM, "workers": 2})  # fmt: skip
    out = ours(Batch.from_data_list(data))
    pyg = AddLaplacianEigenvectorPE(4, is_undirected=True)
    start = 0
    for d in data:
        ref = pyg(d.clone()).laplacian_eigenvector_pe.double()
        got = out.laplacian_eigenvector_pe[start : start + d.num_nodes]
        start += d.num_nodes
        signs = torch.sign((got * ref).sum(0))  # PyG flips signs at random
        torch.testing.assert_close(got * signs, ref, atol=1e-4, rtol=0)  # ARPACK in float32


@pytest.mark.parametrize("ratio", [1e6, 0.0])
def test_sparse_groups_as_one_call_or_one_job_each(calls, monkeypatch, ratio):
    """Sparse graphs in two groups (sizes more than 2x apart): one core call for all of
    them where they cost at most ``TOGETHER_RATIO`` times the dense jobs (here forced
    always), one call per group otherwise (forced never); the same features both ways."""
    monkeypatch.setattr(spectrum, "TOGETHER_RATIO", ratio)
    gs = graphs(4, [30, 45, 150, 210, 35, 460, 180, 220])  # sparse: 210, 220 and 460
    out, _ = _pe(gs, workers=2)
    assert calls.ran == [2]
    sparse_calls = [c for c in calls if c[0] == "sparse"]
    assert len(sparse_calls) == (1 if ratio else 2)
    monkeypatch.setattr(spectrum, "overlapped", lambda *args: 1)  # in turn: one call
    in_turn, _ = _pe(gs, workers=2)
    torch.testing.assert_close(out.eigenvalues, in_turn.eigenvalues, atol=1e-10, rtol=0)
    torch.testing.assert_close(out.pe, in_turn.pe, atol=1e-7, rtol=0)
