"""The kernels claim only what runs without compiling (issue 26): the cold state (an empty
``NUMBA_CACHE_DIR``, a fresh install) plans LAPACK and says why; a background compile or
``warm_kernels`` fills numba's cache; a later process then takes the kernels, its first
call only where the batch repays numba's import; ``SPECTRA_KERNELS`` is honoured.

Every state is simulated in a subprocess with its own ``NUMBA_CACHE_DIR`` (the test
process itself is warmed by the root ``conftest.py``). No timing is asserted.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import spectra
from spectra.core._solvers._kernels import _ready, numba_available

pytestmark = pytest.mark.skipif(not numba_available(), reason="needs numba")

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, cache: Path, **env: str) -> dict:
    """Run ``code`` (which prints one JSON line last) in a fresh process on ``cache``."""
    full = {k: v for k, v in os.environ.items() if k not in ("CI", "SPECTRA_KERNELS")}
    full.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **env)
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


PLAN = """
import json, sys, torch, numpy as np, scipy.linalg, spectra
from spectra.core._solvers._kernels import _ready
out = {"state": _ready.state(torch.float64)}
p = spectra.plan(24, 200, torch.float64)
out["first"] = [p.strategy, list(p.reasons)]
out["second"] = spectra.plan(24, 200, torch.float64).strategy
a = torch.randn(200, 24, 24, dtype=torch.float64)
a = a + a.mT
w, v = spectra.eigh(a)
ref = np.stack([scipy.linalg.eigh(x, eigvals_only=True) for x in a.numpy()])
out["close"] = bool(np.allclose(w.numpy(), ref, atol=1e-10))
out["numba"] = "numba" in sys.modules
out["started"] = dict(_ready._STARTED)
out["lock"] = str(_ready.lock_path("float64"))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A numba cache filled by the background compile a cold process started (float64),
    and what that cold process saw."""
    cache = tmp_path_factory.mktemp("numba-cache")
    cold = _run(PLAN, cache)
    with open(cold["lock"], "a") as fh:  # wait for the background compile to finish
        fcntl.flock(fh, fcntl.LOCK_EX)
    return cache, cold


def test_cold_cache_plans_lapack_and_says_why(tmp_path):
    out = _run(PLAN, tmp_path, SPECTRA_KERNELS="ready")
    assert out["state"] == "cold"
    strategy, reasons = out["first"]
    assert strategy == "torch" and out["second"] == "torch"
    assert any("not compiled yet" in r and "spectra compile" in r for r in reasons), reasons
    assert out["close"] and not out["numba"]  # nothing compiled, nothing imported
    assert out["started"] == {}  # "ready" starts no background compile


def test_cold_cache_under_ci_starts_nothing(tmp_path):
    out = _run(PLAN, tmp_path, CI="true")
    assert out["first"][0] == "torch" and out["started"] == {}
    assert any("not started under CI" in r for r in out["first"][1])


def test_a_cold_call_starts_one_background_compile_that_fills_the_cache(filled):
    cache, cold = filled
    assert cold["state"] == "cold" and cold["first"][0] == "torch" and cold["close"]
    assert not cold["numba"]  # the call itself never imported numba
    pid = cold["started"]["float64"]
    assert any(f"background process, pid {pid}" in r for r in cold["first"][1])
    markers = list(cache.rglob("spectra-kernels-float64-*.json"))
    assert len(markers) == 1
    assert json.loads(markers[0].read_text())["index"]  # the index files it vouches for


def test_a_later_process_takes_the_kernels_from_its_second_call(filled):
    cache, _ = filled
    out = _run(PLAN, cache)
    assert out["state"] == "cached" and out["started"] == {}
    strategy, reasons = out["first"]  # numba not imported yet: its load would dominate
    assert strategy == "torch" and any("matrices: LAPACK" in r for r in reasons), reasons
    assert out["second"] == "numba-ql"  # not starved: the next call takes the kernel
    assert out["close"] and out["numba"]


#: the start of a process that plans as on an AMD CPU (the ``twisted`` claim, on any CPU)
AMD = """
import json, sys, torch, spectra
from spectra.core import STRATEGIES
from spectra.core._strategies import _openblas
_openblas.cpu_vendor = lambda: "AuthenticAMD"
STRATEGIES["twisted"] = STRATEGIES["twisted"]
"""


def _twisted_cache(filled: tuple[Path, dict]) -> Path:
    """The filled numba cache, for a test of the ``twisted`` claim (skipped without it)."""
    from spectra.core._solvers._twisted_eigh import available

    if not available():
        pytest.skip("the twisted strategy needs SciPy's OpenBLAS")
    return filled[0]


def test_two_claims_of_one_group_share_the_first_plans_threshold(filled):
    """Off Intel CPUs float64 ``n = 24`` has two gated claims (``numba-ql`` from 48
    matrices, ``twisted`` below it, ranked under it): the first plan of a process outside a
    call holds numba's load threshold for both (LAPACK), the next claims as measured."""
    cache = _twisted_cache(filled)
    code = """
    print(json.dumps([spectra.plan(24, 200, torch.float64).strategy,
                      spectra.plan(24, 200, torch.float64).strategy,
                      spectra.plan(24, 32, torch.float64).strategy]))
    """
    assert _run(AMD + textwrap.dedent(code), cache) == ["torch", "numba-ql", "twisted"]


