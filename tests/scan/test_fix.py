"""``spectra.scan.fix``: each rewrite runs and gives the numbers the original gave."""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest
import torch

import spectra
from spectra.scan import GAUGE_NOTE, fix, fix_source, scan, scan_source

from .helpers import CORPUS, assert_same, run_script

FIXABLE = ["aliases.py", "graph_transform.py", "ignores.py", "nested.py", "pca_datasets.py",
           "tb_kloop.py"]  # fmt: skip


def _rewritten_names(text: str) -> set[str]:
    """Names assigned on the line after each ``# spectra scan --fix`` comment pair."""
    lines = text.splitlines()
    out: set[str] = set()
    for i, line in enumerate(lines):
        if line.strip().startswith("# spectra scan --fix"):
            code = lines[i + 2].strip()
            out |= {n.strip() for n in code.split("=")[0].split(",")}
    return out


@pytest.mark.parametrize("name", FIXABLE)
def test_fixed_corpus_runs_and_gives_the_same_numbers(name):
    src = (CORPUS / name).read_text()
    result = fix_source(src, name)
    assert result.applied, "nothing rewritten"
    assert len(result.applied) == sum(f.fixable for f in scan(CORPUS / name))
    before, after = run_script(src), run_script(result.fixed)
    rewritten = _rewritten_names(result.fixed)
    assert rewritten and rewritten <= before.keys() & after.keys()
    for key in before.keys() & after.keys():
        assert_same(before[key], after[key], f"{name}:{key}")
    # the rewritten file has no fixable finding left, and the others stay reported
    left = scan_source(result.fixed, name)
    assert not any(f.fixable for f in left)
    assert len(left) == len(scan(CORPUS / name)) - len(result.applied)


def test_unfixable_files_are_untouched():
    for name in ("side_effects.py", "riemannian.py", "single_calls.py"):
        src = (CORPUS / name).read_text()
        result = fix_source(src, name)
        assert result.fixed == src and result.diff == "" and not result.applied


def test_only_the_edited_lines_change():
    src = (CORPUS / "tb_kloop.py").read_text()
    new = fix_source(src, "tb_kloop.py").fixed
    old_lines, new_lines = src.splitlines(), new.splitlines()
    # the loop (lines 15-20) became two comment lines and one statement, plus the import
    assert old_lines[:4] == new_lines[:4]
    assert new_lines[4] == "import spectra"
    assert old_lines[4:14] == new_lines[5:15]
    assert new_lines[15:18] == [
        "# spectra scan --fix (SPX001): one batched call instead of one per matrix;",
        f"# {GAUGE_NOTE}.",
        "energies, states = map(list, spectra.eigh([Hk[ik] for ik in range(nk)], "
        "[Sk[ik] for ik in range(nk)]))",
    ]
    assert old_lines[20:] == new_lines[18:]


def test_diff_states_the_gauge_and_is_a_patch():
    result = fix_source((CORPUS / "pca_datasets.py").read_text(), "pca_datasets.py")
    diff = result.diff
    assert diff.startswith(f"# spectra scan --fix: batched rewrites; {GAUGE_NOTE}.\n")
    assert "--- a/pca_datasets.py\n+++ b/pca_datasets.py\n" in diff
    assert "+import spectra\n" in diff
    assert re.search(r"^\+decomps = list\(map\(spectra.EighResult, \*spectra.eigh\(", diff, re.M)


@pytest.mark.parametrize("n_items", [0, 1, 3])
def test_loop_and_comprehension_over_any_number_of_items(n_items):
    src = (
        "import numpy as np\n"
        "rng = np.random.default_rng(0)\n"
        "xs = [rng.standard_normal((n, n)) for n in [4, 2, 5][:N]]\n"
        "xs = [x + x.T for x in xs]\n"
        "ws = []\n"
        "vs = []\n"
        "for x in xs:\n"
        "    w, v = np.linalg.eigh(x)\n"
        "    ws.append(w)\n"
        "    vs.append(v)\n"
        "rs = [np.linalg.eigh(x) for x in xs]\n"
        "only = [np.linalg.eigvalsh(x) for x in xs]\n"
    ).replace("N", str(n_items))
    result = fix_source(src)
    assert len(result.applied) == 3
    before, after = run_script(src), run_script(result.fixed)
    for key in ("ws", "vs", "rs", "only"):
        assert_same(before[key], after[key], key)
        assert len(after[key]) == n_items
    if n_items:
        assert isinstance(after["rs"][0], spectra.EighResult)
        assert after["rs"][0].eigenvalues.dtype == np.float64


