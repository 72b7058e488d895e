"""The SciPy CPU reference: ``scipy.linalg.eigh`` one matrix at a time.

Slow by design and independent of torch: it is what every spectra result is checked
against (tests, ``spectra check``, ``spectra.validate(..., reference=True)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

from ._eigh import EighResult
from ._pipeline._prepare import is_ragged


def _as_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        return x.detach().cpu().resolve_conj().numpy()
    return np.asarray(x)


def reference_eigh(
    a: Any,
    b: Any = None,
    *,
    k: int | None = None,
    largest: bool = False,
    eigvals_only: bool = False,
) -> EighResult:
    """``scipy.linalg.eigh`` over the batch, shaped like ``spectra.eigh`` (NumPy out).

    ``k``/``largest`` use SciPy's ``subset_by_index``; ragged lists give lists.

    Examples
    --------
    >>> import numpy as np
    >>> reference_eigh(np.diag([2.0, 1.0])).eigenvalues
    array([1., 2.])
    """
    if is_ragged(a):
        parts = [
            reference_eigh(
                ai, None if b is None else b[i], k=k, largest=largest, eigvals_only=eigvals_only
            )
            for i, ai in enumerate(a)
        ]
        return EighResult([p.eigenvalues for p in parts], [p.eigenvectors for p in parts])
    an = _as_numpy(a)
    bn = None if b is None else _as_numpy(b)
    if bn is not None:
        shape = np.broadcast_shapes(an.shape, bn.shape)
        an, bn = np.broadcast_to(an, shape), np.broadcast_to(bn, shape)
    n = an.shape[-1]
    kk = n if k is None else k
    subset = None if k is None else ((n - kk, n - 1) if largest else (0, kk - 1))
    batch = an.shape[:-2]
    flat = an.reshape(-1, n, n)
    bflat = None if bn is None else bn.reshape(-1, n, n)
    real = np.float32 if flat.dtype in (np.float32, np.complex64) else np.float64
    w = np.empty((flat.shape[0], kk), dtype=real)
    v = None if eigvals_only else np.empty((flat.shape[0], n, kk), dtype=flat.dtype)
    for i in range(flat.shape[0]):
        if kk == 0:
            break
        bi = None if bflat is None else bflat[i]
        res = scipy.linalg.eigh(flat[i], bi, subset_by_index=subset, eigvals_only=eigvals_only)
        if eigvals_only:
            w[i] = res
        else:
            w[i], v[i] = res  # type: ignore[index]
    w = w.reshape(*batch, kk)
    return EighResult(w, None if v is None else v.reshape(*batch, n, kk))
