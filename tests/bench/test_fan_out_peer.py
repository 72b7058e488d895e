"""The thread fan-out peer runs torch at one thread in each of its workers, and leaves the
caller's setting as it was (``spectra.core.baselines.ThreadFanOut``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import scipy.linalg
import torch

from spectra.core import baselines

T = TypeVar("T")


def _in_fresh_thread(fn: Callable[[], T]) -> T:
    """``fn()``'s result, computed in a new thread (whose torch settings start unset)."""
    out: list[T] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_a_worker_part_sets_one_thread_in_its_own_thread():
    a = torch.eye(4, dtype=torch.float64)[None]

    def part() -> tuple[int, torch.Tensor]:
        w, _ = baselines._one_thread_eigh(a)
        return torch.get_num_threads(), w

    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert _in_fresh_thread(torch.get_num_threads) == 2  # a new thread's default
        threads, w = _in_fresh_thread(part)
    finally:
        torch.set_num_threads(old)
    assert threads == 1
    assert w.tolist() == [[1.0, 1.0, 1.0, 1.0]]


def test_a_reduction_part_sets_one_thread_and_solves_the_pair():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 5, 5, dtype=torch.float64, generator=g)
    a = x + x.mT
    y = torch.randn(2, 5, 5, dtype=torch.float64, generator=g)
    b = y @ y.mT + 5 * torch.eye(5, dtype=torch.float64)

    def part() -> tuple[int, torch.Tensor]:
        w, _ = baselines._one_thread_reduction((a, b))
        return torch.get_num_threads(), w

    threads, w = _in_fresh_thread(part)
    assert threads == 1
    for i in range(2):
        ref = scipy.linalg.eigh(a[i].numpy(), b[i].numpy(), eigvals_only=True)
        assert torch.allclose(w[i], torch.from_numpy(ref), rtol=0, atol=1e-10)


def test_the_callers_thread_count_is_restored():
    old = torch.get_num_threads()
    fan = baselines.ThreadFanOut(2)
    try:
        torch.set_num_threads(2)
        a = torch.eye(6, dtype=torch.float64).expand(4, 6, 6).contiguous()
        w, v = fan(a)
        assert torch.get_num_threads() == 2
        assert w.shape == (4, 6) and v.shape == (4, 6, 6)
        assert torch.equal(w, torch.ones(4, 6, dtype=torch.float64))
    finally:
        torch.set_num_threads(old)
        fan.pool.shutdown()
