"""Build script for the one compiled helper: the small one-matrix eigh
(``spectra/core/_solvers/_native_eigh.c``). Everything else is declared in pyproject.toml.

The extension is optional: where it cannot be built (no C compiler, a platform without
``dlfcn.h``) the install goes on and spectra takes its pure-Python route, with the same
results (``spectra/core/_solvers/_native.py``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "spectra.core._solvers._native_eigh",
            ["spectra/core/_solvers/_native_eigh.c"],
            # no fused multiply-add, no fast math: every rounding as the Python route's
            extra_compile_args=["-O3", "-std=c11", "-ffp-contract=off", "-fno-fast-math"],
            optional=True,
        )
    ]
)
