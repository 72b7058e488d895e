"""Calls that are not per-matrix loops: nothing here may be reported."""

import numpy as np
import torch

rng = np.random.default_rng(1)
A = rng.standard_normal((8, 4, 4))
A = A + A.transpose(0, 2, 1)

w, v = np.linalg.eigh(A)  # already batched
w0 = np.linalg.eigvalsh(A[0])


def spectrum(a):
    return np.linalg.eigvalsh(a)  # inside a function: the loop that calls it is not seen


vals = [spectrum(a) for a in A]

# the same matrix every time: not a batch
for _ in range(3):
    w0 = np.linalg.eigvalsh(A[0])

# power-iteration-like recurrence
x = A[0]
for _ in range(3):
    w, v = np.linalg.eigh(x)
    x = v @ np.diag(np.abs(w)) @ v.T

# vmap batches already
batched = torch.vmap(torch.linalg.eigvalsh)(torch.from_numpy(A))
eigh = "not a solver"
label = [eigh for _ in range(2)]
