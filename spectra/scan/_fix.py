"""``spectra scan --fix``: rewrite the loops and comprehensions that are provably equivalent.

Two patterns only, each checked in full before a single character changes:

(a) ``ws = []`` (empty lists, right before the loop) and a ``for`` loop whose body only
    computes ``w, v = eigh(X[i])`` (or ``r = ...``) and appends the parts to those lists;
(b) a list comprehension ``[eigh(x) for x in xs]`` (or ``[eigh(X[i])[0] ...]``), no condition.

The source is edited by line and column ranges taken from ``ast``; everything else in
the file stays byte for byte. Results are equal up to the eigenvector gauge: eigenvalues
agree, eigenvectors agree up to sign (phase when complex), because spectra fixes the sign
and NumPy/SciPy/torch do not.
"""

from __future__ import annotations

import ast

from ._detect import Finding, batched_list, element_part, matrix_args, solver_kind
from ._edits import Edit, Unsafe
from ._index import TreeIndex
from ._resolve import SOLVERS, Names
from ._safety import impure_part, live_after, reiterable, scope_of

_SAFE_KWARGS = {
    "numpy": set(),
    "torch": set(),
    "scipy": {"b", "eigvals_only", "check_finite", "driver", "overwrite_a", "overwrite_b"},
}


_PARTS = ("eigenvalues", "eigenvectors")


def plan_fix(
    finding: Finding,
    tree: ast.Module,
    lines: list[str],
    names: Names,
    sp: str,
    index: TreeIndex | None = None,
) -> Edit:
    """The edit that rewrites ``finding``, or raise :class:`Unsafe` saying why not.

    ``index``: the file's :class:`TreeIndex`, built once for all its findings (a file's
    findings must share one, else each builds its own and a scan is quadratic).
    """
    ctx = finding.context
    if ctx is None or finding.code not in ("SPX001", "SPX002"):
        raise Unsafe("map() is reported, not rewritten")
    if ctx.kind == "while":
        raise Unsafe("while loops are reported, not rewritten")
    if ctx.kind == "comp" and not isinstance(ctx.node, ast.ListComp):
        raise Unsafe("only list comprehensions are rewritten (this one is not a list)")
    call, solver = finding.node, finding.solver
    kind, lib = SOLVERS[solver]
    if kind == "symeig":
        raise Unsafe(f"{solver} is not rewritten (its defaults differ)")
    for kw in call.keywords:
        if kw.arg not in _SAFE_KWARGS[lib]:
            raise Unsafe(f"keyword `{kw.arg}=` has no batched equivalent here")
        if kw.arg.startswith("overwrite") and not _is_false(kw.value):
            raise Unsafe(f"`{kw.arg}=` changes the input in place")
        if kw.arg == "eigvals_only" and not isinstance(kw.value, ast.Constant):
            raise Unsafe("`eigvals_only=` is not a constant")
    mats = matrix_args(call, solver)
    if mats is None:
        raise Unsafe("the call's arguments are not plain matrices")
    for m in mats:
        bad = impure_part(m, names)
        if bad is not None:
            raise Unsafe(f"`{bad}` could return a reused buffer or have side effects")
    targets = [g.target for g in ctx.node.generators] if ctx.kind == "comp" else [ctx.node.target]
    if not all(_plain_target(t) for t in targets):
        raise Unsafe("the loop assigns to an attribute or an item")
    if index is None:
        index = TreeIndex(tree, [ctx.node])
    if isinstance(ctx.node, ast.ListComp):
        return _plan_comprehension(finding, ctx.node, mats, index, names, sp, lines)
    if isinstance(ctx.node, ast.For):
        return _plan_loop(finding, ctx.node, mats, index, names, sp, lines)
    raise Unsafe("only for loops and list comprehensions are rewritten")


def _plain_target(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_plain_target(e) for e in node.elts)
    if isinstance(node, ast.Starred):
        return _plain_target(node.value)
    return False


