"""What every domain table of ``spectra bench --domains`` shares: a row from timed cells,
the skip entry of a missing peer, and the test graphs."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import torch

from .timing import Cell

PEERS_EXTRA = "pip install 'torch-spectra[peers]'"


def missing(module: str, extra: str = PEERS_EXTRA) -> dict[str, str] | None:
    """``None`` when ``module`` imports, else a skip entry naming the extra to install."""
    if importlib.util.find_spec(module) is not None:
        return None
    return {"peer": module, "reason": f"{module} is not installed ({extra})"}


def case_row(name: str, cells: dict[str, Cell], attempts: int, **details: Any) -> dict[str, Any]:
    """A domain row: cells, and each peer's time over the first spectra column's."""
    base = next(k for k in cells if k.startswith("spectra"))
    ours = cells[base].median
    return {
        "case": name,
        "cells": {k: c.to_json() for k, c in cells.items()},
        "ratios": {k: c.median / ours for k, c in cells.items() if not k.startswith("spectra")},
        "attempts": attempts,
        **details,
    }


def molecule_like(rng: np.random.Generator, n: int) -> torch.Tensor:
    """An undirected connected sparse graph: a random tree plus a few ring closures."""
    edges = [(i, int(rng.integers(0, i))) for i in range(1, n)]
    for _ in range(max(1, n // 6)):
        a, b = (int(v) for v in rng.choice(n, 2, replace=False))
        edges.append((a, b))
    e = np.array(sorted({(min(a, b), max(a, b)) for a, b in edges}), dtype=np.int64).T
    return torch.from_numpy(np.concatenate([e, e[::-1]], axis=1).copy())
