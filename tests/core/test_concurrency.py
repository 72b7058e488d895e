"""Threads, fork, inference mode, cancellation: no hang, no failure of a valid call, no leak.

Every test that claims the thread pool asserts that the plan really splits the batch
(``spectra.plan(...).workers > 1``). Forks run in a subprocess with a timeout, so a hang
fails the test instead of blocking the suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

import spectra
from spectra.core._pipeline import _execute
from spectra.core._support import _threads

from .helpers import random_hermitian

N, BATCH = 32, 256  # enough work that the planner splits it across 2 workers


def _batch(dtype=torch.float64, seed=0):
    return random_hermitian((BATCH,), N, dtype, seed=seed)


def _assert_split(workers=2):
    p = spectra.plan(N, BATCH, torch.float64, "cpu", workers=workers)
    assert p.workers > 1, str(p)


def _run_script(body: str, timeout: float = 120) -> str:
    """Run ``body`` in a fresh interpreter; a hang fails after ``timeout`` seconds."""
    code = textwrap.dedent(body)
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the script hung for {timeout} s:\n{code}")
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


PRELUDE = """
import os, sys, torch, spectra
from spectra.core._support import _threads
x = torch.randn(256, 32, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
a = x + x.mT
assert spectra.plan(32, 256, torch.float64, "cpu", workers=2).workers > 1
ref = spectra.eigh(a, workers=2).eigenvalues
assert _threads._pool is not None  # the parent's pool exists before the fork
"""


FORK_SCRIPT = (
    PRELUDE
    + """
import multiprocessing as mp, time
from torch.utils.data import DataLoader, Dataset

# 1. a raw os.fork: the child computes with a fresh pool
pid = os.fork()
if pid == 0:
    try:
        w = spectra.eigh(a, workers=2).eigenvalues
        os._exit(0 if torch.equal(w, ref) else 3)
    except BaseException:
        os._exit(4)
deadline = time.monotonic() + 60
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        sys.exit("os.fork child hung")
    time.sleep(0.05)
assert os.waitstatus_to_exitcode(status) == 0, status
print("os.fork ok")

# 2. a multiprocessing pool with the fork start method
def work(i):
    part = a[i * 64:(i + 1) * 64 + 64]  # 128 matrices: enough work to split
    assert spectra.plan(32, len(part), torch.float64, "cpu", workers=2).workers > 1
    return float(spectra.eigh(part, workers=2).eigenvalues.sum())

with mp.get_context("fork").Pool(2) as pool:
    got = pool.map_async(work, range(3)).get(timeout=60)
assert len(got) == 3
print("mp fork ok")

# 3. a DataLoader whose forked workers apply spectra
class Spectra(Dataset):  # items of 128 matrices: each split across the pool
    def __len__(self):
        return 2
    def __getitem__(self, i):
        return spectra.eigh(a[i * 128:(i + 1) * 128], workers=2).eigenvalues

loader = DataLoader(Spectra(), batch_size=1, num_workers=2,
                    multiprocessing_context="fork", timeout=60)
out = torch.cat([b.reshape(-1, 32) for b in loader])
assert torch.allclose(out, ref, atol=1e-10), (out - ref).abs().max()
print("dataloader ok")

# 4. the issue's case: DataLoader workers applying LaplacianPE to PyG Batches
from torch_geometric.data import Batch, Data
from spectra.graph import LaplacianPE

ring = torch.tensor([[i for i in range(40)] + [(i + 1) % 40 for i in range(40)],
                     [(i + 1) % 40 for i in range(40)] + [i for i in range(40)]])
assert spectra.plan(40, 64, torch.float32, "cpu", workers=2).workers > 1  # uses the pool
pe = LaplacianPE(3, eigh_options={"workers": 2})
parent = pe(Batch.from_data_list([Data(edge_index=ring, num_nodes=40)] * 64))

class Graphs(Dataset):
    def __len__(self):
        return 4
    def __getitem__(self, i):
        out = pe(Batch.from_data_list([Data(edge_index=ring, num_nodes=40)] * 64))
        return out.laplacian_eigenvector_pe

loader = DataLoader(Graphs(), batch_size=1, num_workers=2,
                    multiprocessing_context="fork", timeout=60)
for got in loader:
    assert torch.equal(got[0], parent.laplacian_eigenvector_pe)
print("laplacian-pe ok")
"""
)


@pytest.fixture(scope="module")
def fork_output():
    return _run_script(FORK_SCRIPT, timeout=170)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("check", ["os.fork", "mp fork", "dataloader", "laplacian-pe"])
def test_forked_children_use_a_fresh_pool(fork_output, check):
    """A raw ``os.fork``, a ``multiprocessing`` fork pool, a fork ``DataLoader`` and one
    whose workers apply ``LaplacianPE`` to PyG Batches (the issue's case), each created
    after the parent's pool exists, compute without hanging."""
    assert f"{check} ok" in fork_output


def test_inference_mode_with_the_batch_split_across_workers():
    _assert_split()
    a = _batch()
    with torch.inference_mode():
        w, v = spectra.eigh(a, workers=2)
        w_only = spectra.eigvalsh(a, workers=2)
    assert w.is_inference() and v.is_inference()
    ref = spectra.eigh(a, workers=1)
    torch.testing.assert_close(w, ref.eigenvalues, atol=0, rtol=0)
    torch.testing.assert_close(w_only, ref.eigenvalues, atol=1e-12, rtol=0)


def test_workers_run_under_the_callers_grad_and_inference_modes():
    def modes(_lo, _hi):
        return torch.is_grad_enabled(), torch.is_inference_mode_enabled()

    with torch.no_grad():
        assert set(_threads.fan_out(modes, 4, 2)) == {(False, False)}
    assert set(_threads.fan_out(modes, 4, 2)) == {(True, False)}
    with torch.inference_mode():
        assert set(_threads.fan_out(modes, 4, 2)) == {(False, True)}


def _join(threads: list[threading.Thread], timeout: float = 120) -> None:
    """Join every thread; one still running after ``timeout`` (hung) fails the test."""
    for t in threads:
        t.join(timeout=timeout)
    hung = [t.name for t in threads if t.is_alive()]
    assert not hung, f"threads still running after {timeout} s: {hung}"


@pytest.fixture
def restore_pool(monkeypatch):
    """Tests that enlarge the shared pool leave the later tests the pool they had."""
    _threads._get_pool(2)
    monkeypatch.setattr(_threads, "_pool", _threads._pool)
    monkeypatch.setattr(_threads, "_pool_size", _threads._pool_size)


def test_a_larger_workers_never_shuts_the_pool_down_under_other_callers(restore_pool):
    old = _threads._get_pool(2)
    bigger = _threads._get_pool(_threads._pool_size + 3)
    assert bigger is not old
    assert old.submit(lambda: 7).result(timeout=30) == 7  # still accepts work
    _assert_split()
    a = _batch()
    errors: list[BaseException] = []

    def caller(workers):
        try:
            for _ in range(4):
                spectra.eigh(a, workers=workers)
        except BaseException as exc:  # pragma: no cover - the failure being tested
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(w,)) for w in (2, 5, 9, 13)]
    for t in threads:
        t.start()
    _join(threads)
    assert not errors, errors


