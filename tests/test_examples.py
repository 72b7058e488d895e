"""Every example runs and writes its files only under examples/out/.

Every ``examples/*.py`` is accounted for (``test_every_example_is_listed`` asserts set
equality): run here, run by a named test elsewhere, or named as not an example.

Each example runs in a fresh process with an empty temporary working directory, which must
stay empty; the figure or table it promises must be (re)written under examples/out/. The
long ones (a PySCF SCF, Dask clusters, thousands of graphs) are marked ``slow`` and run only
with ``SPECTRA_SLOW_EXAMPLES=1``, keeping the default run well under a minute of work.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
OUT = EXAMPLES / "out"
SLOW = pytest.mark.skipif(
    not os.environ.get("SPECTRA_SLOW_EXAMPLES"),
    reason="slow example: set SPECTRA_SLOW_EXAMPLES=1",
)

#: example -> the files it writes under examples/out/
CASES = {
    "tb_graphene": ["tb_graphene.png"],
    "tb_haldane": ["tb_haldane.png"],
    "tb_wannier90": ["tb_wannier90.png"],
    "pca_digits": ["pca_digits.png"],
    "pca_windows": ["pca_windows.png"],
    "core_batched_eigh": ["core_batched_eigh.png"],
    "point_cloud_normals": ["point_cloud_normals.png", "point_cloud_normals.txt"],
    "legacy_loops": ["legacy_loops.txt"],
    "legacy_loops_fixed": [],  # run as itself it times the batched version, writes nothing
}
SLOW_CASES = {
    "stiefel_orthogonal_layer": ["stiefel_orthogonal_layer.png"],
    "tb_pyscf_diamond": ["tb_pyscf_diamond.png"],
    "stiefel_brockett": ["stiefel_brockett.png"],
    "graph_spectral_clustering": ["graph_sbm_clusters.png"],
    "graph_positional_encodings": ["graph_positional_encodings.txt"],
    "distributed_local": ["distributed_local.txt"],
    "distributed_domains": ["distributed_domains.txt"],
}


#: examples another test file runs through :func:`_run` (that file must do so)
RUN_ELSEWHERE = {
    "graph_magnetic_pe": "tests/graph/test_magnetic_example.py",
}
#: files in examples/ that are not examples, and why they are not run
NOT_EXAMPLES = {
    "_common": "the table tee the examples import; it does nothing on its own",
}


def test_every_example_is_listed():
    """Each file in examples/ is run here, run by a named test elsewhere, or named as not an
    example with a reason: the sets are equal, so a new example cannot go unrun."""
    found = {p.stem for p in EXAMPLES.glob("*.py")}
    groups = [set(CASES), set(SLOW_CASES), set(RUN_ELSEWHERE), set(NOT_EXAMPLES)]
    listed = set().union(*groups)
    assert sum(map(len, groups)) == len(listed), "an example is listed twice"
    assert listed == found, {"not listed": sorted(found - listed), "gone": sorted(listed - found)}
    for name, test in RUN_ELSEWHERE.items():
        text = (ROOT / test).read_text()
        assert f'_run("{name}"' in text, f"{test} does not run examples/{name}.py"


def _run(name: str, outputs: list[str], tmp_path: Path) -> str:
    start = time.time() - 1
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), "an example prints what it shows"
    assert not list(tmp_path.iterdir()), "wrote into the working directory"
    for file in outputs:
        path = OUT / file
        assert path.exists() and path.stat().st_mtime >= start, f"{path} not written"
    return done.stdout


@pytest.mark.parametrize("name", sorted(CASES))
def test_example(name, tmp_path):
    _run(name, CASES[name], tmp_path)


@SLOW
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_CASES))
def test_slow_example(name, tmp_path):
    _run(name, SLOW_CASES[name], tmp_path)
