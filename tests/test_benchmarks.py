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


def test_release_copy_is_an_older_spectra_beside_the_working_tree():
    """``benchmarks/_release.py`` loads a *different* version: the first release.

    Loading HEAD (as this test once did) compares the working tree with itself in a clean
    checkout. The first release is a fixed older commit: its sources must differ from the
    working tree's, live outside it, and still solve a batch to SciPy's eigenvalues.
    """
    import pathlib

    import numpy as np
    import scipy.linalg

    root = pathlib.Path(__file__).resolve().parent.parent
    ref = _release.FIRST_RELEASE
    known = subprocess.run(["git", "cat-file", "-e", f"{ref}^{{commit}}"], cwd=root)
    if known.returncode != 0:
        pytest.skip(f"the first release {ref} is not in this clone's history (shallow clone?)")
    old = _release.load(ref)
    assert old is not spectra and old.__name__ == f"spectra_at_{ref}"
    old_root = pathlib.Path(old.__file__).resolve().parent
    assert not old_root.is_relative_to(root)
    assert old.core.eigh.__module__.startswith(old.__name__)  # its own core, not ours
    changed = [
        path.relative_to(old_root)
        for path in old_root.rglob("*.py")
        if not (root / "spectra" / path.relative_to(old_root)).exists()
        or (root / "spectra" / path.relative_to(old_root)).read_text()
        != path.read_text().replace(old.__name__, "spectra")
    ]
    assert len(changed) >= 5, changed  # an older version, not the working tree again
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 6, 6))
    a = torch.from_numpy((x + x.transpose(0, 2, 1)) / 2)
    reference = torch.from_numpy(np.stack([scipy.linalg.eigvalsh(m) for m in a.numpy()]))
    torch.testing.assert_close(old.eigh(a)[0], reference, rtol=0, atol=1e-12)
    torch.testing.assert_close(spectra.eigh(a)[0], reference, rtol=0, atol=1e-12)


def test_every_json_results_md_cites_is_committed():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    text = (root / "benchmarks" / "RESULTS.md").read_text()
    cited = set(re.findall(r"(?:results/)?([\w.-]+\.json)", text))
    assert len(cited) >= 10
    missing = sorted(c for c in cited if not (root / "benchmarks" / "results" / c).exists())
    assert missing == []
