"""Band structure of a two-orbital chain with overlap, the way old scripts did it: per k."""

import numpy as np
import scipy.linalg

nk = 24
kpts = np.linspace(-0.5, 0.5, nk)
hop = np.array([[0.3, -1.0], [-0.2, 0.1]], dtype=complex)
onsite = np.diag([0.5, -0.5]).astype(complex)
phase = np.exp(2j * np.pi * kpts)[:, None, None]
Hk = onsite + phase * hop + (phase * hop).conj().transpose(0, 2, 1)
Sk = np.eye(2) + 0.1 * (phase * np.eye(2) + (phase * np.eye(2)).conj())

# generalized problem per k-point: the loop --fix turns into one call
energies = []
states = []
for ik in range(nk):
    e, c = scipy.linalg.eigh(Hk[ik], Sk[ik])  # expect: SPX001 fix
    energies.append(e)
    states.append(c)

# Bloch weights per band are gauge invariant
weights = [np.abs(c) ** 2 for c in states]

# the same bands into a preallocated array: reported, not rewritten
bands = np.zeros((nk, 2))
for ik in range(nk):
    bands[ik] = scipy.linalg.eigvalsh(Hk[ik], Sk[ik])  # expect: SPX001


def hamiltonian(k):
    h = np.exp(2j * np.pi * k) * hop
    return onsite + h + h.conj().T


# H(k) built inside the loop body: reported, not rewritten
gaps = []
for k in kpts:
    h = hamiltonian(k)
    w = np.linalg.eigvalsh(h)  # expect: SPX001
    gaps.append(w[1] - w[0])

# one matrix, once: not reported
w_gamma = np.linalg.eigvalsh(Hk[nk // 2])
