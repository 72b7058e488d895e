"""Shared pytest configuration: CUDA marker handling and per-dtype tolerances."""

from __future__ import annotations

import pytest
import torch


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def windows(monkeypatch):
    """Every partial dense solve's ``(n, lo, hi)``, recorded at the solver (the core's
    ``lapack-subset`` strategy): tests assert the partial solve ran, and where."""
    from spectra.core._solvers import _lapack_subset

    seen: list[tuple[int, int, int]] = []
    inner = _lapack_subset.window_into

    def spy(a, w, v, lo, hi):
        seen.append((a.shape[-1], lo, hi))
        return inner(a, w, v, lo, hi)

    monkeypatch.setattr(_lapack_subset, "window_into", spy)
    return seen