def _is_false(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and not node.value


def _batched(kind: str, finding: Finding, mats: list[ast.expr], sp: str) -> str:
    assert finding.context is not None
    return f"{sp}.{kind}({', '.join(batched_list(m, finding.context) for m in mats)})"


def _plan_comprehension(finding, comp, mats, index: TreeIndex, names, sp, lines) -> Edit:
    call = finding.node
    kind = solver_kind(call, finding.solver)
    elt = comp.elt
    item = element_part(call, finding.context)
    part = _PARTS[item] if item in (0, 1) and kind == "eigh" else item
    if elt is not call and item is None:
        raise Unsafe(
            "the comprehension does more than collect the solver's results (or one "
            "constant index of them)"
        )
    if kind == "eigh" and part not in (None, *_PARTS):
        raise Unsafe(f"keeps item [{item}] of each (eigenvalues, eigenvectors) pair")
    if kind == "eigvalsh" and not isinstance(item, (int, type(None))):
        raise Unsafe(f"`.{item}` of an eigenvalue array")
    for gen in comp.generators:
        if gen.ifs or gen.is_async:
            raise Unsafe("the comprehension has a condition")
    parents = index.parents
    scope = scope_of(comp, parents)
    if len(mats) > 1:
        for gen in comp.generators:
            if impure_part(gen.iter, names) or not reiterable(gen.iter, scope, names, index):
                raise Unsafe(f"`{ast.unparse(gen.iter)}` would be iterated twice")
    if kind == "eigvalsh" and isinstance(item, int):  # one eigenvalue of each matrix
        text = f"[w[{item}] for w in {_batched('eigvalsh', finding, mats, sp)}]"
    elif kind == "eigvalsh" or part == "eigenvalues":
        text = f"list({_batched('eigvalsh', finding, mats, sp)})"
    elif part == "eigenvectors":
        text = f"list({_batched('eigh', finding, mats, sp)}.eigenvectors)"
    else:
        text = f"list(map({sp}.EighResult, *{_batched('eigh', finding, mats, sp)}))"
    stmt = comp
    while not isinstance(stmt, ast.stmt):
        stmt = parents[stmt]
    return Edit(
        comp.lineno,
        comp.end_lineno,
        text,
        start_col=comp.col_offset,
        end_col=comp.end_col_offset,
        comment_line=stmt.lineno,
        indent=_indent(lines[stmt.lineno - 1]),
    )


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _plan_loop(finding, loop: ast.For, mats, index: TreeIndex, names, sp, lines) -> Edit:
    call = finding.node
    if loop.orelse:
        raise Unsafe("the loop has an else clause")
    body = loop.body
    result: dict[str, str] = {}  # name bound in the body -> "whole", "values", "vectors"
    appends: dict[str, str] = {}  # list name -> part appended
    kind = solver_kind(call, finding.solver)
    first = body[0]
    if isinstance(first, ast.Assign) and first.value is call and len(first.targets) == 1:
        target = first.targets[0]
        if isinstance(target, ast.Name):
            result[target.id] = "values" if kind == "eigvalsh" else "whole"
        elif (
            isinstance(target, ast.Tuple)
            and kind == "eigh"
            and len(target.elts) == 2
            and all(isinstance(e, ast.Name) for e in target.elts)
        ):
            w, v = (e.id for e in target.elts)  # type: ignore[attr-defined]
            if w == v:
                raise Unsafe("unpacks both results into one name")
            result.update({w: "values", v: "vectors"})
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            raise Unsafe(f"stores into `{ast.unparse(target)}`; only appends are rewritten")
        else:
            raise Unsafe("the result is unpacked in an unusual way")
        rest = body[1:]
    else:
        rest = body
    for stmt in rest:
        lst, item = _append(stmt)
        if lst is None or lst in appends:
            raise Unsafe("the loop body does more than append each result to a list")
        if item is call and not result:
            appends[lst] = "values" if kind == "eigvalsh" else "whole"
        elif isinstance(item, ast.Name) and item.id in result:
            appends[lst] = result[item.id]
        else:
            raise Unsafe("the loop body does more than append each result to a list")
    if not appends or (not result and len(rest) != 1):
        raise Unsafe("the loop keeps no result in a list")
    if "whole" in appends.values() and len(appends) > 1:
        raise Unsafe("appends the whole result and a part of it")
    block, at = _block_of(loop, index)
    inits = _inits(block, at, set(appends))
    if inits is None:
        raise Unsafe("the lists are not created empty right before the loop")
    read = set().union(*(_loads_of(m) for m in mats), _loads_of(loop.iter))
    if read & set(appends):
        raise Unsafe("the loop reads the lists it fills")
    scope = scope_of(loop, index.parents)
    from ._flow import target_names

    for name in sorted(target_names(loop.target) | set(result)):
        use = live_after(loop, name, scope, index)
        if use is not None:
            line = getattr(use, "lineno", "?")
            raise Unsafe(f"`{name}` is used outside the loop (line {line})")
    if len(mats) > 1 and (
        impure_part(loop.iter, names) or not reiterable(loop.iter, scope, names, index)
    ):
        raise Unsafe(f"`{ast.unparse(loop.iter)}` would be iterated twice")
    start, end = inits[0], loop.end_lineno or loop.lineno
    if at > len(inits) and (block[at - len(inits) - 1].end_lineno or 0) >= start.lineno:
        raise Unsafe("shares a line with another statement")
    if at + 1 < len(block) and block[at + 1].lineno <= end:
        raise Unsafe("shares a line with another statement")
    if lines[start.lineno - 1][: start.col_offset].strip():
        raise Unsafe("shares a line with another statement")
    text = _loop_text(appends, finding, mats, sp)
    indent = _indent(lines[start.lineno - 1])
    kept = [
        indent + ln.strip() for ln in lines[start.lineno - 1 : end] if ln.strip().startswith("#")
    ]
    return Edit(start.lineno, end, "\n".join([*kept, indent + text]), indent=indent)


def _loop_text(appends: dict[str, str], finding: Finding, mats, sp: str) -> str:
    parts = {part: name for name, part in appends.items()}
    if "whole" in parts:
        both = _batched("eigh", finding, mats, sp)
        return f"{parts['whole']} = list(map({sp}.EighResult, *{both}))"
    if set(parts) == {"values", "vectors"}:
        both = _batched("eigh", finding, mats, sp)
        return f"{parts['values']}, {parts['vectors']} = map(list, {both})"
    if "values" in parts:
        return f"{parts['values']} = list({_batched('eigvalsh', finding, mats, sp)})"
    return f"{parts['vectors']} = list({_batched('eigh', finding, mats, sp)}.eigenvectors)"


def _loads_of(node: ast.AST) -> set[str]:
    from ._flow import loads

    return loads(node)


def _append(stmt: ast.stmt) -> tuple[str | None, ast.AST | None]:
    """``("ws", item)`` for ``ws.append(item)``."""
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return None, None
    call = stmt.value
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr == "append"
        and isinstance(func.value, ast.Name)
        and len(call.args) == 1
        and not call.keywords
        and not isinstance(call.args[0], ast.Starred)
    ):
        return func.value.id, call.args[0]
    return None, None


