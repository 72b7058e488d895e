"""``scan`` and ``fix``: files and folders in, findings (and rewrites) out."""

from __future__ import annotations

import ast
import bisect
import difflib
import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._detect import CODES, Finding, detect
from ._edits import GAUGE_NOTE, Edit, Unsafe, apply_edits, overlaps
from ._fix import plan_fix, spectra_import
from ._index import TreeIndex
from ._notebook import NotebookError, notebook_source
from ._resolve import collect_names

_SKIP_DIRS = {
    ".git", ".hg", ".venv", "venv", "env", "__pycache__", "build", "dist", ".tox", ".nox",
    "node_modules", ".ipynb_checkpoints", "site-packages", ".mypy_cache", ".ruff_cache",
    ".pytest_cache", ".eggs",
}  # fmt: skip
_IGNORE = re.compile(r"#\s*spectra:\s*ignore(?:\[([A-Za-z0-9,\s]*)\])?")


class ScanError(ValueError):
    """A path that cannot be scanned: missing, unreadable, or not valid Python."""

    def __init__(self, path: str, problem: str, line: int | None = None, col: int | None = None):
        self.path, self.problem, self.line, self.col = path, problem, line, col
        where = path + (f":{line}" if line else "") + (f":{col}" if col else "")
        super().__init__(f"{where}: {problem}")

    def as_dict(self) -> dict[str, object]:
        """The JSON form (``errors`` in ``spectra scan --json``)."""
        return {"path": self.path, "line": self.line, "col": self.col, "message": self.problem}


@dataclass
class FixResult:
    """What ``fix`` did to one file: the new text, its diff, what it rewrote and what not."""

    path: str
    original: str
    fixed: str
    applied: list[Finding] = field(default_factory=list)
    refused: list[Finding] = field(default_factory=list)
    encoding: str = "utf-8"
    newline: str = "\n"

    def write(self) -> bool:
        """Write the rewritten text over the file (same encoding and line ends) if it changed."""
        if self.fixed == self.original:
            return False
        with open(self.path, "w", encoding=self.encoding, newline=self.newline) as handle:
            handle.write(self.fixed)
        return True

    @property
    def diff(self) -> str:
        """A unified diff from the original to the rewritten text ("" when unchanged)."""
        if self.fixed == self.original:
            return ""
        prefix = ("", "") if Path(self.path).is_absolute() else ("a/", "b/")
        lines = difflib.unified_diff(
            self.original.splitlines(keepends=True),
            self.fixed.splitlines(keepends=True),
            fromfile=f"{prefix[0]}{self.path}",
            tofile=f"{prefix[1]}{self.path}",
        )
        head = f"# spectra scan --fix: batched rewrites; {GAUGE_NOTE}.\n"
        return head + "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def check_codes(codes: Iterable[str] | None) -> list[str] | None:
    """Upper-cased codes or prefixes; raise ValueError naming one that matches nothing."""
    if codes is None:
        return None
    out = [c.strip().upper() for c in codes if c.strip()]
    for code in out:
        if not any(known.startswith(code) for known in CODES):
            raise ValueError(f"unknown code {code!r}: the codes are {', '.join(CODES)}")
    return out


def _selected(code: str, select: list[str] | None, ignore: list[str] | None) -> bool:
    if select is not None and not any(code.startswith(s) for s in select):
        return False
    return not (ignore and any(code.startswith(s) for s in ignore))


def _ignored_lines(source: str) -> dict[int, set[str] | None]:
    """``line -> codes`` named by ``# spectra: ignore[...]`` comments (None: every code)."""
    out: dict[int, set[str] | None] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return out
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            match = _IGNORE.search(tok.string)
            if match:
                codes = match.group(1)
                names = {c.strip().upper() for c in codes.split(",")} if codes else None
                out[tok.start[0]] = names
    return out


def _suppressed(f: Finding, ignores: dict[int, set[str] | None]) -> bool:
    lines = set(range(f.line, f.end_line + 1))
    if f.context is not None:
        lines.add(f.context.node.lineno)
    for line in lines:
        if line in ignores:
            codes = ignores[line]
            if codes is None or any(f.code.startswith(c) for c in codes):
                return True
    return False


@dataclass
class ParsedFile:
    path: str
    source: str
    tree: ast.Module
    lines: list[str]
    findings: list[Finding]
    notebook: bool
    encoding: str = "utf-8"
    newline: str = "\n"


