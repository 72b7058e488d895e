"""Per-window PCA of a multichannel signal: how many sources are active, over time.

    .venv/bin/python examples/pca_windows.py

An 8-channel recording mixes three sources that switch on and off; sliding windows of the
signal (a strided view, no copy) go to BatchPCA in one call with ``n_components=0.95``, which
picks, per window, the fewest components explaining 95 % of the variance. The figure
(examples/out/pca_windows.png) shows the channels, the per-window component count and the
first component's explained-variance ratio.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from spectra.pca import BatchPCA

OUT = Path(__file__).resolve().parent / "out"


def make_signal(
    seconds: float = 40.0, rate: int = 250, channels: int = 8, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(T, channels) signal and the (T, 3) on/off pattern of its sources."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    sources = np.stack(
        [
            np.sin(2 * np.pi * 6 * t),
            np.sign(np.sin(2 * np.pi * 1.3 * t)),
            np.sin(2 * np.pi * 11 * t + 1),
        ],
        axis=1,
    )
    active = np.stack([np.ones_like(t), (t > 10) & (t < 30), t > 20], axis=1).astype(float)
    mixing = rng.normal(size=(3, channels))
    x = (sources * active) @ mixing + 0.05 * rng.normal(size=(t.size, channels))
    return x, active


def main() -> Path:
    rate, width, step = 250, 500, 125  # 2 s windows every 0.5 s
    x, active = make_signal(rate=rate)
    xt = torch.from_numpy(x)
    windows = xt.unfold(0, width, step).transpose(1, 2)  # (B, width, channels), a view
    pca = BatchPCA(0.95).fit(windows)
    k = pca.n_components_.numpy()
    centers = (np.arange(windows.shape[0]) * step + width / 2) / rate
    truth = active[(centers * rate).astype(int)].sum(1)
    print(f"{windows.shape[0]} windows of {width} samples x {x.shape[1]} channels")
    print(
        f"windows whose component count equals the number of active sources: "
        f"{np.mean(k == truth):.0%}"
    )

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError as exc:  # pragma: no cover
        raise ImportError("the figure needs matplotlib: pip install torch-spectra[plot]") from exc

    time = np.arange(x.shape[0]) / rate
    fig, axes = plt.subplots(3, 1, figsize=(8, 6), sharex=True)
    axes[0].plot(time, x + 4 * np.arange(x.shape[1]), lw=0.3, color="k")
    axes[0].set_ylabel("channels (offset)")
    axes[0].set_yticks([])
    axes[1].step(centers, k, where="mid", label="PCA components for 95%")
    axes[1].step(centers, truth, where="mid", ls="--", label="active sources")
    axes[1].set_ylabel("count")
    axes[1].yaxis.set_major_locator(MaxNLocator(integer=True))  # counts are integers
    axes[1].legend(fontsize=7, loc="upper left")
    axes[2].plot(centers, pca.explained_variance_ratio_[:, 0].numpy())
    axes[2].set_ylabel("PC1 variance ratio")
    axes[2].set_xlabel("time (s)")
    fig.suptitle("Per-window PCA (one BatchPCA call over all windows)", fontsize=9)
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    path = OUT / "pca_windows.png"
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
