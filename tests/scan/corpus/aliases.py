"""Every way scripts import the solvers: module aliases, renamed functions, assignments."""

import numpy as np
import numpy.linalg as nla
import scipy.linalg as sla
import torch
from numpy import linalg as LA
from numpy.linalg import eigvalsh
from scipy.linalg import eigh as seigh
from torch import linalg

rng = np.random.default_rng(5)
A = rng.standard_normal((6, 4, 4))
A = A + A.transpose(0, 2, 1)
B = np.eye(4) + 0.05 * (A @ A.transpose(0, 2, 1))
T = torch.from_numpy(A.astype(np.float32))
solve = np.linalg.eigh

w1 = [LA.eigh(a)[0] for a in A]  # expect: SPX002 fix
w2 = [nla.eigvalsh(A[i]) for i in range(len(A))]  # expect: SPX002 fix
w3 = [eigvalsh(a) for a in A]  # expect: SPX002 fix
w4 = [seigh(A[i], B[i], eigvals_only=True) for i in range(len(A))]  # expect: SPX002 fix
w5 = [sla.eigh(A[i], b=B[i]) for i in range(len(A))]  # expect: SPX002 fix
w6 = [linalg.eigvalsh(t) for t in T]  # expect: SPX002 fix
w7 = [solve(a) for a in A]  # expect: SPX002 fix
vals32 = []
for t in T:
    vals32.append(torch.linalg.eigvalsh(t))  # expect: SPX001 fix

# the same names used once, outside any loop: not reported
one = LA.eigh(A[0]), nla.eigvalsh(A[1]), seigh(A[2], B[2]), linalg.eigh(T[0]), solve(A[3])