def _block_of(stmt: ast.stmt, index: TreeIndex) -> tuple[list[ast.stmt], int]:
    pos = index.position(stmt)
    if pos is None:
        raise Unsafe("the loop is in an unusual place")
    return pos


def _is_empty_list(node: ast.AST) -> bool:
    if isinstance(node, ast.List):
        return not node.elts
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "list"
        and not node.args
        and not node.keywords
    )


def _inits(block: list[ast.stmt], index: int, wanted: set[str]) -> list[ast.stmt] | None:
    """The statements right before the loop that create every list in ``wanted`` empty."""
    found: set[str] = set()
    stmts: list[ast.stmt] = []
    i = index - 1
    while i >= 0 and found != wanted:
        stmt = block[i]
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            break
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, ast.Name) and _is_empty_list(value):
            names = [target.id]
        elif (
            isinstance(target, ast.Tuple)
            and isinstance(value, ast.Tuple)
            and len(target.elts) == len(value.elts)
            and all(isinstance(t, ast.Name) for t in target.elts)
            and all(_is_empty_list(v) for v in value.elts)
        ):
            names = [t.id for t in target.elts]  # type: ignore[attr-defined]
        else:
            break
        if not set(names) <= wanted or set(names) & found or len(set(names)) != len(names):
            break
        found |= set(names)
        stmts.insert(0, stmt)
        i -= 1
    return stmts if found == wanted else None


def spectra_import(tree: ast.Module) -> tuple[str, int | None]:
    """The local name of ``spectra`` and the line to insert ``import spectra`` before.

    The line is None when the module already imports it at top level.
    """
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == "spectra":
                    return alias.asname or "spectra", None
    for node in ast.walk(tree):
        taken = (isinstance(node, ast.Name) and node.id == "spectra" and
                 not isinstance(node.ctx, ast.Load))  # fmt: skip
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            taken = any((a.asname or a.name).split(".")[0] == "spectra" for a in node.names)
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.arg)):
            taken = getattr(node, "name", getattr(node, "arg", None)) == "spectra"
        if taken:
            raise Unsafe("the name `spectra` is bound to something else in this file")
    body = tree.body
    if not body:
        return "spectra", 1
    i = (
        1
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        else 0
    )
    last: ast.stmt | None = body[0] if i else None
    while i < len(body) and isinstance(body[i], (ast.Import, ast.ImportFrom)):
        last = body[i]
        i += 1
    if last is None:
        return "spectra", body[0].lineno
    return "spectra", (last.end_lineno or last.lineno) + 1
