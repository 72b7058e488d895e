"""Shared by the scan tests: the corpus, its ``# expect:`` markers, gauge-aware comparison."""

from __future__ import annotations

import json
import re
import types
from pathlib import Path

import numpy as np
import torch

CORPUS = Path(__file__).parent / "corpus"
MARK = re.compile(r"#\s*expect:\s*(SPX\d{3})(\s+fix)?")


def expected(path: Path) -> set[tuple[str, int | None, int, str, bool]]:
    """``(file name, cell, line, code, fixable)`` from the ``# expect: CODE [fix]`` markers."""
    out = set()
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        for number, cell in enumerate(cells, start=1):
            for i, line in enumerate("".join(cell["source"]).splitlines(), start=1):
                m = MARK.search(line)
                if m:
                    out.add((path.name, number, i, m.group(1), bool(m.group(2))))
        return out
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        m = MARK.search(line)
        if m:
            out.add((path.name, None, i, m.group(1), bool(m.group(2))))
    return out


def found(findings) -> set[tuple[str, int | None, int, str, bool]]:
    return {(Path(f.path).name, f.cell, f.line, f.code, f.fixable) for f in findings}


def run_script(source: str) -> dict:
    """Execute a script in a fresh namespace; keep its data (not modules, functions, classes)."""
    ns: dict = {"__name__": "__main__"}
    exec(compile(source, "<corpus>", "exec"), ns)
    skip = (types.ModuleType, types.FunctionType, type)
    return {k: v for k, v in ns.items() if not k.startswith("__") and not isinstance(v, skip)}


def _gauge(x: np.ndarray) -> np.ndarray:
    """Each column scaled so its largest-magnitude entry is real and positive."""
    idx = np.abs(x).argmax(axis=-2)[..., None, :]
    pivot = np.take_along_axis(x, idx, axis=-2)
    return x * (np.abs(pivot) / np.where(pivot == 0, 1, pivot))


def assert_same(a, b, where: str = "") -> None:
    """Equal data, eigenvectors (any 2-D+ array) up to the sign/phase of each column."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor), where
        assert a.dtype == b.dtype, f"{where}: {a.dtype} != {b.dtype}"
        a, b = a.detach().numpy(), b.detach().numpy()
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and a.shape == b.shape, (
            f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        )
        if a.dtype.kind not in "fc":
            assert np.array_equal(a, b), where
            return
        single = a.dtype in (np.float32, np.complex64)
        scale = max(1.0, float(np.abs(a).max(initial=0)))
        tol = (2e-4 if single else 1e-9) * scale
        if np.allclose(a, b, rtol=0, atol=tol):
            return
        assert a.ndim >= 2, f"{where}: values differ by {np.abs(a - b).max():.3g}"
        err = np.abs(_gauge(a) - _gauge(b)).max()
        assert err <= tol, f"{where}: differ beyond a sign/phase per column ({err:.3g})"
        return
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
        return
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        assert isinstance(a, list) == isinstance(b, list), f"{where}: list vs tuple"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
        return
    if isinstance(a, (float, complex, np.floating)):
        assert abs(a - b) <= 1e-9 * max(1.0, abs(a)), where
        return
    if isinstance(a, (int, str, bool, type(None))):
        assert a == b, where
