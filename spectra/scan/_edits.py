"""The text side of ``--fix``: edits by line and column, their comments, overlap tests.

>>> text = apply_edits(["x = 1\\n", "y = 2\\n"], [(Edit(2, 2, "y = 3"), "SPX001")], None)
>>> text.splitlines()[-1]
'y = 3'
"""

from __future__ import annotations

from dataclasses import dataclass

#: The header of every diff and the comment above every rewrite.
GAUGE_NOTE = "eigenvalues as before; eigenvectors equal up to sign/phase (spectra fixes the gauge)"


@dataclass
class Edit:
    """Replace lines ``[first, last]`` (1-based) or, for a span, columns within them."""

    first: int
    last: int
    text: str
    start_col: int | None = None  # byte offset in line ``first`` (span edits)
    end_col: int | None = None  # byte offset in line ``last``
    comment_line: int | None = None  # insert the explanation above this line
    indent: str = ""


class Unsafe(Exception):
    """Why a finding cannot be rewritten (shown as ``fix_blocker``)."""


def comment(code: str, indent: str) -> list[str]:
    """The two comment lines placed above a rewrite."""
    return [
        f"{indent}# spectra scan --fix ({code}): one batched call instead of one per matrix;\n",
        f"{indent}# {GAUGE_NOTE}.\n",
    ]


def apply_edits(lines: list[str], edits: list[tuple[Edit, str]], import_at: int | None) -> str:
    """Apply non-overlapping edits (with their codes) to ``lines`` (with line ends)."""
    ops: list[tuple[int, int, object]] = []
    comments: dict[int, tuple[str, str]] = {}
    for edit, code in edits:
        col = edit.start_col if edit.start_col is not None else 0
        ops.append((edit.first, col, edit))
        if edit.comment_line is not None:
            comments.setdefault(edit.comment_line, (code, edit.indent))
        else:
            comments.setdefault(edit.first, (code, edit.indent))
    for line, (code, indent) in comments.items():
        ops.append((line, -1, comment(code, indent)))
    if import_at is not None:
        ops.append((import_at, -2, ["import spectra\n"]))
    out = list(lines)
    unterminated = bool(out) and not out[-1].endswith("\n")
    if unterminated:
        out[-1] += "\n"
    for line, _, op in sorted(ops, key=lambda o: (o[0], o[1]), reverse=True):
        if isinstance(op, list):
            out[line - 1 : line - 1] = op
            continue
        assert isinstance(op, Edit)
        if op.start_col is None:
            out[op.first - 1 : op.last] = [op.text + "\n"]
        else:
            head = out[op.first - 1].encode()[: op.start_col].decode()
            tail = out[op.last - 1].encode()[op.end_col :].decode()
            out[op.first - 1 : op.last] = [head + op.text + tail]
    text = "".join(out)
    return text[:-1] if unterminated and text.endswith("\n") else text


def overlaps(a: Edit, b: Edit) -> bool:
    """Whether two edits touch the same text."""
    a0 = (a.first, a.start_col or 0)
    a1 = (a.last, a.end_col if a.end_col is not None else 1 << 30)
    b0 = (b.first, b.start_col or 0)
    b1 = (b.last, b.end_col if b.end_col is not None else 1 << 30)
    return not (a1 <= b0 or b1 <= a0)
