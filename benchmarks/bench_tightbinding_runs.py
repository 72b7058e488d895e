"""Benchmark: the Gaussian DOS and ``pyscf_bands`` against their plain peers.

    .venv/bin/python -m benchmarks.bench_tightbinding_runs [--quick] [--json FILE]

Rows (medians in seconds, peers timed in the same run, interleaved):

- ``dos``: :func:`spectra.tightbinding.dos` (``method="gaussian"``) vs a plain NumPy sum of
  Gaussians over the same eigenvalues (every energy against every state, in blocks of
  2^22 elements so that it fits in memory, as the issue's peer). Both agree to 1e-12.
- ``pyscf``: bulk Si (GTH pseudopotential, LDA; ``gth-dzvp``, 2x2x2 KRKS, PySCF's default
  mesh; ``--quick``: ``gth-szv``, 1x1x1, a 15^3 mesh), 31 band k-points along L-G-X-W-K-G:
  ``kmf.get_bands`` vs :func:`spectra.tightbinding.pyscf_bands`, and the largest eigenvalue
  difference (Ha).

Ratios are ``peer_time / spectra_time`` (> 1: spectra is faster).
"""

from __future__ import annotations

import importlib.util
import math
import time
from typing import Any

import numpy as np

from benchmarks._timing import bench_main


def _interleaved(fns: dict[str, Any], repeats: int, budget: float) -> dict[str, float]:
    """Median time of each callable, run in turns (one warm-up each) so load hits all."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    start = time.perf_counter()
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
        if time.perf_counter() - start > budget:
            break
    return {k: float(np.median(v)) for k, v in times.items()}


def plain_gaussian_dos(e: np.ndarray, grid: np.ndarray, sigma: float) -> np.ndarray:
    """Every energy against every state (uniform k weights), in 2^22-element blocks."""
    flat = e.reshape(-1)
    out = np.zeros_like(grid)
    step = max(1, 2**22 // grid.size)
    for s in range(0, flat.size, step):
        z = (grid[:, None] - flat[None, s : s + step]) / sigma
        out += np.exp(-0.5 * z * z).sum(1)
    return out / (e.shape[0] * sigma * math.sqrt(2 * math.pi))


def _dos_row(nk: int, nb: int, ne: int, sigma: float, repeats: int, budget: float) -> dict:
    from spectra.tightbinding import dos

    rng = np.random.default_rng(0)
    e = np.sort(rng.uniform(-5, 5, (nk, nb)), axis=1)
    grid = np.linspace(-6, 6, ne)
    ref = plain_gaussian_dos(e, grid, sigma)
    err = float(np.abs(dos(e, grid, sigma=sigma) - ref).max() / ref.max())
    t = _interleaved(
        {
            "spectra": lambda: dos(e, grid, sigma=sigma),
            "plain": lambda: plain_gaussian_dos(e, grid, sigma),
        },
        repeats,
        budget,
    )
    return {
        "name": f"gaussian dos {nk} k x {nb} bands, {ne} energies, sigma {sigma:g}",
        "spectra_s": t["spectra"],
        "plain_numpy_s": t["plain"],
        "ratio_plain_over_spectra": t["plain"] / t["spectra"],
        "max_rel_diff": err,
    }


def _pyscf_row(quick: bool, repeats: int, budget: float) -> dict:
    from pyscf.pbc import dft, gto

    from spectra.tightbinding import kpath, pyscf_bands
    from spectra.tightbinding._pyscf_hcore import fast_path_applies

    cell = gto.Cell()
    cell.atom = "Si 0 0 0; Si 1.3575 1.3575 1.3575"
    cell.a = [[0, 2.715, 2.715], [2.715, 0, 2.715], [2.715, 2.715, 0]]
    cell.basis = "gth-szv" if quick else "gth-dzvp"
    cell.pseudo, cell.verbose = "gth-pade", 0
    if quick:
        cell.mesh = [15, 15, 15]  # PySCF's default for Si is 35^3: minutes of SCF here
    cell.build()
    mesh = 1 if quick else 2
    kmf = dft.KRKS(cell, cell.make_kpts([mesh] * 3))
    kmf.xc = "lda"
    t0 = time.perf_counter()
    kmf.kernel()
    scf_s = time.perf_counter() - t0
    kpts = cell.get_abs_kpts(kpath(cell.lattice_vectors(), "L,G,X,W,K,G", 31).k)
    diff = float(
        np.abs(pyscf_bands(kmf, kpts).mo_energy - np.asarray(kmf.get_bands(kpts)[0])).max()
    )
    t = _interleaved(
        {"spectra": lambda: pyscf_bands(kmf, kpts), "get_bands": lambda: kmf.get_bands(kpts)},
        repeats,
        budget,
    )
    return {
        "name": f"pyscf Si {cell.basis} {mesh}x{mesh}x{mesh} KRKS, 31 band k-points",
        "nao": cell.nao,
        "mesh": [int(m) for m in cell.mesh],
        "fast_path": fast_path_applies(kmf),
        "scf_s": scf_s,
        "spectra_s": t["spectra"],
        "get_bands_s": t["get_bands"],
        "ratio_get_bands_over_spectra": t["get_bands"] / t["spectra"],
        "max_abs_diff_ha": diff,
    }


def run(quick: bool = False, device: str = "cpu") -> list[dict[str, Any]]:
    """Time every case; one dict per row."""
    del device  # CPU only: both peers are NumPy / PySCF
    repeats, budget = (3, 10.0) if quick else (7, 60.0)
    cases = [(2000, 8, 1000, 0.05), (2000, 8, 1000, 2.0)]
    if not quick:
        cases += [(27000, 8, 2000, 0.05), (27000, 8, 2000, 0.5)]
    rows = [_dos_row(*c, repeats, budget) for c in cases]
    if importlib.util.find_spec("pyscf") is not None:  # an optional extra
        rows.append(_pyscf_row(quick, repeats, budget))
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        if "plain_numpy_s" in r:
            print(
                f"{r['name']:58} spectra {r['spectra_s']:.4f} s  plain NumPy "
                f"{r['plain_numpy_s']:.4f} s  {r['ratio_plain_over_spectra']:.2f}x  "
                f"(max rel diff {r['max_rel_diff']:.1e})"
            )
        else:
            print(
                f"{r['name']} (nao {r['nao']}, mesh {r['mesh']}, batched hcore "
                f"{r['fast_path']}): SCF {r['scf_s']:.1f} s; get_bands {r['get_bands_s']:.3f} s"
                f" vs pyscf_bands {r['spectra_s']:.3f} s ({r['ratio_get_bands_over_spectra']:.2f}x)"
                f", max |dE| {r['max_abs_diff_ha']:.1e} Ha"
            )


def main(argv: list[str] | None = None) -> None:
    bench_main(__doc__, run, _print, argv, threads=False)


if __name__ == "__main__":
    main()
