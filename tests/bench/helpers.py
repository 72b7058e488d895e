"""Synthetic benchmark rows (no timing) for the table, verdict and plot tests."""

from __future__ import annotations

from typing import Any

from spectra._bench.suite import row_from_cells
from spectra._bench.timing import Cell

PEERS = ("torch batched", "torch 1-thread", "numpy batched", "scipy loop", "thread fan-out")


def make_row(
    n: int,
    batch: int,
    dtype: str,
    spectra_s: float,
    peer_s: dict[str, float],
    spread: float = 0.1,
    sample: int = 256,
) -> dict[str, Any]:
    """A row whose cells have medians ``peer_s`` / ``spectra_s`` and the given spread."""

    def cell(t: float, extrapolated: bool = False) -> Cell:
        c = Cell([t * (1 - spread / 2), t, t * (1 + spread / 2)])
        if extrapolated:
            c.timed_on, c.total = min(sample, batch), batch
        return c

    cells = {k: cell(v, k == "scipy loop") for k, v in peer_s.items()}
    cells["spectra"] = cell(spectra_s)
    return row_from_cells(n, batch, dtype, "cpu", cells, 1, "torch", 1e-15)


def rows_with_speedups(speedups: list[float], dtype: str = "float64") -> list[dict[str, Any]]:
    """Rows where the best peer (thread fan-out) is ``s`` times slower than spectra."""
    out = []
    for i, s in enumerate(speedups):
        peers = {k: 1.0 * s * (2 + j) for j, k in enumerate(PEERS)}
        peers["thread fan-out"] = 1.0 * s
        out.append(make_row(2 ** (i + 2), 4096, dtype, 1.0, peers))
    return out
