"""Nested loops and comprehensions over a grid of matrices."""

import numpy as np

rng = np.random.default_rng(2)
H = rng.standard_normal((3, 4, 5, 5))
H = H + H.swapaxes(-1, -2)

grid = []
for i in range(H.shape[0]):
    row = []
    for j in range(H.shape[1]):
        row.append(np.linalg.eigvalsh(H[i, j]))  # expect: SPX001 fix
    grid.append(row)

flat = [np.linalg.eigvalsh(H[i, j]) for i in range(3) for j in range(4)]  # expect: SPX002 fix
pairs = [np.linalg.eigh(H[i][j]) for i in range(3) for j in range(4)]  # expect: SPX002 fix
lazy = sum(np.linalg.eigvalsh(h).max() for h in H[0])  # expect: SPX002
total = 0.0
for i in range(3):
    for j in range(4):
        total += np.linalg.eigvalsh(H[i, j]).min()  # expect: SPX001
