"""Magnetic Laplacian positional encodings of directed graphs, with a picture.

    .venv/bin/python examples/graph_magnetic_pe.py

A symmetric Laplacian PE cannot see edge directions: a directed cycle, the same cycle with
one edge reversed and the undirected cycle get identical encodings. The magnetic Laplacian
``L_q = D_s - A_s * exp(i 2 pi q (A - A^T))`` (Geisler et al., "Transformers Meet Directed
Graphs", ICML 2023) carries direction in the phase of its complex eigenvectors.

The script builds a small directed-graph dataset (600 random graphs: DAGs whose edges all
point from lower to higher index, and the same graphs with a random subset of edges
reversed, which creates directed cycles), computes ``magnetic_laplacian_pe`` for all of
them with ONE complex batched eigh call, and shows in examples/out/graph_magnetic_pe.png:

1. the lowest eigenvalue of ``L_q`` against ``q`` for three 8-cycles (directed, one edge
   reversed, undirected): equal at ``q = 0``, different as soon as ``q > 0``;
2. the phase of the first magnetic eigenvector along a directed path (q = 0.05): it winds
   monotonically, so it encodes the topological order the symmetric PE cannot;
3. the dataset's lowest magnetic eigenvalue (q = 0.1) per class: DAGs vs graphs with
   directed cycles separate, while the symmetric Laplacian's spectra are identical.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from spectra.graph import laplacian_pe, magnetic_laplacian_pe

OUT = Path(__file__).resolve().parent / "out"


def cycle(n: int, reverse_one: bool = False, undirected: bool = False) -> torch.Tensor:
    src, dst = np.arange(n), (np.arange(n) + 1) % n
    if reverse_one:
        src[0], dst[0] = dst[0], src[0]
    ei = np.stack([src, dst])
    if undirected:
        ei = np.concatenate([ei, ei[::-1]], axis=1)
    return torch.from_numpy(ei.copy())


def dataset(
    rng: np.random.Generator, count: int
) -> tuple[list[torch.Tensor], list[int], np.ndarray]:
    """Random DAGs (label 0) and the same graphs with ~30% of edges reversed (label 1)."""
    graphs, sizes, labels = [], [], []
    for i in range(count):
        n = int(rng.integers(8, 20))
        upper = np.triu(rng.random((n, n)) < 0.25, 1)
        upper[np.arange(n - 1), np.arange(1, n)] = True  # a Hamiltonian path keeps it connected
        src, dst = np.nonzero(upper)
        label = i % 2
        if label:
            flip = rng.random(src.size) < 0.3
            src, dst = np.where(flip, dst, src), np.where(flip, src, dst)
        graphs.append(torch.from_numpy(np.stack([src, dst])))
        sizes.append(n)
        labels.append(label)
    return graphs, sizes, np.array(labels)


def collate(graphs: list[torch.Tensor], sizes: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    offsets = np.cumsum([0, *sizes[:-1]])
    edge_index = torch.cat([g + int(o) for g, o in zip(graphs, offsets, strict=True)], dim=1)
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    return edge_index, batch


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    OUT.mkdir(exist_ok=True)
    # 1. three 8-cycles: same undirected graph, different directions
    cycles = {
        "directed cycle": cycle(8),
        "one edge reversed": cycle(8, reverse_one=True),
        "undirected cycle": cycle(8, undirected=True),
    }
    edge_index, batch = collate(list(cycles.values()), [8, 8, 8])
    # q = 0 is the Laplacian of the symmetrized graph: all three are the undirected 8-cycle
    sym = magnetic_laplacian_pe(edge_index, k=8, q=0.0, batch=batch, dtype=torch.float64)
    undirected = laplacian_pe(cycles["undirected cycle"], 8, k=8, drop_trivial=False)
    match = float((sym.eigenvalues[2].float() - undirected.eigenvalues[0]).abs().max())
    same = float((sym.eigenvalues - sym.eigenvalues[2]).abs().max())
    print(f"q = 0: the three cycles' spectra differ by {same:.1e} (symmetric PE: blind)")
    print(f"q = 0 eigenvalues equal laplacian_pe's of the undirected cycle to {match:.1e}")
    qs = np.linspace(0.0, 0.5, 101)
    lowest = np.stack(
        [
            magnetic_laplacian_pe(edge_index, k=1, q=float(q), batch=batch, dtype=torch.float64)
            .eigenvalues[:, 0]
            .numpy()
            for q in qs
        ]
    )
    # 2. a directed path: the phase of the first eigenvector winds along the order
    n_path = 16
    path = torch.stack([torch.arange(n_path - 1), torch.arange(1, n_path)])
    first = magnetic_laplacian_pe(path, n_path, k=1, q=0.05, dtype=torch.float64).pe[:, 0]
    phase = np.unwrap(np.angle(first.numpy()))
    monotone = bool(np.all(np.diff(phase) > 0) or np.all(np.diff(phase) < 0))
    print(f"directed path: eigenvector phase monotone along the path: {monotone}")
    # 3. the dataset, one batched call for all graphs
    rng = np.random.default_rng(0)
    graphs, sizes, labels = dataset(rng, 600)
    edge_index, batch = collate(graphs, sizes)
    start = time.perf_counter()
    mag = magnetic_laplacian_pe(edge_index, k=4, q=0.1, batch=batch, dtype=torch.float64)
    seconds = time.perf_counter() - start
    print(
        f"{len(sizes)} directed graphs ({sum(sizes)} nodes): magnetic PE in one complex "
        f"batched call, {seconds:.2f} s"
    )
    lam0 = mag.eigenvalues[:, 0].numpy()
    for label, name in ((0, "DAGs"), (1, "with directed cycles")):
        v = lam0[labels == label]
        print(f"  lowest magnetic eigenvalue, {name:>22}: median {np.median(v):.4f}")
    threshold = np.median(lam0)
    accuracy = float(np.mean((lam0 > threshold) == (labels == 1)))
    print(f"  one threshold on it separates the classes with accuracy {accuracy:.2f}")

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for (name, _), curve in zip(cycles.items(), lowest.T, strict=True):
        axes[0].plot(qs, curve, label=name)
    axes[0].set(xlabel="potential q", ylabel="lowest eigenvalue of $L_q$ (sym)")
    axes[0].set_title("same undirected graph, different directions")
    axes[0].legend()
    axes[1].plot(np.arange(n_path), phase, "o-")
    axes[1].set(xlabel="node along the directed path", ylabel="phase of eigenvector 1 (rad)")
    axes[1].set_title("q = 0.05: the phase encodes the order")
    bins = np.linspace(lam0.min(), lam0.max(), 40)
    axes[2].hist(lam0[labels == 0], bins=bins, alpha=0.6, label="DAGs")
    axes[2].hist(lam0[labels == 1], bins=bins, alpha=0.6, label="with directed cycles")
    axes[2].set(xlabel="lowest magnetic eigenvalue (q = 0.1)", ylabel="graphs")
    axes[2].set_title(f"{len(sizes)} graphs, one batched call")
    axes[2].legend()
    fig.tight_layout()
    path_out = OUT / "graph_magnetic_pe.png"
    fig.savefig(path_out, dpi=110)
    print(f"wrote {path_out}")


if __name__ == "__main__":
    main()
