"""An orthogonal-weight layer trained on a toy task, next to ordinary parameters.

    .venv/bin/python examples/stiefel_orthogonal_layer.py

Toy task: 32-dimensional inputs whose signal lives in an unknown 4-dimensional subspace
``W*``; the target is a nonlinear function of the projection ``W*^T x`` plus noise. The
model is ``MLP(x @ W)`` with ``W`` a 32 x 4 :class:`StiefelParameter` (the learned subspace)
and an ordinary two-layer MLP head; ONE :class:`RiemannianAdam` trains both. Prints the
training loss, the orthogonality of ``W`` and the principal angles between ``W`` and ``W*``,
and draws the curves in examples/out/stiefel_orthogonal_layer.png.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.linalg
import torch

from spectra.stiefel import RiemannianAdam, Stiefel, StiefelParameter

OUT = Path(__file__).resolve().parent / "out"


class OrthoProjectionNet(torch.nn.Module):
    def __init__(self, dim: int, rank: int, hidden: int = 32, seed: int = 0) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.w = StiefelParameter(Stiefel().random(dim, rank, generator=gen))
        self.head = torch.nn.Sequential(
            torch.nn.Linear(rank, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(x @ self.w).squeeze(-1)


def principal_angles_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.degrees(scipy.linalg.subspace_angles(a, b))  # SciPy: independent of spectra


def main(dim: int = 32, rank: int = 4, steps: int = 1500) -> Path:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    w_true = Stiefel().random(dim, rank, generator=gen)

    def batch(size: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(size, dim, generator=gen)
        z = x @ w_true
        y = torch.sin(z[:, 0]) + z[:, 1] * z[:, 2] - 0.5 * z[:, 3] ** 2
        return x, y + 0.05 * torch.randn(size, generator=gen)

    model = OrthoProjectionNet(dim, rank)
    opt = RiemannianAdam(model.parameters(), lr=1e-2)  # Stiefel W and Euclidean head together
    history = []
    print(f"{'step':>6} {'loss':>10} {'max |W^T W - I|':>16} {'largest angle to W* (deg)':>26}")
    for step in range(steps + 1):
        x, y = batch()
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        angle = principal_angles_deg(model.w.detach().numpy(), w_true.numpy()).max()
        history.append((float(loss.detach()), angle))
        if step % 250 == 0:
            print(
                f"{step:6d} {float(loss.detach()):10.4f} "
                f"{float(Stiefel().orthogonality_error(model.w.detach())):16.2e} "
                f"{angle:26.2f}"
            )
        if step < steps:
            loss.backward()
            opt.step()

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover
        raise ImportError("the figure needs matplotlib: pip install torch-spectra[plot]") from exc
    hist = np.array(history)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.2))
    ax1.semilogy(hist[:, 0])
    ax1.set_xlabel("step")
    ax1.set_ylabel("training MSE")
    ax2.plot(hist[:, 1])
    ax2.set_xlabel("step")
    ax2.set_ylabel("largest principal angle W vs W* (deg)")
    fig.suptitle("Orthogonal 32 x 4 layer + MLP head, one RiemannianAdam", fontsize=9)
    OUT.mkdir(exist_ok=True)
    path = OUT / "stiefel_orthogonal_layer.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
