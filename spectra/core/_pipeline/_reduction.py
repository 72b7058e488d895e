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
