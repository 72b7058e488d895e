"""The complex and generalized rows of ``spectra bench`` (issue 26): peers, labels, errors."""

from __future__ import annotations

import json

import pytest
import torch

from spectra import cli
from spectra._bench import suite, timing
from spectra._bench.peers import random_overlap, random_symmetric
from spectra._bench.timing import Timer

TINY_COMPLEX = {"quick": ((torch.complex64, 4, 40), (torch.complex128, 3, 40))}
TINY_GENERALIZED = {"quick": ((torch.complex128, 5, 40), (torch.float64, 4, 40))}


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setattr(suite, "COMPLEX_SIZES", TINY_COMPLEX)
    monkeypatch.setattr(suite, "GENERALIZED_SIZES", TINY_GENERALIZED)


def test_inputs_are_hermitian_and_the_overlap_positive_definite():
    for dtype in (torch.float64, torch.complex128):
        a = random_symmetric(3, 5, dtype)
        b = random_overlap(3, 5, dtype)
        assert a.dtype == b.dtype == dtype
        assert torch.equal(a, a.mH) and torch.equal(b, b.mH)
        assert bool((torch.linalg.eigvalsh(b) > 0.5).all())
        if dtype.is_complex:
            assert float(a.imag.abs().max()) > 0.1  # really complex, not a real matrix cast


def test_extra_rows_have_their_peers_labels_and_small_errors(tiny):
    rows = suite.bench_extra("cpu", True, Timer(repeats=1, min_repeats=1), 8, 2)
    labels = [r["dtype"] for r in rows]
    assert labels == ["complex64", "complex128", "complex128 eigh(a, b)", "float64 eigh(a, b)"]
    for r in rows[:2]:
        assert {"thread fan-out", "torch batched", "scipy loop", "spectra"} <= set(r["cells"])
        assert r["max_eigenvalue_error_vs_scipy"] < (1e-5 if r["dtype"] == "complex64" else 1e-12)
    for r in rows[2:]:
        assert set(r["cells"]) == {
            "torch reduction",
            "reduction fan-out",
            "scipy loop (a, b)",
            "spectra",
        }
        assert r["cells"]["scipy loop (a, b)"]["timed_on"] == 8  # sampled, scaled to 40
        assert r["max_eigenvalue_error_vs_scipy"] < 1e-12
    assert suite.extra_steps(True, "cpu") == 4 and suite.extra_steps(True, "cuda") == 0
    assert suite.bench_extra("cuda", True, Timer(repeats=1), 8, 2) == []


def test_reduction_peer_solves_the_generalized_problem():
    from spectra.core import baselines

    a = random_symmetric(6, 5, torch.complex128)
    b = random_overlap(6, 5, torch.complex128)
    for w, v in (baselines.generalized_reduction(a, b), baselines.ThreadFanOut(2)(a, b)):
        torch.testing.assert_close(a @ v, b @ v * w.unsqueeze(-2).to(v.dtype))
        torch.testing.assert_close(v.mH @ b @ v, torch.eye(5, dtype=v.dtype).expand(6, 5, 5))


def test_a_default_quick_run_adds_the_rows_and_one_verdict_per_label(tiny, tmp_path, monkeypatch):
    quiet = {"loadavg": [0.1, 0.1, 0.1], "cpu_share": 0.99}
    monkeypatch.setattr(timing, "load_snapshot", lambda cores, probe=True: dict(quiet))
    monkeypatch.setattr(suite, "QUICK_SIZES", ((2, 40),))
    import spectra._commands.bench as bench_cmd

    monkeypatch.setattr(bench_cmd, "QUICK_SIZES", ((2, 40),), raising=False)
    out = tmp_path / "b.json"
    assert cli.main(["bench", "--quick", "--repeats", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    labels = {r["dtype"] for r in report["rows"]}
    assert {"complex64", "complex128 eigh(a, b)", "float64 eigh(a, b)"} <= labels
    assert set(report["verdict"]) == labels
