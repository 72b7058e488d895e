"""Inline suppressions."""

import numpy as np

A = np.stack([np.eye(3) * (i + 1) for i in range(4)])

a1 = [np.linalg.eigvalsh(a) for a in A]  # spectra: ignore
a2 = [np.linalg.eigvalsh(a) for a in A]  # spectra: ignore[SPX002]
a3 = [np.linalg.eigvalsh(a) for a in A]  # spectra: ignore[SPX001]  # expect: SPX002 fix
for a in A:  # spectra: ignore
    np.linalg.eigvalsh(a)
for a in A:
    np.linalg.eigvalsh(a)  # spectra: ignore[SPX003, SPX001]
for a in A:
    np.linalg.eigvalsh(a)  # expect: SPX001
