"""Loops that look batchable but are not provably so: reported, never rewritten."""

import numpy as np
import scipy.linalg

rng = np.random.default_rng(9)
A = rng.standard_normal((5, 4, 4))
A = A + A.transpose(0, 2, 1)
calls = 0

# a side effect in the body
ws = []
for a in A:
    print("diagonalizing", a.shape)
    ws.append(np.linalg.eigvalsh(a))  # expect: SPX001

# the loop variable is read after the loop
ws = []
for a in A:
    ws.append(np.linalg.eigvalsh(a))  # expect: SPX001
last = a

# the result name is read after the loop
ws = []
for a in A:
    w = np.linalg.eigvalsh(a)  # expect: SPX001
    ws.append(w)
print(w)

# the list is not created empty right before the loop
ws = [np.zeros(4)]
for a in A:
    ws.append(np.linalg.eigvalsh(a))  # expect: SPX001

# a counter in the body
ws = []
for a in A:
    ws.append(np.linalg.eigvalsh(a))  # expect: SPX001
    calls += 1


# an argument computed by an unknown function (it could reuse one buffer)
class Model:
    def __init__(self):
        self.buf = np.zeros((4, 4))

    def hamiltonian(self, i):
        self.buf[:] = A[i]
        return self.buf


model = Model()
ws = []
for i in range(5):
    ws.append(np.linalg.eigvalsh(model.hamiltonian(i)))  # expect: SPX001
hs = [np.linalg.eigvalsh(model.hamiltonian(i)) for i in range(5)]  # expect: SPX002

# the input is overwritten in place
ws = []
for a in A.copy():
    ws.append(scipy.linalg.eigh(a, overwrite_a=True))  # expect: SPX001

# an upper-triangle solve
us = [np.linalg.eigvalsh(a, UPLO="U") for a in A]  # expect: SPX002

# a filter in the comprehension
pos = [np.linalg.eigvalsh(a) for a in A if a[0, 0] > 0]  # expect: SPX002

# a for-else
ws = []
for a in A:
    ws.append(np.linalg.eigvalsh(a))  # expect: SPX001
else:
    calls += 1

# a generalized solve over a source that would be iterated twice
gen = (i for i in range(5))
ws = []
for i in gen:
    ws.append(scipy.linalg.eigvalsh(A[i], np.eye(4)))  # expect: SPX001
