"""The benchmark helpers that the figures in benchmarks/RESULTS.md rest on."""

from __future__ import annotations

import subprocess

import pytest
import torch

import spectra
from benchmarks import _release
from benchmarks.bench_kernels import paired


def test_paired_ratio_is_the_median_of_same_round_ratios():
    # medians of the cells alone would give 3.0 / 1.5 = 2.0; the rounds say 1.0
    fan = [1.0, 3.0, 3.0, 5.0]
    other = [1.0, 3.0, 1.0, 5.0]
    got = paired(fan, other)
    assert got["median"] == 1.0 and got["q1"] == 1.0 and got["q3"] == 1.5
    with pytest.raises(ValueError):
        paired([1.0], [1.0, 2.0])  # rounds must line up


def test_release_copy_imports_beside_the_working_tree():
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    old = _release.load(head.stdout.strip())
    assert old is not spectra and old.__name__.startswith("spectra_at_")
    assert old.core.eigh.__module__.startswith(old.__name__)  # its own core, not ours
    a = torch.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=torch.float64)
    torch.testing.assert_close(old.eigh(a)[0], spectra.eigh(a)[0], rtol=0, atol=1e-15)


def test_every_json_results_md_cites_is_committed():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    text = (root / "benchmarks" / "RESULTS.md").read_text()
    cited = set(re.findall(r"(?:results/)?([\w.-]+\.json)", text))
    assert len(cited) >= 10
    missing = sorted(c for c in cited if not (root / "benchmarks" / "results" / c).exists())
    assert missing == []
