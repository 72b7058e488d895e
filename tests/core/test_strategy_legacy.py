"""A strategy registered with the first releases' flat keywords still works (issue 23: no
public behaviour change from the grouped Strategy record)."""

from __future__ import annotations

import torch

import spectra
from spectra.core import Strategy, register, unregister
from spectra.core._strategies._base import LEGACY_KEYWORDS


def test_every_flat_keyword_lands_in_its_group():
    def into(a, w, v):
        return None

    def check(a, tol):
        return None

    def seconds(n, dtype):
        return 1e-6

    def serves(n, dtype):
        return n <= 4

    def available():
        return True

    s = Strategy(
        "legacy-all",
        ("cpu",),
        lambda a, vectors: torch.linalg.eigh(a),
        "all the old keywords",
        available=available,
        tunable_on=(),
        serves=serves,
        threadable=True,
        blas_pool=True,
        memory_factor=7.0,
        matrix_seconds=seconds,
        solve_into=into,
        check_block=check,
        gauged=True,
    )
    assert (s.runs.available, s.runs.tunable_on, s.runs.serves) == (available, (), serves)
    assert (s.runs.fan_out, s.runs.blas_pool) == (True, True)
    assert (s.cost.memory, s.cost.seconds) == (7.0, seconds)
    assert (s.abilities.into, s.abilities.check, s.abilities.gauged) == (into, check, True)
    assert set(LEGACY_KEYWORDS) == {
        "available", "tunable_on", "serves", "threadable", "blas_pool", "memory_factor",
        "matrix_seconds", "solve_into", "check_block", "gauged",
    }  # fmt: skip


def test_an_old_style_strategy_is_planned_and_solves():
    calls = []

    def solve(a, vectors):
        calls.append(a.shape[0])
        return torch.linalg.eigh(a) if vectors else (torch.linalg.eigvalsh(a), None)

    register(
        Strategy("legacy-demo", ("cpu",), solve, "old keywords", tunable_on=(), threadable=True)
    )
    try:
        a = torch.randn(64, 6, 6, dtype=torch.float64)
        a = a + a.mT
        p = spectra.plan(6, 64, torch.float64, strategy="legacy-demo")
        assert p.strategy == "legacy-demo"
        w = spectra.eigvalsh(a, strategy="legacy-demo")
        assert sum(calls) == 64
        torch.testing.assert_close(w, torch.linalg.eigvalsh(a), rtol=1e-12, atol=1e-12)
    finally:
        unregister("legacy-demo")