def _new_thread_num_threads() -> int:
    seen: list[int] = []
    t = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    t.start()
    t.join()
    return seen[0]


def test_concurrent_calls_leave_no_thread_setting_behind():
    from threadpoolctl import threadpool_info

    def limits():
        return sorted(
            (i["internal_api"], i["filepath"], i["num_threads"]) for i in threadpool_info()
        )

    original, blas_before = torch.get_num_threads(), limits()
    assert _new_thread_num_threads() == original
    _assert_split()
    a = _batch()
    small = random_hermitian((3,), 8, torch.float64, seed=1)  # single-worker, 1-thread path

    def caller():
        for _ in range(2):
            spectra.eigh(a, workers=2)
            spectra.eigh(small)
            spectra.eigh(small.numpy(), strategy="numpy", workers=2)

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for t in threads:
        t.start()
    _join(threads)
    assert torch.get_num_threads() == original
    assert _new_thread_num_threads() == original
    assert limits() == blas_before


def test_pool_threads_run_one_kernel_thread_each():
    if not _threads._get_knobs().available:
        pytest.skip("no per-thread OpenMP control in this torch build: nothing is limited")
    pool = _threads._get_pool(2)
    assert pool.submit(torch.get_num_threads).result(timeout=30) == 1
    before = torch.get_num_threads()
    with _threads.single_threaded_kernels():
        assert torch.get_num_threads() == 1
        assert _new_thread_num_threads() == before  # invisible to other threads
    assert torch.get_num_threads() == before


