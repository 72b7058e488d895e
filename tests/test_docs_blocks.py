"""Every ```python block of README.md and docs/*.md runs as pasted from the repository root.

One test per block (id ``file:line``), each in a fresh namespace with the working directory at
the repository root and matplotlib on the Agg backend. Blocks that start worker processes
(a Dask ``LocalCluster``) also run as a saved script and piped to ``python``, as users paste
them. Skipped: blocks preceded by a
``<!-- skip: cuda -->`` or ``<!-- skip: cluster -->`` comment (they need a GPU or a running
cluster), and blocks that name CUDA when no CUDA device is present.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
SKIP = re.compile(r"<!--\s*skip:\s*(\w+)[^>]*-->\s*$")


def _blocks() -> list:
    params = []
    for path in FILES:
        text = path.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            before = text[: match.start()].rstrip().splitlines()[-1:] or [""]
            skip = SKIP.search(before[0])
            marks = []
            if skip:
                marks.append(pytest.mark.skip(reason=f"needs {skip.group(1)}"))
            elif "cuda" in match.group(1).lower():
                marks.append(pytest.mark.cuda)
            params.append(
                pytest.param(match.group(1), id=f"{path.relative_to(ROOT)}:{line}", marks=marks)
            )
    return params


BLOCKS = _blocks()


def test_blocks_were_found() -> None:
    names = {p.id.split(":")[0] for p in BLOCKS}
    assert "README.md" in names
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("code", BLOCKS)
def test_block_runs(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if "cuda" in code.lower():
        import torch

        if not torch.cuda.is_available():
            pytest.skip("needs a CUDA device")
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "__main__"}
    exec(compile(code, "<block>", "exec"), namespace)
    import matplotlib.pyplot as plt

    plt.close("all")
    # the block may not leave a changed backend behind for the blocks after it
    assert os.environ.get("MPLBACKEND") == "Agg", "the block changed MPLBACKEND"
    assert matplotlib.get_backend().lower() == "agg", matplotlib.get_backend()


#: What starts worker processes: such a block must also run as a saved script and piped to
#: ``python`` (spawned workers re-import the main module; issue 27's Nanny failure).
MULTIPROCESS = re.compile(r"LocalCluster\(|LocalCUDACluster\(|Client\(|multiprocessing|ProcessPool")


def _multiprocess_blocks() -> list:
    return [p for p in BLOCKS if MULTIPROCESS.search(p.values[0])]


def test_every_multiprocess_block_guards_its_main_module() -> None:
    blocks = _multiprocess_blocks()
    assert len(blocks) >= 3  # docs/distributed.md: LocalCluster, a cluster, dask-cuda
    assert RUNNABLE_MULTIPROCESS, "no multi-process block runs here: the script test is empty"
    for param in blocks:
        code = param.values[0]
        assert 'if __name__ == "__main__":' in code, f"{param.id} starts processes unguarded"


RUNNABLE_MULTIPROCESS = [p for p in _multiprocess_blocks() if not p.marks]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("code", RUNNABLE_MULTIPROCESS)
@pytest.mark.parametrize("how", ["script", "stdin"])
def test_multiprocess_block_runs_as_a_script_and_piped(code: str, how: str, tmp_path) -> None:
    import subprocess
    import sys

    script = tmp_path / "block.py"
    script.write_text(code)
    env = {**os.environ, "MPLBACKEND": "Agg"}
    if how == "script":
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    else:
        done = subprocess.run(
            [sys.executable, "-"],
            input=code, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    problems = _without_info_records(done.stderr)
    assert "Traceback" not in problems, done.stderr[-3000:]


#: the start of a logging record (``2026-12-02 02:59:47,347 - distributed.batched - INFO - ...``)
LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ - \S+ - (\w+) - ", re.MULTILINE)


def _without_info_records(stderr: str) -> str:
    """``stderr`` without its INFO-level logging records, each with the lines that follow it
    up to the next record: distributed logs a closing comm at shutdown ("Batched Comm
    Closed") with its traceback at INFO level, which is no failure of the block (a failure
    exits non-zero or logs at WARNING and above).
    """
    starts = [m.start() for m in LOG_RECORD.finditer(stderr)]
    if not starts:
        return stderr
    kept = [stderr[: starts[0]]]
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(stderr)
        record = stderr[start:end]
        match = LOG_RECORD.match(record)
        if match is None or match.group(1) != "INFO":
            kept.append(record)
    return "".join(kept)


def test_info_records_are_dropped_and_errors_kept() -> None:
    info = "2026-12-02 02:59:47,347 - distributed.batched - INFO - Batched Comm Closed\n"
    error = "2026-12-02 02:59:48,001 - distributed.worker - ERROR - failed\n"
    tb = "Traceback (most recent call last):\n  ...\nCommClosedError\n"
    assert "Traceback" not in _without_info_records("http://x\n" + info + tb)
    assert "Traceback" in _without_info_records(info + tb + error + tb)
    assert _without_info_records("plain output\n" + tb) == "plain output\n" + tb


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
#: pages another part of the project is still writing (docs/index.md links them already)
PENDING = {"docs/architecture.md"}


def test_relative_links_point_to_files():
    missing = []
    for path in FILES:
        for target in LINK.findall(path.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (path.parent / target).resolve()
            rel = resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else ""
            if not resolved.exists() and rel not in PENDING:
                missing.append(f"{path.relative_to(ROOT)} -> {target}")
    assert not missing, missing
