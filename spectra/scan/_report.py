"""Output: ``file:line:col: CODE message`` lines, a summary, JSON for tools."""

from __future__ import annotations

import json
from typing import Any

from ._detect import Finding


def location(f: Finding) -> str:
    """``path:line:col`` (``path:cell_3:line:col`` in notebooks, as nbQA writes it)."""
    cell = f"cell_{f.cell}:" if f.cell is not None else ""
    return f"{f.path}:{cell}{f.line}:{f.col}"


def format_finding(f: Finding) -> str:
    """One line per finding; ``[*]`` marks the ones ``--fix`` rewrites, the others end with
    why not (``fix_blocker``, also in ``--json``)."""
    mark = "[*] " if f.fixable else ""
    why = f" (not rewritten by --fix: {f.fix_blocker})" if not f.fixable and f.fix_blocker else ""
    return f"{location(f)}: {f.code} {mark}{f.message}{why}"


def summary(findings: list[Finding]) -> str:
    """``Found 3 per-matrix eigensolver calls (2 fixable with --fix).``"""
    n = len(findings)
    if not n:
        return "No per-matrix eigensolver calls found."
    fixable = sum(f.fixable for f in findings)
    noun = "call" if n == 1 else "calls"
    return f"Found {n} per-matrix eigensolver {noun} ({fixable} fixable with --fix)."


def as_json(
    findings: list[Finding], errors: list[dict[str, Any]], fixed: list[Finding] | None = None
) -> str:
    """The ``--json`` document: ``{"version", "findings", "errors", "fixed"}``."""
    doc = {
        "version": 1,
        "findings": [f.as_dict() for f in findings],
        "errors": errors,
        "fixed": [f.as_dict() for f in fixed or []],
    }
    return json.dumps(doc, indent=2)
