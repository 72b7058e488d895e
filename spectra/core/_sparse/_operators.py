"""Sparse input normalised to one operator type: torch sparse, SciPy sparse, linear operators.

:func:`as_operator` turns a ``torch.sparse_coo``/``sparse_csr`` tensor, a ``scipy.sparse``
matrix or array, or a linear operator (an object with ``shape``, ``dtype`` and a block
``matmul``/``@`` on ``(n, m)`` blocks) into a :class:`SparseOperator`: one ``matmul`` on
torch blocks in the compute dtype (float64/complex128), the diagonal where it is known, a
SciPy CSR copy for AMG, and the checks of the core contract (square, finite, Hermitian
within ``symmetry_tol``). The iteration itself never sees the caller's array family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .._errors import InputError
from .._support._arrays import Origin
from ._blocks import BlockDiagonal

_TORCH_SPARSE = (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc)
_NUMPY_TO_TORCH = {
    np.dtype(np.float32): torch.float32,
    np.dtype(np.float64): torch.float64,
    np.dtype(np.complex64): torch.complex64,
    np.dtype(np.complex128): torch.complex128,
}


def _is_scipy_sparse(a: Any) -> bool:
    """A ``scipy.sparse`` matrix/array (checked without importing SciPy)."""
    module = type(a).__module__
    if not module.startswith("scipy.sparse"):
        return False
    import scipy.sparse as sp

    return bool(sp.issparse(a))


def _is_linear_operator(a: Any) -> bool:
    """An object with ``shape``, ``dtype`` and ``@``/``matmul`` that is no dense array."""
    if isinstance(a, (torch.Tensor, np.ndarray, list, tuple)) or _is_scipy_sparse(a):
        return False
    if type(a).__module__.split(".", 1)[0] == "dask":
        return False
    shape = getattr(a, "shape", None)
    has_matmul = callable(getattr(a, "matmul", None)) or callable(getattr(a, "__matmul__", None))
    return shape is not None and hasattr(a, "dtype") and has_matmul


def is_sparse_input(a: Any) -> bool:
    """Whether ``a`` takes the sparse path: a torch sparse tensor, a SciPy sparse matrix or
    array, a linear operator, a :class:`BlockDiagonal`, or a non-empty list/tuple made only
    of the first three.

    >>> import scipy.sparse as sp, torch
    >>> is_sparse_input(sp.eye(4)), is_sparse_input(torch.eye(4)), is_sparse_input([sp.eye(3)])
    (True, False, True)
    """
    if isinstance(a, BlockDiagonal):
        return True
    if isinstance(a, (list, tuple)):
        return bool(a) and all(_is_single_sparse(x) for x in a)
    return _is_single_sparse(a)


def _is_single_sparse(a: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return a.layout in _TORCH_SPARSE
    return _is_scipy_sparse(a) or _is_linear_operator(a)


def _torch_dtype(dtype: Any, what: str) -> torch.dtype:
    """The torch dtype of an input's ``dtype`` (torch or NumPy); integers become float64."""
    if isinstance(dtype, torch.dtype):
        if dtype in (torch.float32, torch.float64, torch.complex64, torch.complex128):
            return dtype
        if dtype in (torch.float16, torch.bfloat16):
            return torch.float32
        if not (dtype.is_floating_point or dtype.is_complex):
            return torch.float64
        raise InputError(what, f"has unsupported dtype {dtype}")
    np_dtype = np.dtype(dtype)
    if np_dtype.kind in "biu":
        return torch.float64
    if np_dtype.kind == "f" and np_dtype.itemsize < 4:
        return torch.float32
    out = _NUMPY_TO_TORCH.get(np_dtype.newbyteorder("="))
    if out is None:
        raise InputError(what, f"has unsupported dtype {np_dtype}")
    return out


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The iteration's dtype: float64 for real inputs, complex128 for complex ones (the
    products with the matrix run in its own dtype; bases and Rayleigh-Ritz in double)."""
    return torch.complex128 if dtype.is_complex else torch.float64


@dataclass
class SparseOperator:
    """One square Hermitian operator of size ``n`` for the iteration.

    ``apply(x)`` maps a ``(n, m)`` tensor of :func:`compute_dtype` on ``device`` to ``A x``
    in the same dtype; ``diagonal`` is ``A``'s diagonal (``None`` for a linear operator
    without ``diagonal()``); ``csr`` builds a SciPy CSR copy (AMG), ``None`` when unknown.
    """

    n: int
    dtype: torch.dtype
    origin: Origin
    device: torch.device
    apply: Callable[[torch.Tensor], torch.Tensor]
    diagonal: torch.Tensor | None
    csr: Callable[[], Any] | None
    nnz: int | None
    #: Gershgorin interval ``(lo, hi)`` of an explicit matrix; ``None`` for operators
    bounds: tuple[float, float] | None = None
    what: str = "a"
    calls: list[int] = field(default_factory=lambda: [0])

    @property
    def work_dtype(self) -> torch.dtype:
        return compute_dtype(self.dtype)

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        self.calls[0] += 1
        return self.apply(x)


def as_operator(
    a: Any, what: str, check: bool, symmetry_tol: float | None, device: Any
) -> SparseOperator:
    """``a`` as a :class:`SparseOperator`, checked (``check=True``) for the core contract."""
    if isinstance(a, torch.Tensor):
        return _from_torch(a, what, check, symmetry_tol, device)
    if _is_scipy_sparse(a):
        return _from_scipy(a, what, check, symmetry_tol, device)
    return _from_linear_operator(a, what, check, symmetry_tol, device)


def _square(shape: Any, what: str) -> int:
    dims = tuple(int(s) for s in shape)
    if len(dims) != 2 or dims[0] != dims[1]:
        raise InputError(what, f"must be a square (n, n) sparse matrix, got shape {dims}")
    return dims[0]


def _check_values(values: Any, what: str) -> None:
    finite = bool(torch.isfinite(values).all()) if isinstance(values, torch.Tensor) else None
    if finite is None:
        finite = bool(np.isfinite(values).all())
    if not finite:
        raise InputError(what, "contains NaN or Inf")


def _check_asymmetry(
    asym: float, scale: float, tol: float | None, dtype: torch.dtype, what: str
) -> None:
    """Refuse ``max |A - A^H| > symmetry_tol * max |A|`` (the dense path's default
    tolerance: 1e-8 in double, 1e-3 in single precision)."""
    single = dtype in (torch.float32, torch.complex64)
    limit = (tol if tol is not None else (1e-3 if single else 1e-8)) * scale
    if asym > limit:
        kind = "Hermitian" if dtype.is_complex else "symmetric"
        raise InputError(
            what,
            f"is not {kind}: max |A - A^H| = {asym:.3g} exceeds {limit:.3g} "
            f"(symmetry_tol relative to max |A| = {scale:.3g})",
        )


def _from_scipy(a: Any, what: str, check: bool, tol: float | None, device: Any) -> SparseOperator:
    import scipy.sparse as sp

    n = _square(a.shape, what)
    dtype = _torch_dtype(a.dtype, what)
    work = compute_dtype(dtype)
    np_work = np.complex128 if work.is_complex else np.float64
    csr = sp.csr_matrix(a, dtype=np_work)  # one copy in double: products at full precision
    csr.sum_duplicates()
    if check:
        _check_values(csr.data, what)
        scale = float(np.abs(csr.data).max()) if csr.nnz else 0.0
        diff = (csr - csr.conj().T).tocsr()
        asym = float(np.abs(diff.data).max()) if diff.nnz else 0.0
        _check_asymmetry(asym, scale, tol, dtype, what)
    target = torch.device(device) if device is not None else torch.device("cpu")
    origin = Origin("numpy", torch.device("cpu"), dtype)
    diag = torch.from_numpy(np.ascontiguousarray(csr.diagonal())).to(target)
    absrow = np.asarray(abs(csr).sum(axis=1)).ravel()
    centre = csr.diagonal().real
    bounds = _gershgorin(centre, absrow - np.abs(csr.diagonal()))
    if target.type != "cpu":
        t = _csr_to_torch(csr, target)
        return SparseOperator(
            n, dtype, origin, target, lambda x: t @ x, diag, lambda: csr, csr.nnz, bounds, what
        )

    def apply(x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(np.asarray(csr @ x.numpy()))

    return SparseOperator(n, dtype, origin, target, apply, diag, lambda: csr, csr.nnz, bounds, what)


def _gershgorin(centre: Any, radius: Any) -> tuple[float, float]:
    if len(centre) == 0:
        return (0.0, 0.0)
    return (float(np.min(centre - radius)), float(np.max(centre + radius)))


def _csr_to_torch(csr: Any, device: torch.device) -> torch.Tensor:
    return torch.sparse_csr_tensor(
        torch.from_numpy(csr.indptr.astype(np.int64)),
        torch.from_numpy(csr.indices.astype(np.int64)),
        torch.from_numpy(csr.data),
        size=csr.shape,
    ).to(device)


def _from_torch(
    a: torch.Tensor, what: str, check: bool, tol: float | None, device: Any
) -> SparseOperator:
    n = _square(a.shape, what)
    dtype = _torch_dtype(a.dtype, what)
    work = compute_dtype(dtype)
    target = torch.device(device) if device is not None else a.device
    coo = (a if a.layout == torch.sparse_coo else a.to_sparse_coo()).coalesce()
    coo = coo.to(device=target, dtype=work)
    idx, val = coo.indices(), coo.values()
    if check:
        _check_values(val, what)
        scale = float(val.abs().max()) if val.numel() else 0.0
        diff = (coo - coo.transpose(0, 1).conj()).coalesce()
        asym = float(diff.values().abs().max()) if diff.values().numel() else 0.0
        _check_asymmetry(asym, scale, tol, dtype, what)
    on_diag = idx[0] == idx[1]
    diag = torch.zeros(n, dtype=work, device=target)
    diag.index_add_(0, idx[0][on_diag], val[on_diag])
    absrow = torch.zeros(n, dtype=torch.float64, device=target)
    absrow.index_add_(0, idx[0], val.abs().to(torch.float64))
    centre = diag.real.double()
    lo = float((centre - (absrow - diag.abs())).min()) if n else 0.0
    hi = float((centre + (absrow - diag.abs())).max()) if n else 0.0
    mat = coo.to_sparse_csr() if target.type == "cpu" else coo
    origin = Origin("torch", a.device, dtype)

    def csr() -> Any:
        import scipy.sparse as sp

        i, v = idx.cpu().numpy(), val.cpu().numpy()
        return sp.csr_matrix((v, (i[0], i[1])), shape=(n, n))

    def apply(x: torch.Tensor) -> torch.Tensor:
        return mat @ x

    return SparseOperator(
        n, dtype, origin, target, apply, diag, csr, int(val.numel()), (lo, hi), what
    )


def _from_linear_operator(
    a: Any, what: str, check: bool, tol: float | None, device: Any
) -> SparseOperator:
    n = _square(a.shape, what)
    raw_dtype = a.dtype
    dtype = _torch_dtype(raw_dtype, what)
    work = compute_dtype(dtype)
    torch_family = isinstance(raw_dtype, torch.dtype)
    op_device = torch.device(getattr(a, "device", None) or "cpu") if torch_family else None
    target = torch.device(device) if device is not None else (op_device or torch.device("cpu"))
    mm = getattr(a, "matmul", None)
    product: Callable[[Any], Any] = mm if callable(mm) else (lambda x: a @ x)
    if torch_family:
        origin = Origin("torch", op_device or torch.device("cpu"), dtype)

        def apply(x: torch.Tensor) -> torch.Tensor:
            y = product(x.to(device=op_device, dtype=raw_dtype))
            return torch.as_tensor(y).to(device=target, dtype=work)
    else:
        origin = Origin("numpy", torch.device("cpu"), dtype)
        np_dtype = np.dtype(raw_dtype)

        def apply(x: torch.Tensor) -> torch.Tensor:
            y = product(x.cpu().numpy().astype(np_dtype, copy=False))
            return torch.from_numpy(np.asarray(y)).to(device=target, dtype=work)

    diag = None
    if callable(getattr(a, "diagonal", None)):
        d = a.diagonal()
        diag = torch.as_tensor(np.asarray(d) if not isinstance(d, torch.Tensor) else d)
        diag = diag.to(device=target, dtype=work)
    op = SparseOperator(n, dtype, origin, target, apply, diag, None, None, None, what)
    if check and n:
        _probe(op, tol)
    return op


def _probe(op: SparseOperator, tol: float | None) -> None:
    """Check a linear operator on two random blocks: the right shape, finite, and
    ``Y^H (A X) == (A Y)^H X`` within ``symmetry_tol`` (relative)."""
    gen = torch.Generator(device="cpu").manual_seed(1234)
    x = torch.randn(op.n, 2, generator=gen, dtype=torch.float64).to(op.device, op.work_dtype)
    y = torch.randn(op.n, 2, generator=gen, dtype=torch.float64).to(op.device, op.work_dtype)
    ax, ay = op.matmul(x), op.matmul(y)
    if tuple(ax.shape) != (op.n, 2):
        raise InputError(
            op.what, f"matmul of an ({op.n}, 2) block returned shape {tuple(ax.shape)}"
        )
    if not (bool(torch.isfinite(ax).all()) and bool(torch.isfinite(ay).all())):
        raise InputError(op.what, "returned NaN or Inf from matmul")
    left, right = y.mH @ ax, ay.mH @ x
    scale = float(ax.norm() * y.norm() + ay.norm() * x.norm()) / 2
    asym = float((left - right).abs().max())
    _check_asymmetry(asym, scale, tol, op.dtype, op.what)
