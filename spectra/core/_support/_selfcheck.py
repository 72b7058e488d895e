"""The install self-check behind ``spectra check``: the core against SciPy on hard batches."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from .._eigh import eigh
from .._validate import validate
from ._samples import adversarial_spectra, random_hermitian, with_spectrum

DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)


@dataclass
class CheckRow:
    case: str
    dtype: str
    shape: str
    eigenvalue_error: float
    residual: float
    orthogonality: float
    tolerance: float
    seconds: float
    passed: bool


def _tolerance(dtype: torch.dtype) -> float:
    return 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-10


def _cases(dtype: torch.dtype, quick: bool) -> list[tuple[str, Any, Any, dict]]:
    big = 256 if quick else 1024
    cases: list[tuple[str, Any, Any, dict]] = [
        ("random", random_hermitian((64,), 16, dtype, 1), None, {}),
        ("n=1", random_hermitian((8,), 1, dtype, 2), None, {}),
        ("batch dims", random_hermitian((2, 3), 12, dtype, 3), None, {}),
        ("n=33 (old CUDA cliff)", random_hermitian((128,), 33, dtype, 4), None, {}),
        (f"large batch {big}x64", random_hermitian((big,), 64, dtype, 5), None, {}),
        ("empty batch", torch.zeros(0, 5, 5, dtype=dtype), None, {}),
        ("k=3 largest", random_hermitian((32,), 20, dtype, 6), None, {"k": 3, "largest": True}),
    ]
    for name, w in adversarial_spectra(10).items():
        cases.append((name, with_spectrum(w.repeat(16, 1), dtype, 7), None, {}))
    cond = 1e2 if dtype in (torch.float32, torch.complex64) else 1e6
    s = torch.logspace(0, float(np.log10(cond)), 10, dtype=torch.float64).repeat(16, 1)
    cases.append(
        (
            f"generalized, cond(b)={cond:.0e}",
            random_hermitian((16,), 10, dtype, 8),
            with_spectrum(s, dtype, 9),
            {},
        )
    )
    sizes = list(range(1, 41))
    cases.append(
        ("ragged sizes 1..40", [random_hermitian((), n, dtype, n) for n in sizes], None, {})
    )
    return cases


def _measure(a, b, w, v) -> tuple[float, float, float]:
    if isinstance(a, list):
        parts = [_measure(ai, None, wi, vi) for ai, wi, vi in zip(a, w, v, strict=True)]
        return tuple(max(p[i] for p in parts) for i in range(3))  # type: ignore[return-value]
    m = validate(a, w, v, b, reference=True)
    worst = m.worst()
    return worst["eigenvalue_error"], worst["residual"], worst["orthogonality"]


def run_checks(
    device: str = "cpu", quick: bool = False, dtypes: tuple[torch.dtype, ...] = DTYPES
) -> list[CheckRow]:
    """Run every case on ``device``; metrics are computed on the CPU in double precision."""
    rows = []
    for dtype in dtypes:
        tol = _tolerance(dtype)
        for name, a, b, kw in _cases(dtype, quick):
            ad = [x.to(device) for x in a] if isinstance(a, list) else a.to(device)
            bd = None if b is None else b.to(device)
            t0 = time.perf_counter()
            w, v = eigh(ad, bd, **kw)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            to_cpu = (
                (lambda x: [t.cpu() for t in x]) if isinstance(w, list) else (lambda x: x.cpu())
            )
            err, res, orth = _measure(a, b, to_cpu(w), to_cpu(v))
            # the generalized case loses ~sqrt(cond(b)) digits in the B-orthogonality
            slack = 10.0 if b is not None else 1.0
            ok = err <= tol and res <= tol * slack and orth <= tol * slack
            shape = "ragged" if isinstance(a, list) else "x".join(map(str, a.shape))
            rows.append(CheckRow(name, str(dtype)[6:], shape, err, res, orth, tol, dt, ok))
    return rows


def format_table(rows: list[CheckRow]) -> str:
    """A fixed-width pass/fail table."""
    head = (
        f"{'case':32} {'dtype':10} {'shape':14} {'eig err':>9} {'residual':>9} "
        f"{'orth':>9} {'tol':>7} {'sec':>6}  result"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.case:32} {r.dtype:10} {r.shape:14} {r.eigenvalue_error:9.1e} "
            f"{r.residual:9.1e} {r.orthogonality:9.1e} {r.tolerance:7.0e} "
            f"{r.seconds:6.3f}  {'PASS' if r.passed else 'FAIL'}"
        )
    return "\n".join(lines)


def rows_as_dicts(rows: list[CheckRow]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]