def test_a_failing_part_cancels_the_others(monkeypatch):
    """Part 1 fails on its first sub-block; part 0 (100 sub-blocks) must stop early."""
    monkeypatch.setattr(_execute, "SUB_BLOCK_BYTES", 1)  # one matrix per sub-block
    batch, n = 1000, 4
    p = spectra.plan(  # LAPACK's cost: 1,000 matrices are enough to fan out (not a kernel's)
        n, batch, torch.float64, "cpu", workers=2, chunk_size=batch, strategy="torch"
    )
    assert p.workers == 2, str(p)
    a = random_hermitian((batch,), n, torch.float64, seed=2)
    failed = threading.Event()
    processed = []

    def pre(block, offset):
        if offset >= batch // 2:
            failed.set()
            raise RuntimeError("part 1 fails")
        processed.append(offset)
        if len(processed) == 1:
            assert failed.wait(timeout=30)
        time.sleep(0.005)

    with pytest.raises(RuntimeError, match="part 1 fails"):
        _execute.execute(p, a, pre)
    count = len(processed)
    # part 0 may not have started at all when part 1 failed (a loaded machine): what is
    # tested is that it never runs through its half
    assert count < batch // 2, count
    time.sleep(0.05)
    assert len(processed) == count  # nothing still running after the call returned


CTRL_C_SCRIPT = """
import _thread, os, signal, threading, time
from spectra.core._support import _threads

# a shell that starts the test run in the background makes SIGINT ignored, and children
# inherit that (Python then installs no handler): restore what an interactive user has
signal.signal(signal.SIGINT, signal.default_int_handler)

for name, interrupt in [
    ("interrupt_main", _thread.interrupt_main),
    ("SIGINT", lambda: os.kill(os.getpid(), signal.SIGINT)),
]:
    counts = [0, 0]

    def part(lo, hi):
        for _ in range(2000):  # ~10 s per part if never cancelled
            _threads.check_cancelled()
            counts[lo] += 1
            time.sleep(0.005)
        return lo

    threading.Timer(0.3, interrupt).start()
    try:
        _threads.fan_out(part, 2, 2)
        raise SystemExit("not interrupted")
    except KeyboardInterrupt:
        pass
    after = list(counts)
    time.sleep(0.2)
    assert counts == after, (counts, after)  # the parts stopped before fan_out returned
    assert max(counts) < 2000, counts
    print(name, "ok", counts)
"""


@pytest.mark.timeout(120)
def test_ctrl_c_cancels_the_running_parts():
    """Ctrl-C in the caller (simulated, and a real SIGINT) stops every part at its next
    sub-block; none is still running when the KeyboardInterrupt reaches the caller."""
    out = _run_script(CTRL_C_SCRIPT, timeout=110)
    assert "interrupt_main ok" in out and "SIGINT ok" in out


def test_the_kernel_knobs_find_torchs_runtime_through_a_symlinked_environment(
    tmp_path, monkeypatch
):
    """/proc/self/maps names libraries by resolved paths; a virtual environment reached
    through a symbolic link (and scikit-learn's own libgomp loaded) must still give the
    knobs torch's OpenMP runtime, or pool threads run torch at full thread count."""
    import os

    pytest.importorskip("sklearn")
    import sklearn.utils  # noqa: F401  (loads scikit-learn's bundled OpenMP runtime)

    link = tmp_path / "site-packages"
    os.symlink(os.path.dirname(os.path.dirname(torch.__file__)), link)
    monkeypatch.setattr(torch, "__file__", str(link / "torch" / "__init__.py"))
    knobs = _threads._ThreadKnobs()
    if not knobs.available:
        pytest.skip("no per-thread OpenMP control in this torch build")
    seen = []

    def probe():
        torch.get_num_threads()  # torch's lazy per-thread init first
        knobs.omp_set(1)
        seen.append(torch.get_num_threads())

    worker = threading.Thread(target=probe)
    worker.start()
    worker.join()
    assert seen == [1]
