"""Orthogonality-constrained steps on several weight matrices (polar retraction per matrix)."""

import numpy as np

rng = np.random.default_rng(11)
Ws = [np.linalg.qr(rng.standard_normal((8, 3)))[0] for _ in range(4)]
target = rng.standard_normal((8, 3))
lr = 0.1


def polar(y):
    w, v = np.linalg.eigh(y.T @ y)  # a helper, called once per matrix: not reported here
    return y @ (v / np.sqrt(w)) @ v.T


for step in range(5):
    for i in range(len(Ws)):
        G = Ws[i] - target
        xi = G - Ws[i] @ (0.5 * (Ws[i].T @ G + G.T @ Ws[i]))
        Y = Ws[i] - lr * xi
        w, v = np.linalg.eigh(Y.T @ Y)  # expect: SPX001
        Ws[i] = Y @ (v / np.sqrt(w)) @ v.T

# a recurrence: each step needs the previous one, nothing to batch, not reported
X = Ws[0].copy()
for it in range(10):
    X = X - 0.05 * (X @ X.T @ X - X)
    w, v = np.linalg.eigh(X.T @ X)
    X = X @ (v / np.sqrt(w)) @ v.T

# a while loop over an index
drift = []
i = 0
while i < len(Ws):
    drift.append(np.linalg.eigvalsh(Ws[i].T @ Ws[i]))  # expect: SPX001
    i += 1
