"""Per-class PCA of scikit-learn's bundled digits: one BatchPCA call for all ten classes.

    .venv/bin/python examples/pca_digits.py

Fits a 4-component PCA to each digit class (a ragged list: the classes have different
sizes), checks it against a loop of sklearn PCA, and draws each class's mean and first
components as 8x8 images in examples/out/pca_digits.png.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA

from spectra.pca import BatchPCA

OUT = Path(__file__).resolve().parent / "out"


def main() -> Path:
    digits = load_digits()
    classes = [digits.data[digits.target == c] for c in range(10)]  # (N_c, 64) each
    pca = BatchPCA(4).fit(classes)

    worst = 0.0
    for c, x in enumerate(classes):
        ref = PCA(4, svd_solver="full").fit(x)
        worst = max(worst, float(np.abs(pca.components_[c] - ref.components_).max()))
    print(f"classes: {[len(x) for x in classes]}")
    print(f"largest |component - sklearn| over all classes: {worst:.2e}")
    print("explained variance ratio of the first 4 components, per class:")
    for c in range(10):
        print(f"  {c}: {np.array2string(pca.explained_variance_ratio_[c], precision=3)}")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover
        raise ImportError("the figure needs matplotlib: pip install torch-spectra[plot]") from exc

    fig, axes = plt.subplots(10, 5, figsize=(6, 12))
    for c in range(10):
        images = [pca.mean_[c], *pca.components_[c]]
        titles = [
            "mean",
            *[f"PC{j + 1} {pca.explained_variance_ratio_[c, j]:.0%}" for j in range(4)],
        ]
        for j, (img, title) in enumerate(zip(images, titles, strict=True)):
            ax = axes[c, j]
            lim = None if j == 0 else np.abs(img).max()
            ax.imshow(
                img.reshape(8, 8),
                cmap="gray_r" if j == 0 else "RdBu_r",
                vmin=None if lim is None else -lim,
                vmax=lim,
            )
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(title, fontsize=7)
        axes[c, 0].set_ylabel(f"digit {c}")
    fig.suptitle("Per-class PCA of sklearn digits (one BatchPCA call)", fontsize=9)
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    path = OUT / "pca_digits.png"
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
