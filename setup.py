"""Build script for the compiled helpers (everything else is declared in pyproject.toml):

- ``spectra.core._solvers._native_eigh`` (C): the small one-matrix eigh, the closed forms
  of real n <= 3, the gauge, the exact-Hermitian test, the symbolic Cholesky counts, the
  partial solve's chain, the ``twisted`` kernel's eight-lane tridiagonal reduction
  (`_native_lanes.c`), and two O(nnz) passes over a sparse matrix's entries (the exact
  mirror proof and the connected components, `_native_edges.c`);
- ``spectra.core._solvers._native_entry`` (C++ on torch's headers): the one-matrix entry
  without Python's dispatch. Built only where torch is importable at build time
  (``pip install --no-build-isolation``, as ``scripts/venv.sh`` installs), for that torch.

Both are optional: where one cannot be built (no compiler, no torch headers, a platform
without ``dlfcn.h``) the install goes on and spectra takes its Python route, with the same
results (``spectra/core/_solvers/_native.py``).
"""

from __future__ import annotations

import os

from setuptools import Extension, setup

#: no fused multiply-add, no fast math: every rounding as the Python route's
_FP = ["-ffp-contract=off", "-fno-fast-math"]
_SOLVERS = "spectra/core/_solvers"


def _entry() -> list[Extension]:
    """The C++ entry, where torch (and its headers) can be imported here."""
    if os.environ.get("SPECTRA_NATIVE", "1").strip() == "0":
        return []
    try:
        import torch
        from torch.utils.cpp_extension import include_paths, library_paths
    except Exception:  # no torch in this build environment (build isolation)
        return []
    libs = library_paths()
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    return [
        Extension(
            "spectra.core._solvers._native_entry",
            [f"{_SOLVERS}/_native_entry.cpp"],
            include_dirs=[*include_paths(), _SOLVERS],
            library_dirs=libs,
            libraries=["c10", "torch", "torch_cpu", "torch_python"],
            runtime_library_dirs=libs,
            define_macros=[
                ("_GLIBCXX_USE_CXX11_ABI", str(abi)),
                ("SPECTRA_TORCH_VERSION", f'"{torch.__version__}"'),
            ],
            extra_compile_args=["-O2", "-g0", "-std=c++17", "-w", *_FP],
            language="c++",
            optional=True,
        )
    ]


setup(
    ext_modules=[
        Extension(
            "spectra.core._solvers._native_eigh",
            [
                f"{_SOLVERS}/_native_eigh.c",
                f"{_SOLVERS}/_native_closed_form.c",
                f"{_SOLVERS}/_native_bisect.c",
                f"{_SOLVERS}/_native_window.c",
                f"{_SOLVERS}/_native_edges.c",
                f"{_SOLVERS}/_native_lanes.c",
            ],
            include_dirs=[_SOLVERS],
            extra_compile_args=["-O3", "-std=c11", *_FP],
            optional=True,
        ),
        *_entry(),
    ]
)