@pytest.mark.parametrize("dtype", ["float32", "complex64", "complex128"])
def test_dtypes_survive(dtype):
    src = (
        "import numpy as np\nimport scipy.linalg as sl\n"
        "rng = np.random.default_rng(1)\n"
        "a = rng.standard_normal((6, 4, 4)) + 1j * rng.standard_normal((6, 4, 4))\n"
        f"a = (a if '{dtype}'.startswith('complex') else a.real).astype('{dtype}')\n"
        "a = a + a.conj().transpose(0, 2, 1)\n"
        "b = np.eye(4, dtype=a.dtype) + 0.1 * (a @ a.conj().transpose(0, 2, 1))\n"
        "ws, vs = [], []\n"
        "for i in range(len(a)):\n"
        "    w, v = sl.eigh(a[i], b[i])\n"
        "    ws.append(w)\n"
        "    vs.append(v)\n"
    )
    result = fix_source(src)
    assert len(result.applied) == 1
    before, after = run_script(src), run_script(result.fixed)
    assert_same(before["ws"], after["ws"], "ws")
    assert_same(before["vs"], after["vs"], "vs")


def test_gauge_comparison_is_not_vacuous():
    a = np.array([[0.6, 0.8], [0.8, -0.6]])
    assert_same(a, a * np.array([-1.0, 1.0]), "signs")  # a sign flip per column: equal
    with pytest.raises(AssertionError):
        assert_same(a, a[:, ::-1], "swapped columns")
    with pytest.raises(AssertionError):
        assert_same(np.array([1.0, 2.0]), np.array([-1.0, 2.0]), "eigenvalues keep signs")


@pytest.mark.parametrize(
    "src",
    [
        # the list is read in the loop
        "import numpy as np\nws = []\nfor a in A:\n"
        "    ws.append(np.linalg.eigvalsh(a + len(ws)))\n",
        # the loop variable is read by a function defined later (a closure over the module)
        "import numpy as np\nws = []\nfor a in A:\n    ws.append(np.linalg.eigh(a))\n"
        "def f():\n    return a\n",
        # deleted after the loop
        "import numpy as np\nws = []\nfor a in A:\n    ws.append(np.linalg.eigh(a))\ndel a\n",
        # the loop is itself repeated and the variable is read before it
        "import numpy as np\nfor k in range(2):\n    print(a if k else 0)\n    ws = []\n"
        "    for a in A:\n        ws.append(np.linalg.eigh(a))\n",
        # same line as another statement
        "import numpy as np\nx = 1; ws = []\nfor a in A:\n    ws.append(np.linalg.eigh(a))\n",
        # the name spectra is taken
        "import numpy as np\nspectra = 3\nws = [np.linalg.eigh(a) for a in A]\n",
        # locals() could read anything
        "import numpy as np\nws = []\nfor a in A:\n    ws.append(np.linalg.eigh(a))\n"
        "print(locals())\n",
        # an argument with a side effect
        "import numpy as np\nws = [np.linalg.eigh((y := a)) for a in A]\n",
        # read after the loop by a function defined later (called who knows when)
        "import numpy as np\nws = []\nfor a in A:\n    ws.append(np.linalg.eigh(a))\n"
        "a = 0\nprint(a)\ndef g():\n    return a\n",
        # rebound only conditionally before the read
        "import numpy as np\nws = []\nfor a in A:\n    ws.append(np.linalg.eigh(a))\n"
        "if c:\n    a = 0\nprint(a)\n",
        # a global statement elsewhere
        "import numpy as np\ndef f():\n    global a\nws = []\nfor a in A:\n"
        "    ws.append(np.linalg.eigh(a))\n",
        # more than one constant index of each result
        "import numpy as np\nws = [np.linalg.eigvalsh(a)[0:2] for a in A]\n",
        "import numpy as np\nws = [np.linalg.eigh(np.add(a, a, out=a)) for a in A]\n",
    ],
)
def test_never_rewritten(src):
    [finding] = scan_source(src)
    assert not finding.fixable and finding.fix_blocker
    assert fix_source(src).fixed == src


