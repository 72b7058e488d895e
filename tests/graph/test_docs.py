"""The runnable examples in spectra.graph's docstrings, and its lazy PyG import."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import pytest

MODULES = [
    "__init__",
    "_embedding",
    "_heat",
    "_kmeans",
    "_laplacian",
    "_layout",
    "_magnetic",
    "_magnetic_transform",
    "_options",
    "_pe",
    "_random_walk",
    "_random_walk_transform",
    "_spectrum",
    "_transform",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(
        "spectra.graph" if name == "__init__" else f"spectra.graph.{name}"
    )
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_core_features_do_not_import_pyg():
    code = (
        "import sys, torch; import spectra.graph as g; "
        "g.laplacian_pe(torch.tensor([[0, 1], [1, 0]]), 2, k=1); "
        "print('torch_geometric' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_pyg_names_the_extra(monkeypatch):
    import spectra.graph._pyg as pyg

    monkeypatch.setitem(sys.modules, "torch_geometric", None)
    with pytest.raises(ImportError, match=r"pip install torch-spectra\[graph\]"):
        pyg.require_pyg()
