"""Laplacian eigenvectors for every graph of a small dataset, one graph at a time (torch)."""

import torch
import torch.linalg as tla

torch.manual_seed(3)
sizes = [5, 7, 7, 6]


def laplacian(n):
    a = torch.rand(n, n, dtype=torch.float64)  # weighted: connected, simple spectrum
    a = torch.triu(a, 1)
    a = a + a.T
    return torch.diag(a.sum(1)) - a


graphs = [laplacian(n) for n in sizes]
same = torch.stack([laplacian(6) for _ in range(5)])

evals, evecs = [], []
for L in graphs:
    w, v = tla.eigh(L)  # expect: SPX001 fix
    evals.append(w)
    evecs.append(v)

spectrum = [torch.linalg.eigvalsh(same[i]) for i in range(len(same))]  # expect: SPX002 fix
heat = [torch.linalg.eigh(same[i]).eigenvectors for i in range(same.shape[0])]  # expect: SPX002 fix
heat = [v.abs() for v in heat]


class PositionalEncoding:
    """A dataset transform that decomposes each graph on its own."""

    def __init__(self, k):
        self.k = k

    def __call__(self, laplacians):
        out = []
        for i in range(len(laplacians)):
            w, v = torch.linalg.eigh(laplacians[i])  # expect: SPX001
            out.append(v[:, 1 : self.k + 1])
        return out


pe = PositionalEncoding(2)(graphs)
mapped = list(map(torch.linalg.eigvalsh, graphs))  # expect: SPX003
fiedler = list(map(lambda g: tla.eigvalsh(g)[1], graphs))  # expect: SPX003

# one call on the whole stack is already batched: not reported
w_all = torch.linalg.eigvalsh(same)
