"""The ``lapack-subset`` strategy: the steps of LAPACK ``?syevr``/``?heevr`` with an index
range (with the compiled helper's bisection), which solve only the ``k`` wanted of ``n``
eigenpairs (``_lapack_subset``), on the CPU.

The planner takes its partial solve (``Abilities.window``) where ``spectra.eigh(a, k=k)``
asks for few eigenpairs of dense matrices and its cost model (:func:`subset_seconds`
against :func:`full_seconds`) says it beats the full ``syevd``: ``n = 300, k = 9``
2.6 ms against 10 ms, ``n = 550, k = 17`` 11 ms against 44 ms (float64, one thread).
Asked for every eigenpair (``solve``, forced with ``strategy="lapack-subset"``) it runs
the same routine over the whole index range (MRRR, ``?stemr``).

>>> import torch
>>> from spectra.core import plan
>>> p = plan(300, 40, torch.float64, k=9)
>>> p.strategy, p.window
('lapack-subset', (0, 9))
>>> plan(300, 40, torch.float64, k=9, largest=True).window
(291, 300)
>>> plan(300, 40, torch.float64, k=200).window is None  # most of them: the full solve
True
"""

from __future__ import annotations

import torch

from .._pipeline._cost import Claim
from .._solvers._lapack_subset import window_into_safe, window_solve
from ._base import Abilities, Cost, Result, Runs, Strategy, register
from ._checks import numba_check_large

#: working set per matrix, in ``n x n`` matrices: the input, LAPACK's copy of it (which it
#: overwrites), the ``n x k`` vectors (at most one more matrix, asked for all of them)
SUBSET_MATRICES = 3.0
#: the partial solve is claimed where its model is below this share of the full solve's
#: (the models are fits within ~30% of the measurements)
WINDOW_MARGIN = 0.75
#: below this size the full solve (or a lane kernel) wins: ``?syevr``'s bisection and
#: inverse iteration cost ~12 us per eigenpair whatever ``n`` (the chain's, from
#: ``n = 32``: ~0.12 n us)
WINDOW_MIN_N = 48


def subset_seconds(n: int, k: int, dtype: torch.dtype) -> float:
    """One thread's time for ``k`` of ``n`` eigenpairs with vectors by the partial solve's
    chain (``_lapack_subset``): the tridiagonal reduction (``n^2`` and ``n^3`` terms) and,
    per eigenpair, inverse iteration and the back-transformation. Fitted to float64 on the
    2-core machine (AMD EPYC), 2026-12-04, 5 repetitions interleaved with ``?syevr`` and
    ``syevd`` (``benchmarks/results/subset-chain-2026-12-04.json``): 0.095 ms at ``n = 48,
    k = 9``, 0.29 ms at ``100, 9``, 1.35 ms at ``200, 9``, 2.6 ms at ``300, 9``, 11-14 ms at
    ``550``, 30-38 ms at ``800`` (``?syevr``: 0.21, 0.63, 1.7, 3.2, 11-17, 29-43 ms); complex
    taken as 4x (as the full solve's model).

    >>> round(1e3 * subset_seconds(300, 9, torch.float64), 1)
    2.7
    """
    factor = 4.0 if dtype.is_complex else 1.0
    return factor * (1.8e-5 + k * 1.2e-7 * n + 1.4e-8 * n * n + 4e-11 * n**3)


def full_seconds(n: int, dtype: torch.dtype) -> float:
    """One thread's time for every eigenpair by ``syevd`` (``torch.linalg.eigh``), fitted
    in the same run as :func:`subset_seconds`: 0.95 ms at ``n = 100``, 3.5 ms at 200,
    9.3 ms at 300, 16 ms at 400, 46-61 ms at 550 (quartiles), 107-130 ms at 800.

    >>> round(1e3 * full_seconds(300, torch.float64), 1)
    9.6
    """
    factor = 4.0 if dtype.is_complex else 1.0
    return factor * (5e-5 + 4e-8 * n * n + 2.2e-10 * n**3)


def window_claim(
    n: int, k: int, dtype: torch.dtype, device: torch.device, vectors: bool
) -> Claim | None:
    """The partial solve's claim: CPU, eigenvectors wanted (without them the full solve's
    ``?sterf`` is as cheap as bisection), ``n >= WINDOW_MIN_N`` and the model well below
    the full solve's."""
    if device.type != "cpu" or not vectors or n < WINDOW_MIN_N or not 0 < k < n:
        return None
    part, full = subset_seconds(n, k, dtype), full_seconds(n, dtype)
    if part >= WINDOW_MARGIN * full:
        return None
    return Claim(
        f"k = {k} of n = {n}: the steps of LAPACK ?syevr/?heevr for the k wanted eigenpairs only "
        f"(est. {1e3 * part:.2g} ms against {1e3 * full:.2g} ms per matrix for all of them)"
    )


def _window(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, lo: int, hi: int) -> None:
    window_into_safe(a, w, v, lo, hi)


def _solve_all(a: torch.Tensor, vectors: bool) -> Result:
    return window_solve(a, vectors, 0, a.shape[-1])


def _per_matrix(n: int, dtype: torch.dtype) -> float:
    """For the fan-out decision: a typical partial solve (``k = 9``)."""
    return subset_seconds(n, min(9, n), dtype)


SUBSET = register(
    Strategy(
        "lapack-subset",
        ("cpu",),
        _solve_all,
        "the steps of LAPACK ?syevr/?heevr with an index range: only the k wanted "
        "eigenpairs (SciPy's LAPACK, the compiled helper's bisection, GIL released, one "
        "BLAS thread per worker)",
        # never autotuned: its partial solve is chosen by its cost model (prefers_window)
        runs=Runs(tunable_on=(), fan_out=True, prefers_window=window_claim),
        cost=Cost(memory=SUBSET_MATRICES, seconds=_per_matrix),
        abilities=Abilities(check=numba_check_large, window=_window),
    )
)
