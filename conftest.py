"""Root pytest configuration: the numba kernels are compiled (or loaded) before any test.

The kernel strategies claim a call only where their code runs without compiling
(``spectra/core/_solvers/_kernels/_ready.py``), so the plans a test asserts would depend on
the state of numba's on-disk cache and on whether numba was imported yet. Warming them at
the start of every session (~1 s with a warm cache; a fresh CI machine compiles them once,
~30-60 s) makes the suite, its doctests included, take the same plans everywhere. The tests
of the cold state itself run in subprocesses with an empty ``NUMBA_CACHE_DIR``
(``tests/core/test_kernel_warmup.py``).
"""

from __future__ import annotations


def pytest_sessionstart(session):
    from spectra.core import warm_kernels

    warm_kernels()
