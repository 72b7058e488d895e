"""Every registered CPU strategy at the edges of the floating-point range.

Entries near the overflow threshold (1e308) and subnormal entries (1e-320) are valid
input: SciPy/LAPACK solve them. A strategy must return the same eigenvalues (to a few
ulps of ``max|A|``) and finite, orthonormal eigenvectors, or the core must fall back for
those matrices: never NaN for finite input.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core import STRATEGIES


def _cpu_strategies() -> list[str]:
    return sorted(name for name, s in STRATEGIES.items() if s.supports(torch.device("cpu")))


def _cases() -> dict[str, np.ndarray]:
    big, tiny = 1.7e308, 1e-320
    return {
        "diag2-big": np.diag([big, 1e307]),
        "sym2-big": np.array([[1e308, 1e307], [1e307, -1e308]]),
        "herm2-big": np.array([[1e308, 1e307j], [-1e307j, -1e308]]),
        "sym2-subnormal": np.array([[tiny, 1e-321], [1e-321, 3e-320]]),
        "diag3-big": np.diag([big, 1e307, -1e308]),
        "sym3-big": np.array([[1e308, 1e300, 0], [1e300, -1e308, 1e307], [0, 1e307, 5e307]]),
        "diag3-subnormal": np.diag([tiny, 3e-321, 5e-322]),
        "herm3-subnormal": np.array(
            [[tiny, 1e-321j, 0], [-1e-321j, 3e-320, 0], [0, 0, 5e-322]], dtype=complex
        ),
        "diag4-mixed": np.diag([big, 1e307, 3.0, -1e308]),
        "sym8-subnormal": np.diag(np.arange(1, 9) * 1e-321)
        + np.diag(np.full(7, 1e-322), 1)
        + np.diag(np.full(7, 1e-322), -1),
        "diag1-big": np.array([[big]]),
    }


CASES = _cases()


@pytest.mark.parametrize("strategy", _cpu_strategies())
@pytest.mark.parametrize("case", sorted(CASES))
def test_extreme_scales_solved_or_refused_never_nan(strategy: str, case: str) -> None:
    a = CASES[case]
    w, v = spectra.eigh(a, strategy=strategy)
    ref = scipy.linalg.eigh(a, eigvals_only=True)
    assert np.isfinite(w).all() and np.isfinite(v).all(), (w, v)
    scale = np.abs(a).max()
    # eigenvalues to a few ulps of max|A| (subnormal inputs: to the subnormal spacing)
    tol = max(30 * a.shape[-1] * np.finfo(float).eps * scale, 4 * 5e-324 * a.shape[-1])
    np.testing.assert_allclose(w, ref, rtol=0, atol=tol)
    gram = v.conj().T @ v
    np.testing.assert_allclose(gram, np.eye(a.shape[-1]), atol=1e-12)