@pytest.mark.parametrize(
    "src",
    [
        # the loop variables are rebound before any later read
        "import numpy as np\nws = []\nfor a in A:\n    ws.append(np.linalg.eigh(a))\n"
        "a = 0\nprint(a)\nfor a in A:\n    print(a)\nb = [a for a in A]\n",
        # inside a function, next to a docstring-only module
        '"""doc"""\n\n\ndef f(A):\n    import numpy as np\n\n    ws, vs = [], []\n'
        "    for i in range(len(A)):\n        w, v = np.linalg.eigh(A[i])\n"
        "        ws.append(w)\n        vs.append(v)\n    return ws, vs\n",
    ],
)
def test_rewritten_when_provably_safe(src):
    [finding] = scan_source(src)
    assert finding.fixable, finding.fix_blocker
    new = fix_source(src).fixed
    ast.parse(new)
    assert new.count("import spectra\n") == 1


def test_loops_reusing_names_at_module_level_are_all_rewritten():
    src = (
        "import numpy as np\nws = []\nfor a in A:\n    ws.append(np.linalg.eigh(a))\n"
        "vs = []\nfor a in B:\n    vs.append(np.linalg.eigh(a))\na = 1\nprint(a)\n"
    )
    findings = scan_source(src)
    assert [f.fixable for f in findings] == [True, True], [f.fix_blocker for f in findings]


def test_one_eigenvalue_of_each_matrix_is_rewritten_and_suggested_with_its_index():
    src = (
        "import numpy as np\nimport scipy.linalg as sla\nimport torch\n"
        "rng = np.random.default_rng(1)\n"
        "mats = rng.standard_normal((5, 4, 4))\nmats = mats + mats.transpose(0, 2, 1)\n"
        "ragged = [mats[i, : i % 3 + 2, : i % 3 + 2] for i in range(5)]\n"
        "t = torch.from_numpy(mats)\n"
        "lows = [sla.eigvalsh(mats[i])[0] for i in range(len(mats))]\n"
        "highs = [np.linalg.eigvalsh(m)[-1] for m in ragged]\n"
        "mids = [torch.linalg.eigvalsh(x)[2] for x in t]\n"
        "vals = [np.linalg.eigh(m)[0] for m in mats]\n"
    )
    findings = scan_source(src)
    assert [f.replacement for f in findings] == [
        "[w[0] for w in spectra.eigvalsh(mats)]",
        "[w[-1] for w in spectra.eigvalsh(list(ragged))]",
        "[w[2] for w in spectra.eigvalsh(list(t))]",
        "spectra.eigvalsh(list(mats))",
    ]
    assert all(f.fixable for f in findings), [f.fix_blocker for f in findings]
    result = fix_source(src)
    assert "lows = [w[0] for w in spectra.eigvalsh(" in result.fixed
    before, after = run_script(src), run_script(result.fixed)
    for key in ("lows", "highs", "mids", "vals"):
        assert len(before[key]) == len(after[key]) == 5, key
        for b, a in zip(before[key], after[key], strict=True):
            assert type(b) is type(a), key
            assert_same(b if isinstance(b, torch.Tensor) else np.asarray(b),
                        a if isinstance(a, torch.Tensor) else np.asarray(a), key)  # fmt: skip
    reference = np.linalg.eigvalsh(before["mats"])[:, 0]  # the independent NumPy answer
    np.testing.assert_allclose(after["lows"], reference, rtol=0, atol=1e-12)