def _parse(path: str, source: str, notebook: bool, select, ignore) -> ParsedFile:
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise ScanError(path, f"syntax error: {exc.msg}", exc.lineno, exc.offset) from None
    lines = source.splitlines()
    ignores = _ignored_lines(source)
    found = [
        f
        for f in detect(tree, path, lines)
        if _selected(f.code, select, ignore) and not _suppressed(f, ignores)
    ]
    parsed = ParsedFile(path, source, tree, lines, found, notebook)
    _mark_fixable(parsed)
    return parsed


def _mark_fixable(parsed: ParsedFile) -> list[tuple[Edit, Finding]]:
    """Plan every rewrite; set ``fixable``/``fix_blocker``; return the edits that apply."""
    if not parsed.findings:
        return []
    if parsed.notebook:
        for f in parsed.findings:
            f.fix_blocker = "notebooks are reported, not rewritten"
        return []
    try:
        sp, _ = spectra_import(parsed.tree)
    except Unsafe as exc:
        for f in parsed.findings:
            f.fix_blocker = str(exc)
        return []
    names = collect_names(parsed.tree)
    loops = [f.context.node for f in parsed.findings if f.context is not None]
    index = TreeIndex(parsed.tree, loops)
    chosen: list[tuple[Edit, Finding]] = []
    spans = _Spans()
    for f in parsed.findings:
        try:
            edit = plan_fix(f, parsed.tree, parsed.lines, names, sp, index)
        except Unsafe as exc:
            f.fix_blocker = str(exc)
            continue
        if not spans.add(edit):
            f.fix_blocker = "overlaps another rewrite"
            continue
        f.fixable, f.fix_blocker = True, None
        chosen.append((edit, f))
    return chosen


class _Spans:
    """The text ranges of the edits chosen so far, sorted, for a logarithmic overlap test."""

    def __init__(self) -> None:
        self.starts: list[tuple[int, int]] = []
        self.edits: list[Edit] = []

    def add(self, edit: Edit) -> bool:
        """Keep ``edit`` unless it overlaps a kept one (kept edits never overlap each other)."""
        key = (edit.first, edit.start_col or 0)
        at = bisect.bisect_left(self.starts, key)
        for other in self.edits[max(at - 1, 0) : at + 1]:
            if overlaps(edit, other):
                return False
        self.starts.insert(at, key)
        self.edits.insert(at, edit)
        return True


