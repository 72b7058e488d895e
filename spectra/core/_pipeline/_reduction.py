"""The Cholesky reduction of a generalized problem ``A v = w B v`` to a standard one, shared
by the pipeline's serial and fanned paths (:mod:`._solve`) and the direct path of a few
pairs (:mod:`._direct_generalized`), whose results must be the same bits."""

from __future__ import annotations

import torch


def reduce_by_factor(
    a: torch.Tensor, factor: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """``C = L^-1 A L^-H`` for the Cholesky factor ``L`` of ``B``, as two triangular solves
    (``L^-1 A``, then ``(L^-1 A) L^-H`` from the right: no conjugate transpose to copy);
    into ``out`` where given (column-major), the second solve in place of the first.

    Its lower triangle is what every strategy reads (LAPACK's ``uplo='L'``); the strict
    upper triangle agrees with it to rounding, and is not made exactly Hermitian (a full
    pass that no solver would read).

    >>> factor = torch.tensor([[2.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    >>> reduce_by_factor(torch.diag(torch.tensor([8.0, 3.0], dtype=torch.float64)), factor)
    tensor([[2., 0.],
            [0., 3.]], dtype=torch.float64)
    """
    if out is None:  # (autograd takes no out=)
        half = torch.linalg.solve_triangular(factor, a, upper=False)
        return torch.linalg.solve_triangular(factor.mH, half, upper=True, left=False)
    half = torch.linalg.solve_triangular(factor, a, upper=False, out=out)
    return torch.linalg.solve_triangular(factor.mH, half, upper=True, left=False, out=half)


def reduce_by_left_solves(a: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """``C = L^-1 (L^-1 A)^H`` for an exactly Hermitian ``A`` (``(L^-1 A)^H = A L^-H``): the
    same ``C`` as :func:`reduce_by_factor` to rounding, by two left solves, the form
    ``torch.linalg.solve_triangular`` runs fastest (its right solve cost 61 against 36 us at
    ``n = 50``, 81 against 53 at 64, 212 against 119 at 100; float64, two threads, measured
    2026-12-05). Used where a pair's reduced problem is one threaded call, by the direct
    path and the pipeline alike (the same bits).

    >>> factor = torch.tensor([[2.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    >>> a = torch.tensor([[4.0, 2.0], [2.0, 3.0]], dtype=torch.float64)
    >>> torch.allclose(reduce_by_left_solves(a, factor), reduce_by_factor(a, factor))
    True
    """
    half = torch.linalg.solve_triangular(factor, a, upper=False)
    return torch.linalg.solve_triangular(factor, half.mH, upper=False)
