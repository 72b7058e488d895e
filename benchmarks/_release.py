"""An earlier commit of spectra, importable next to the working tree as ``spectra_at_<ref>``.

"Never slower than the release" is a claim about two versions on the same machine at the
same time; timing them in one process, interleaved, is the only fair way on a shared
machine. ``load(ref)`` extracts ``spectra/`` at the git commit ``ref`` (``git archive``)
into a temporary directory, renames the package and its absolute imports, and imports it.
Needs the git history (a fresh clone has it).

>>> import subprocess
>>> ref = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout
>>> old = load(ref.strip())
>>> old.__name__.startswith("spectra_at_")
True
"""

from __future__ import annotations

import importlib
import io
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile
from types import ModuleType

#: the first release (2026-11-29), which the issues measured as "today"
FIRST_RELEASE = "870357b"

_IMPORT = re.compile(r"\b(from|import) spectra(?=[.\s])")


def load(ref: str = FIRST_RELEASE) -> ModuleType:
    """Import ``spectra`` as it was at commit ``ref``; returns the package module."""
    root = pathlib.Path(__file__).resolve().parent.parent
    name = "spectra_at_" + re.sub(r"\W", "_", ref)
    if name in sys.modules:
        return sys.modules[name]
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "spectra"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    target = pathlib.Path(tempfile.mkdtemp(prefix="spectra-release-"))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    package = target / name
    (target / "spectra").rename(package)
    for path in package.rglob("*.py"):
        path.write_text(_IMPORT.sub(rf"\1 {name}", path.read_text()))
    sys.path.insert(0, str(target))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(target))