def _files(paths: Sequence[str | Path]) -> Iterable[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for sub in sorted(path.rglob("*")):
                rel = sub.relative_to(path).parts[:-1]
                if any(p in _SKIP_DIRS or p.startswith(".") for p in rel):
                    continue
                if sub.suffix in (".py", ".ipynb") and sub.is_file():
                    yield sub
        elif path.is_file():
            yield path
        else:
            raise ScanError(str(raw), "no such file or folder")


def _load(path: Path, select, ignore) -> ParsedFile:
    name = str(path)
    if path.suffix == ".ipynb":
        try:
            source, where = notebook_source(path)
        except NotebookError as exc:
            raise ScanError(name, str(exc)) from None
        try:
            parsed = _parse(name, source, True, select, ignore)
        except ScanError as exc:
            if exc.line and exc.line <= len(where):
                cell, line = where[exc.line - 1]
                raise ScanError(name, f"cell {cell}: {exc.problem}", line, exc.col) from None
            raise

        def in_cell(m: re.Match) -> str:
            cell, line = where[min(int(m.group(1)), len(where)) - 1]
            return f"(cell {cell}, line {line})"

        for f in parsed.findings:
            f.cell, f.line = where[f.line - 1]
            f.end_line = where[min(f.end_line, len(where)) - 1][1]
            f.message = re.sub(r"\(line (\d+)\)", in_cell, f.message)
        return parsed
    try:
        raw = path.read_bytes()
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        source = raw.decode(encoding).replace("\r\n", "\n")
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as exc:
        raise ScanError(name, f"cannot read: {exc}") from None
    parsed = _parse(name, source, False, select, ignore)
    parsed.encoding = encoding
    parsed.newline = "\r\n" if b"\r\n" in raw else "\n"
    return parsed


def scan_report(
    paths: Sequence[str | Path], select=None, ignore=None
) -> tuple[list[ParsedFile], list[ScanError]]:
    """Scan everything, collecting the files that could not be scanned instead of stopping."""
    select, ignore = check_codes(select), check_codes(ignore)
    parsed: list[ParsedFile] = []
    errors: list[ScanError] = []
    for raw in paths:
        try:
            files = list(_files([raw]))
        except ScanError as exc:
            errors.append(exc)
            continue
        for path in files:
            try:
                parsed.append(_load(path, select, ignore))
            except ScanError as exc:
                errors.append(exc)
    return parsed, errors


def scan(
    paths: str | Path | Sequence[str | Path],
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
) -> list[Finding]:
    """Find eigensolver calls that run once per matrix of a batch.

    Parameters
    ----------
    paths : files or folders (``.py`` and ``.ipynb``; folders are searched recursively,
        skipping virtual environments, ``build``, ``.git`` and hidden folders).
    select, ignore : codes or code prefixes to keep or drop (``["SPX001"]``, ``["SPX0"]``).

    Returns
    -------
    list of :class:`Finding`, each with ``path``, ``line``, ``col`` (1-based), ``code``,
    ``message``, the batched ``replacement`` and whether ``--fix`` can rewrite it.

    Raises
    ------
    ScanError
        For a missing path or a file that is not valid Python (the first one met).

    Examples
    --------
    >>> import spectra.scan
    >>> [f.code for f in spectra.scan.scan("examples/legacy_loops.py")][:2]
    ['SPX001', 'SPX002']
    """
    parsed, errors = scan_report(
        [paths] if isinstance(paths, (str, Path)) else paths, select, ignore
    )
    if errors:
        raise errors[0]
    return [f for p in parsed for f in p.findings]


def scan_source(
    source: str,
    path: str = "<string>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
) -> list[Finding]:
    """:func:`scan` for a string of Python source.

    Examples
    --------
    >>> from spectra.scan import scan_source
    >>> src = "from numpy.linalg import eigh\\nfor x in xs:\\n    eigh(x)\\n"
    >>> [(f.line, f.code, f.replacement) for f in scan_source(src)]
    [(3, 'SPX001', 'spectra.eigh(list(xs))')]
    """
    return _parse(path, source, False, check_codes(select), check_codes(ignore)).findings


def fix_parsed(parsed: ParsedFile) -> FixResult:
    chosen = _mark_fixable(parsed)
    result = FixResult(parsed.path, parsed.source, parsed.source)
    result.encoding, result.newline = parsed.encoding, parsed.newline
    result.refused = [f for f in parsed.findings if not f.fixable]
    if not chosen:
        return result
    _, import_at = spectra_import(parsed.tree)
    keep = parsed.source.splitlines(keepends=True)
    text = apply_edits(keep, [(e, f.code) for e, f in chosen], import_at)
    try:
        ast.parse(text)
    except SyntaxError:  # pragma: no cover - a bug in a rewrite; never write it
        for _, f in chosen:
            f.fixable, f.fix_blocker = False, "the rewrite did not parse (please report)"
        result.refused = list(parsed.findings)
        return result
    result.fixed, result.applied = text, [f for _, f in chosen]
    return result


def fix_source(source: str, path: str = "<string>", select=None, ignore=None) -> FixResult:
    """:func:`fix` for a string: the rewritten text in ``.fixed``, the diff in ``.diff``."""
    return fix_parsed(_parse(path, source, False, check_codes(select), check_codes(ignore)))


def fix(
    paths: str | Path | Sequence[str | Path],
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    write: bool = True,
) -> list[FixResult]:
    """Rewrite the loops and comprehensions that are provably equivalent to a batched call.

    Only (a) a ``for`` loop whose body computes one ``eigh``/``eigvalsh`` and appends its
    result (or its parts) to lists created empty right before it, and (b) a list
    comprehension of such calls with no condition are rewritten, after checking that the
    arguments have no side effects and the loop's variables are not used afterwards.
    Results are equal up to the eigenvector gauge: eigenvalues agree, eigenvectors agree up
    to sign (phase when complex). Notebooks are not rewritten.

    Parameters
    ----------
    paths, select, ignore : as in :func:`scan`.
    write : write the rewritten files (False: only return the results, a dry run).

    Returns
    -------
    list of :class:`FixResult`, one per scanned file (``.diff``, ``.applied``, ``.refused``).

    Examples
    --------
    >>> import spectra.scan
    >>> [r] = spectra.scan.fix("examples/legacy_loops.py", write=False)
    >>> len(r.applied) >= 2 and "spectra.eigh(" in r.fixed
    True
    """
    parsed, errors = scan_report(
        [paths] if isinstance(paths, (str, Path)) else paths, select, ignore
    )
    if errors:
        raise errors[0]
    results = [fix_parsed(p) for p in parsed]
    if write:
        for r in results:
            r.write()
    return results
