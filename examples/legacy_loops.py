"""A script written the old way: one eigensolver call per matrix, in loops.

`spectra scan examples/legacy_loops.py` finds the loops; `spectra scan --fix` on a copy wrote
`examples/legacy_loops_fixed.py`, the same script with each safe loop replaced by one batched
call. Running this script times both versions and checks they agree (eigenvalues to
round-off, eigenvectors up to sign/phase), writing the table to examples/out/legacy_loops.txt.

Run: python examples/legacy_loops.py
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import scipy.linalg
import torch
import torch.linalg as tla


def make_data(seed: int = 0) -> dict:
    """Deterministic inputs: H(k), S(k) of an 8-orbital chain, datasets, graph Laplacians."""
    rng = np.random.default_rng(seed)
    norb, nk = 8, 2000
    h0 = rng.standard_normal((norb, norb)) + 1j * rng.standard_normal((norb, norb))
    h0 = h0 + h0.conj().T
    h1 = 0.5 * (rng.standard_normal((norb, norb)) + 1j * rng.standard_normal((norb, norb)))
    s1 = 0.05 * rng.standard_normal((norb, norb))
    phase = np.exp(2j * np.pi * np.linspace(-0.5, 0.5, nk))[:, None, None]
    hk = h0 + phase * h1 + (phase * h1).conj().transpose(0, 2, 1)
    sk = np.eye(norb) + phase * s1 + (phase * s1).conj().transpose(0, 2, 1)
    widths = rng.integers(4, 24, size=300)
    datasets = [rng.standard_normal((60, d)) * rng.uniform(0.5, 2.0, d) for d in widths]
    gen = torch.Generator().manual_seed(seed)
    adj = (torch.rand(1000, 16, 16, generator=gen) < 0.3).double().triu(1)
    adj = adj + adj.mT
    laplacians = torch.diag_embed(adj.sum(-1)) - adj
    return {"hk": hk, "sk": sk, "datasets": datasets, "laplacians": laplacians}


def band_structure(hk, sk):
    """Generalized eigenproblem H(k) c = e S(k) c at every k-point."""
    energies = []
    states = []
    for ik in range(len(hk)):
        e, c = scipy.linalg.eigh(hk[ik], sk[ik])
        energies.append(e)
        states.append(c)
    return energies, states


def pca_per_dataset(datasets):
    """Principal axes of each dataset (the widths differ: a ragged batch)."""
    decomps = [np.linalg.eigh(np.cov(x.T)) for x in datasets]
    return [(w[::-1], v[:, ::-1]) for w, v in decomps]


def graph_spectra(laplacians):
    """Laplacian spectrum and eigenvectors of every graph."""
    evals, evecs = [], []
    for i in range(laplacians.shape[0]):
        w, v = tla.eigh(laplacians[i])
        evals.append(w)
        evecs.append(v)
    return evals, evecs


def algebraic_connectivity(laplacians):
    """The second-smallest Laplacian eigenvalue of each graph, written into an array.

    The body stores into ``gaps[i]`` instead of appending to a list: spectra scan reports
    the loop (batch it as ``spectra.eigvalsh(laplacians)``) and --fix leaves it alone.
    """
    gaps = np.zeros(laplacians.shape[0])
    for i in range(laplacians.shape[0]):
        gaps[i] = tla.eigvalsh(laplacians[i])[1]
    return gaps


def run(data: dict) -> tuple[dict, dict]:
    times, out = {}, {}
    t0 = time.perf_counter()
    out["energies"], out["states"] = band_structure(data["hk"], data["sk"])
    times["tight-binding, 2000 k-points (8x8 complex, generalized)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out["pca"] = pca_per_dataset(data["datasets"])
    times["PCA, 300 datasets (4..23 features)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out["evals"], out["evecs"] = graph_spectra(data["laplacians"])
    times["graph Laplacians, 1000 graphs (16 nodes)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out["gaps"] = algebraic_connectivity(data["laplacians"])
    times["algebraic connectivity (reported, left as a loop)"] = time.perf_counter() - t0
    return times, out


def _close_up_to_sign(a, b, tol) -> bool:
    """Columns equal up to a sign/phase: compare |<a_j, b_j>| with 1 (normalized columns)."""
    a, b = np.asarray(a), np.asarray(b)
    overlap = np.abs(np.einsum("ij,ij->j", a.conj(), b)) / np.einsum("ij,ij->j", a.conj(), a).real
    return bool(np.allclose(overlap, 1.0, atol=tol))


def compare() -> None:
    """Time this script and the rewritten one on the same data; check they agree."""
    import importlib.util

    here = Path(__file__).resolve().parent
    spec = importlib.util.spec_from_file_location("legacy_fixed", here / "legacy_loops_fixed.py")
    fixed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixed)
    data = make_data()
    run(data)  # warm-up (imports, thread pools) for both before timing
    fixed.run(data)
    old_t, old = run(data)
    new_t, new = fixed.run(data)
    rows = [f"{'section':<58} {'loops':>9} {'batched':>9} {'speed-up':>8}"]
    for key in old_t:
        rows.append(
            f"{key:<58} {old_t[key] * 1e3:>7.1f}ms {new_t[key] * 1e3:>7.1f}ms "
            f"{old_t[key] / new_t[key]:>7.1f}x"
        )
    total_old, total_new = sum(old_t.values()), sum(new_t.values())
    rows.append(f"{'total':<58} {total_old * 1e3:>7.1f}ms {total_new * 1e3:>7.1f}ms "
                f"{total_old / total_new:>7.1f}x")  # fmt: skip
    dw = max(
        max(np.abs(a - b).max() for a, b in zip(old["energies"], new["energies"], strict=True)),
        max(np.abs(a[0] - b[0]).max() for a, b in zip(old["pca"], new["pca"], strict=True)),
        max(float((a - b).abs().max()) for a, b in zip(old["evals"], new["evals"], strict=True)),
    )
    same_v = all(
        _close_up_to_sign(a, b, 1e-8) for a, b in zip(old["states"], new["states"], strict=True)
    )
    same_v &= all(
        _close_up_to_sign(a[1], b[1], 1e-8) for a, b in zip(old["pca"], new["pca"], strict=True)
    )
    rows.append(f"largest eigenvalue difference: {dw:.2e}; eigenvectors equal up to sign: {same_v}")
    text = "\n".join(rows)
    print(text)
    out = here / "out"
    out.mkdir(exist_ok=True)
    (out / "legacy_loops.txt").write_text(text + "\n")


if __name__ == "__main__":
    if Path(__file__).stem == "legacy_loops":
        compare()
    else:
        times, _ = run(make_data())
        for key, seconds in times.items():
            print(f"{key}: {seconds * 1e3:.1f} ms")
