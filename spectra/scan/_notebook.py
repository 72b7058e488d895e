"""Jupyter notebooks: the code cells as one module, and the way back to (cell, line)."""

from __future__ import annotations

import json
from pathlib import Path


class NotebookError(ValueError):
    """A ``.ipynb`` file that is not a readable notebook."""


def notebook_source(path: str | Path) -> tuple[str, list[tuple[int, int]]]:
    """The code cells joined into one source, and ``line -> (cell, line in cell)`` (1-based).

    Cells are numbered from 1 over all cells (markdown included), as Jupyter shows them.
    IPython magics (``%timeit``, ``!pip``) become ``pass`` so line numbers stay put, and
    cells run by a cell magic (``%%bash``) are left out.
    """
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NotebookError(f"not a readable notebook: {exc}") from None
    lines: list[str] = []
    where: list[tuple[int, int]] = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        if text.lstrip().startswith("%%"):
            continue
        for i, line in enumerate(text.splitlines(), start=1):
            stripped = line.lstrip()
            if stripped.startswith(("%", "!")):
                line = line[: len(line) - len(stripped)] + "pass"
            lines.append(line)
            where.append((number, i))
        lines.append("")  # cells end their statements
        where.append((number, len(text.splitlines()) + 1))
    return "\n".join(lines) + "\n", where