def test_existing_import_alias_is_used():
    src = "import numpy as np\nimport spectra as sp\nws = [np.linalg.eigvalsh(a) for a in A]\n"
    new = fix_source(src).fixed
    assert "ws = list(sp.eigvalsh(list(A)))" in new and "import spectra\n" not in new


def test_fix_writes_files_and_dry_run_does_not(tmp_path):
    path = tmp_path / "script.py"
    src = (CORPUS / "nested.py").read_text()
    path.write_text(src)
    [dry] = fix(path, write=False)
    assert path.read_text() == src and dry.fixed != src
    [done] = fix(path)
    assert path.read_text() == dry.fixed and len(done.applied) == 3
    [again] = fix(path)
    assert not again.applied and path.read_text() == dry.fixed


def test_select_limits_what_is_fixed():
    src = (CORPUS / "graph_transform.py").read_text()
    result = fix_source(src, select=["SPX002"])
    assert {f.code for f in result.applied} == {"SPX002"}
    assert "for L in graphs:" in result.fixed


def test_fix_keeps_line_ends_and_encoding(tmp_path):
    path = tmp_path / "legacy.py"
    src = (
        "# -*- coding: latin-1 -*-\n# caf\xe9\nimport numpy as np\n"
        "A = np.stack([np.eye(2), 2 * np.eye(2)])\nws = [np.linalg.eigvalsh(a) for a in A]\n"
    )
    path.write_bytes(src.replace("\n", "\r\n").encode("latin-1"))
    [result] = fix(path)
    raw = path.read_bytes()
    assert len(result.applied) == 1 and b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b"")
    text = raw.decode("latin-1")
    assert "# caf\xe9" in text and "ws = list(spectra.eigvalsh(list(A)))" in text


def test_attribute_loop_targets_are_not_rewritten():
    src = "import numpy as np\nws = []\nfor obj.x in A:\n    ws.append(np.linalg.eigh(obj.x))\n"
    [finding] = scan_source(src)
    assert not finding.fixable and "attribute" in finding.fix_blocker


_DATA = (
    "import numpy as np\nimport torch\nrng = np.random.default_rng(4)\n"
    "A = rng.standard_normal((5, 3, 3))\nA = A + A.transpose(0, 2, 1)\n"
    "T = torch.from_numpy(A)\n"
)


@pytest.mark.parametrize(
    "loop",
    [
        "vs = []\nfor a in A:\n    _, v = np.linalg.eigh(a)\n    vs.append(v)\n",
        "rs = list()\nfor i in range(len(A)):\n    r = np.linalg.eigh(A[i])\n    rs.append(r)\n",
        "rs = []\nfor t in T:\n    rs.append(torch.linalg.eigh(t))\n",
        "ws, vs = [], []\nfor k, a in enumerate(A):\n    w, v = np.linalg.eigh(a)\n"
        "    vs.append(v)\n    ws.append(w)\n",
        "ws = []\nfor a in A:\n    w = np.linalg.eigvalsh(a)\n    ws.append(w)\n",
        "ws = []\nfor a in A:\n    w, v = np.linalg.eigh(a)\n    ws.append(w)\n",
        "def f(A):\n    ws = []\n    for a in A:\n        ws.append(np.linalg.eigvalsh(a))\n"
        "    return ws\nws = f(A)\n",
    ],
)
def test_loop_variants_run_the_same(loop):
    src = _DATA + loop
    result = fix_source(src)
    assert len(result.applied) == 1, scan_source(src)[0].fix_blocker
    before, after = run_script(src), run_script(result.fixed)
    names = {"ws", "vs", "rs"} & before.keys()
    assert names and names <= after.keys()
    for key in names:
        assert_same(before[key], after[key], key)
    if "rs" in names:  # named results stay named
        assert after["rs"][0].eigenvalues is after["rs"][0][0]
