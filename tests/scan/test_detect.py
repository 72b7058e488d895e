"""``spectra.scan.scan``: every per-matrix call in the corpus found, nothing else."""

from __future__ import annotations

import pytest

from spectra.scan import CODES, ScanError, scan, scan_source

from .helpers import CORPUS, expected, found

FILES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".py", ".ipynb"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_findings_are_exactly_the_marked_calls(path):
    assert found(scan(path)) == expected(path)


def test_corpus_totals():
    # guards against markers or files silently disappearing
    everything = scan(CORPUS)
    assert len(everything) == 44
    assert sum(f.fixable for f in everything) == 18
    assert {f.code for f in everything} == {"SPX001", "SPX002", "SPX003"}
    assert not scan(CORPUS / "single_calls.py")


def test_messages_give_the_batched_call():
    by_line = {f.line: f for f in scan(CORPUS / "tb_kloop.py")}
    assert by_line[18].replacement == "spectra.eigh(Hk, Sk)"
    assert "batch it: `spectra.eigh(Hk, Sk)`" in by_line[18].message
    assert by_line[28].replacement == "spectra.eigvalsh(Hk, Sk)"
    # H(k) built in the body: the ragged list form of the argument
    assert by_line[40].replacement == "spectra.eigvalsh([h for k in kpts])"
    pca = {f.line: f for f in scan(CORPUS / "pca_datasets.py")}
    assert pca[11].replacement == "spectra.eigh([np.cov(x.T) for x in datasets])"
    assert "sizes may differ" in pca[11].message
    nested = {f.line: f for f in scan(CORPUS / "nested.py")}
    assert nested[13].replacement == "spectra.eigvalsh(H)"  # X[i, j] inside i and j loops
    assert nested[17].replacement == "spectra.eigh(H)"  # X[i][j]


def test_columns_are_one_based_characters():
    src = "import numpy as np\nfor x in xs:\n    é = np.linalg.eigh(x)\n"
    [f] = scan_source(src)
    assert (f.line, f.col) == (3, 9)
    assert f.end_line == 3 and f.end_col == 26  # exclusive, as ruff writes it


@pytest.mark.parametrize(
    "src",
    [
        "from numpy.linalg import *\nws = [eigvalsh(a) for a in A]\n",
        "import scipy.linalg\nws = [scipy.linalg.eigh(a) for a in A]\n",
        "from torch import linalg as L\nws = [L.eigh(a) for a in A]\n",
        "import numpy as onp\nLA = onp.linalg\nws = [LA.eigvalsh(a) for a in A]\n",
        "def f(A):\n    import numpy as np\n    return [np.linalg.eigh(a) for a in A]\n",
    ],
)
def test_import_forms(src):
    assert [f.code for f in scan_source(src)] == ["SPX002"]


@pytest.mark.parametrize(
    "src",
    [
        "import numpy as np\nw = np.linalg.eigh(A)\n",
        "def eigh(a):\n    return a\nws = [eigh(a) for a in A]\n",  # not the solver
        "import numpy as np\nws = [np.linalg.eig(a) for a in A]\n",  # not symmetric
        "import numpy as np\nfor a in A:\n    def f():\n        return np.linalg.eigh(a)\n",
        "import numpy as np\nfor _ in range(3):\n    w = np.linalg.eigh(H)\n",
    ],
)
def test_not_reported(src):
    assert scan_source(src) == []


def test_symeig_is_reported_even_alone():
    src = "import torch\nw, v = torch.symeig(A, eigenvectors=True)\n"
    [f] = scan_source(src)
    assert f.code == "SPX010" and "removed" in f.message
    loop = "import torch\nfor a in A:\n    torch.symeig(a)\n"
    assert sorted(f.code for f in scan_source(loop)) == ["SPX001", "SPX010"]


def test_while_loop_over_a_queue():
    src = "import numpy as np\nwhile todo:\n    a = todo.pop()\n    np.linalg.eigvalsh(a)\n"
    [f] = scan_source(src)
    assert f.code == "SPX001" and "while loop" in f.message


def test_map_forms():
    src = (
        "import numpy as np\nfrom concurrent.futures import ThreadPoolExecutor as P\n"
        "a = list(map(np.linalg.eigh, xs))\n"
        "b = P().map(np.linalg.eigvalsh, xs)\n"
        "c = list(map(lambda x: np.linalg.eigh(x @ x.T), xs))\n"
    )
    got = [(f.line, f.code, f.replacement) for f in scan_source(src)]
    assert got == [
        (3, "SPX003", "spectra.eigh(list(xs))"),
        (4, "SPX003", "spectra.eigvalsh(list(xs))"),
        (5, "SPX003", "spectra.eigh([x @ x.T for x in xs])"),
    ]


def test_select_ignore_and_prefixes():
    path = CORPUS / "graph_transform.py"
    assert {f.code for f in scan(path, select=["SPX003"])} == {"SPX003"}
    assert {f.code for f in scan(path, ignore=["SPX001", "SPX003"])} == {"SPX002"}
    assert len(scan(path, select=["SPX0"])) == len(scan(path))
    assert scan(path, select=["spx002"], ignore=["SPX002"]) == []
    with pytest.raises(ValueError, match="unknown code 'E501'"):
        scan(path, select=["E501"])


def test_inline_ignore():
    src = "import numpy as np\nws = [np.linalg.eigvalsh(a) for a in A]  # spectra: ignore\n"
    assert scan_source(src) == []
    src = src.replace("ignore", "ignore[SPX001]")
    assert [f.code for f in scan_source(src)] == ["SPX002"]
    loop = "import numpy as np\nfor a in A:  # spectra: ignore[SPX001]\n    np.linalg.eigh(a)\n"
    assert scan_source(loop) == []
    in_string = 'import numpy as np\nws = [np.linalg.eigh(a, "# spectra: ignore") for a in A]\n'
    assert len(scan_source(in_string)) == 1


def test_notebook_cells_and_lines():
    [loop, comp] = scan(CORPUS / "bands.ipynb")
    assert (loop.cell, loop.line, loop.col) == (4, 3, 21)
    assert "(cell 4, line 2)" in loop.message
    assert (comp.cell, comp.line) == (6, 2)
    assert not loop.fixable and "notebooks" in loop.fix_blocker


def test_errors(tmp_path):
    with pytest.raises(ScanError, match="no such file"):
        scan(tmp_path / "missing.py")
    bad = tmp_path / "bad.py"
    bad.write_text("for x in:\n")
    with pytest.raises(ScanError, match=r"bad.py:1:\d+: syntax error"):
        scan(bad)
    nb = tmp_path / "bad.ipynb"
    nb.write_text("{not json")
    with pytest.raises(ScanError, match="not a readable notebook"):
        scan(nb)


def test_folders_skip_virtualenvs_and_hidden(tmp_path):
    loop = "import numpy as np\nws = [np.linalg.eigh(a) for a in A]\n"
    for rel in ("pkg/a.py", ".venv/lib/b.py", ".hidden/c.py", "build/d.py", "pkg/e.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(loop)
    assert [f.path for f in scan(tmp_path)] == [str(tmp_path / "pkg" / "a.py")]


def test_codes_documented():
    assert set(CODES) == {"SPX001", "SPX002", "SPX003", "SPX010"}


def test_empty_and_comment_only_files(tmp_path):
    for text in ("", "# only a comment\n", '"""only a docstring"""\n'):
        (tmp_path / "m.py").write_text(text)
        assert scan(tmp_path / "m.py") == []