def test_a_first_call_large_enough_to_repay_numba_takes_the_kernels(filled):
    cache, _ = filled
    code = """
    import json, torch, spectra
    print(json.dumps([spectra.plan(8, 10**6, torch.float64).strategy,
                      spectra.plan(8, 200, torch.float64).strategy]))
    """
    assert _run(code, cache) == ["numba-ql", "numba-ql"]


def test_the_first_call_keeps_the_load_threshold_in_every_plan_it_makes(filled):
    """A call plans more than once (the one-matrix test, the direct path's test, the
    pipeline's plan): numba's load threshold holds for all of them in the first call of a
    process, and the claim as measured from the next call on (``_kernels.one_call``)."""
    cache = _twisted_cache(filled)
    code = """
    a = torch.randn(200, 64, 64, dtype=torch.float64)
    spectra.eigh(a + a.mT)  # 200 x 0.4 ms of LAPACK: below numba's ~0.4 s load
    first = "numba" in sys.modules
    print(json.dumps([first, spectra.plan(64, 200, torch.float64).strategy]))
    """
    assert _run(AMD + textwrap.dedent(code), cache) == [False, "twisted"]


def test_other_dtypes_stay_cold_until_compiled(filled):
    cache, _ = filled
    code = """
    import json, torch, spectra
    from spectra.core._solvers._kernels import _ready
    p = spectra.plan(8, 200, torch.complex128)
    print(json.dumps([_ready.state(torch.complex128), p.strategy, list(p.reasons)]))
    """
    state, strategy, reasons = _run(code, cache, SPECTRA_KERNELS="ready")
    assert state == "cold" and strategy == "torch"
    assert any("complex128 are not compiled yet" in r for r in reasons)


def test_edited_kernel_sources_make_the_marker_stale(filled, monkeypatch):
    cache, _ = filled
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache))
    monkeypatch.setattr(_ready, "_ON_DISK", {})
    assert _ready._marker_holds("float64")
    real = _ready._sources
    monkeypatch.setattr(_ready, "_sources", lambda: {**real(), "_numba_jacobi.py": "edited"})
    assert not _ready._marker_holds("float64")


def test_a_forked_child_judges_the_disk_afresh(filled):
    cache, _ = filled
    code = """
    import json, os, torch, spectra
    from spectra.core._solvers._kernels import _ready
    _ready._ON_DISK["float64"] = False  # a stale verdict, as before a compile finished
    before = spectra.plan(8, 10**6, torch.float64).strategy
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, spectra.plan(8, 10**6, torch.float64).strategy.encode())
        os._exit(0)
    os.waitpid(pid, 0)
    print(json.dumps([before, os.read(r, 100).decode()]))
    """
    assert _run(code, cache, SPECTRA_KERNELS="ready") == ["torch", "numba-ql"]


def test_spectra_compile_loads_what_the_cache_holds(filled):
    cache, _ = filled
    code = """
    import json, io, contextlib
    from spectra.cli import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["compile", "float64"])
    print(json.dumps([rc, buf.getvalue()]))
    """
    rc, text = _run(code, cache)
    assert rc == 0 and "float64" in text and "0 kernels compiled" in text


@pytest.mark.parametrize("mode", ["lapack", "eager"])
def test_spectra_kernels_env_is_honoured(tmp_path, mode):
    code = """
    import json, torch, spectra
    from spectra.core._solvers._kernels import _ready
    p = spectra.plan(24, 200, torch.float64)
    print(json.dumps([p.strategy, dict(_ready._STARTED)]))
    """
    strategy, started = _run(code, tmp_path, SPECTRA_KERNELS=mode)  # an empty cache
    assert strategy == ("torch" if mode == "lapack" else "numba-ql")
    assert started == {}


def test_a_bad_spectra_kernels_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("SPECTRA_KERNELS", "sometimes")
    with pytest.raises(ValueError, match="SPECTRA_KERNELS='sometimes'"):
        _ready.mode()


def test_the_suite_runs_warm_kernels():
    # the root conftest warmed every dtype in this process: the kernel plans are the
    # measured ones, whatever the machine's cache held before
    assert all(_ready.state(dt) == "loaded" for dt in _ready.GROUPS)
    assert spectra.plan(24, 200, torch.float64).strategy == "numba-ql"
    assert spectra.plan(8, 200, torch.complex128).strategy == "numba-ql"


def test_warm_kernels_refuses_unknown_dtypes():
    with pytest.raises(ValueError, match="float16"):
        spectra.core.warm_kernels(["float16"])


def test_a_lapack_call_never_compiles_the_numba_check_on_a_cold_cache(tmp_path):
    code = """
    import json, sys, torch
    from spectra.core._strategies._checks import numba_check_large
    a = torch.eye(2900, dtype=torch.float64)[None]  # 8.4 M entries: repays numba's import
    print(json.dumps([numba_check_large(a, 1e-12), "numba" in sys.modules]))
    """
    assert _run(code, tmp_path, SPECTRA_KERNELS="ready") == [None, False]
    assert _run(code, tmp_path, SPECTRA_KERNELS="lapack") == [None, False]
