"""Benchmark: tight-binding bands for many k-points, spectra vs PythTB, a SciPy loop, PySCF.

    .venv/bin/python -m benchmarks.bench_tightbinding [--quick] [--device cpu|cuda]
                                                      [--json FILE]

Rows (all implementations timed in the same run, medians in seconds):

- ``graphene`` at 10^4 k-points and a random 64-orbital model: ``Model.bands(k)`` (one Bloch
  einsum + one batched core call) vs PythTB's ``solve_all`` (a Python loop over k) vs a
  SciPy per-k loop (``H(k)`` by NumPy then ``scipy.linalg.eigvalsh``). Ratios are
  ``peer_time / spectra_time`` (> 1: spectra is faster).
- ``pyscf``: a diamond (gth-szv, 2x2x2 KRKS; 1x1x1 with --quick) band path. ``kmf.get_bands`` vs
  ``spectra.tightbinding.pyscf_bands``; both build ``F(k), S(k)`` the same way (PySCF), so the
  diagonalization share is reported separately: PySCF's per-k canonical-orthogonalization loop
  vs one generalized ``spectra.eigh`` call on the same matrices.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from benchmarks._timing import bench_main, median_time
from spectra._bench.domains import random_model, to_pythtb


def _scipy_loop(model: Any, k: np.ndarray) -> None:
    import scipy.linalg

    data = model.data()
    for kk in k:
        h = np.tensordot(np.exp(2j * np.pi * (data.rvecs @ kk)), data.hr, axes=1)
        scipy.linalg.eigvalsh(h)


def _tb_row(
    name: str, model: Any, nk: int, device: str, repeats: int, budget: float, pythtb_nk: int
) -> dict[str, Any]:
    import torch

    rng = np.random.default_rng(1)
    k = rng.random((nk, model.dim_k))
    kin: Any = k if device == "cpu" else torch.from_numpy(k).to(device)
    t_spectra = median_time(
        lambda: model.bands(kin), repeats=repeats, device=device, budget_s=budget
    )
    from threadpoolctl import threadpool_limits

    p = to_pythtb(model)
    kp = k[:pythtb_nk]
    # the per-k loops get one BLAS thread: threaded LAPACK buys nothing for one small matrix
    # and oversubscribes a shared machine (spectra's core also runs 1 thread per worker)
    with threadpool_limits(1):
        t_pythtb = median_time(
            lambda: p.solve_all(kp), repeats=max(1, repeats // 2), warmup=0, budget_s=budget
        ) * (nk / len(kp))
        t_scipy = median_time(
            lambda: _scipy_loop(model, kp), repeats=max(1, repeats // 2), warmup=0, budget_s=budget
        ) * (nk / len(kp))
    return {
        "name": name,
        "norb": model.nstates,
        "nk": nk,
        "device": device,
        "peer_nk_timed": len(kp),
        "spectra_s": t_spectra,
        "pythtb_s": t_pythtb,
        "scipy_loop_s": t_scipy,
        "ratio_pythtb_over_spectra": t_pythtb / t_spectra,
        "ratio_scipy_over_spectra": t_scipy / t_spectra,
    }


def _pyscf_row(nk: int, mesh: int, repeats: int, budget: float) -> dict[str, Any]:
    import time

    from pyscf.pbc import dft, gto
    from pyscf.pbc.scf.hf import eigh_with_canonical_orth

    import spectra
    from spectra.tightbinding import fock_overlap, kpath, pyscf_bands
    from spectra.tightbinding._pyscf import lindep_threshold

    cell = gto.Cell()
    cell.atom = "C 0 0 0; C 0.8925 0.8925 0.8925"
    cell.a = [[0, 1.785, 1.785], [1.785, 0, 1.785], [1.785, 1.785, 0]]
    cell.basis, cell.pseudo, cell.verbose = "gth-szv", "gth-pade", 0
    cell.mesh = [11, 11, 11]
    cell.build()
    kmf = dft.KRKS(cell, cell.make_kpts([mesh] * 3))
    kmf.xc = "lda"
    t0 = time.perf_counter()
    kmf.kernel()
    scf_s = time.perf_counter() - t0
    kpts = cell.get_abs_kpts(kpath(cell.lattice_vectors(), "L,G,X,W,K,G", nk).k)
    reps = max(1, repeats // 2)
    # one warm-up each: PySCF's first band build fills caches (~10x slower than the next)
    t_get_bands = median_time(lambda: kmf.get_bands(kpts), repeats=reps, budget_s=budget)
    t_ours = median_time(lambda: pyscf_bands(kmf, kpts), repeats=reps, budget_s=budget)
    t_fock = median_time(lambda: fock_overlap(kmf, kpts), repeats=reps, budget_s=budget)
    f, s = fock_overlap(kmf, kpts)
    thr = lindep_threshold()
    t_diag_pyscf = median_time(
        lambda: eigh_with_canonical_orth(f, s), repeats=repeats, budget_s=budget
    )
    t_diag_spectra = median_time(
        lambda: spectra.eigh(f, s, lindep=thr, lindep_fill=1e30), repeats=repeats, budget_s=budget
    )
    return {
        "name": f"pyscf diamond gth-szv {mesh}x{mesh}x{mesh} band path",
        "norb": cell.nao,
        "nk": nk,
        "device": "cpu",
        "scf_s": scf_s,
        "fock_overlap_build_s": t_fock,
        "get_bands_s": t_get_bands,
        "spectra_pyscf_bands_s": t_ours,
        "ratio_get_bands_over_spectra": t_get_bands / t_ours,
        "diag_pyscf_loop_s": t_diag_pyscf,
        "diag_spectra_s": t_diag_spectra,
        "ratio_diag_pyscf_over_spectra": t_diag_pyscf / t_diag_spectra,
    }


def run(quick: bool = False, device: str = "cpu") -> list[dict[str, Any]]:
    """Time every case; returns one dict per row (medians in seconds and ratios)."""
    from spectra.tightbinding import graphene

    repeats, budget = (3, 6.0) if quick else (7, 30.0)
    rows = [
        _tb_row(
            "graphene 10^4 k",
            graphene(),
            10_000,
            device,
            repeats,
            budget,
            pythtb_nk=1_000 if quick else 10_000,
        ),
        _tb_row(
            "random 64-orbital 2D model",
            random_model(64),
            2_000 if quick else 10_000,
            device,
            repeats,
            budget,
            pythtb_nk=40 if quick else 500,
        ),
    ]
    if importlib.util.find_spec("pyscf") is not None:  # pyscf is an optional extra
        rows.append(_pyscf_row(20 if quick else 100, 1 if quick else 2, repeats, budget))
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'case':34} {'norb':>5} {'nk':>6} {'spectra s':>10} {'PythTB s':>10} "
        f"{'SciPy s':>10} {'PythTB/sp':>10} {'SciPy/sp':>9}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        if "pythtb_s" not in r:
            continue
        print(
            f"{r['name']:34} {r['norb']:5d} {r['nk']:6d} {r['spectra_s']:10.4f} "
            f"{r['pythtb_s']:10.3f} {r['scipy_loop_s']:10.3f} "
            f"{r['ratio_pythtb_over_spectra']:9.1f}x {r['ratio_scipy_over_spectra']:8.1f}x"
        )
    for r in rows:
        if "get_bands_s" not in r:
            continue
        print(f"\n{r['name']} (nao={r['norb']}, {r['nk']} k): SCF {r['scf_s']:.2f} s")
        print(
            f"  get_bands {r['get_bands_s']:.3f} s vs pyscf_bands "
            f"{r['spectra_pyscf_bands_s']:.3f} s ({r['ratio_get_bands_over_spectra']:.2f}x);"
            f" F(k), S(k) build {r['fock_overlap_build_s']:.3f} s"
        )
        print(
            f"  diagonalization only: PySCF loop {r['diag_pyscf_loop_s'] * 1e3:.2f} ms vs "
            f"spectra {r['diag_spectra_s'] * 1e3:.2f} ms "
            f"({r['ratio_diag_pyscf_over_spectra']:.1f}x)"
        )
    if any("peer_nk_timed" in r and r["peer_nk_timed"] < r["nk"] for r in rows):
        print("\n(PythTB/SciPy timed on the first peer_nk_timed k-points, scaled linearly to nk)")


def main(argv: list[str] | None = None) -> None:
    bench_main(__doc__, run, _print, argv, threads=False)


if __name__ == "__main__":
    main()
