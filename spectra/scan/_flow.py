"""Small data-flow helpers over ``ast``: names read and written, loop dependence."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def target_names(target: ast.AST) -> set[str]:
    """Names bound by an assignment or loop target (``i``, ``(k, x)``, ``*rest``)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(target_names(t) for t in target.elts)) if target.elts else set()
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return set()


def loads(node: ast.AST | None) -> set[str]:
    """Names an expression reads from its enclosing scope.

    Names bound inside it by a comprehension or a lambda are left out (their own scope).
    """
    if node is None:
        return set()
    out: set[str] = set()
    _loads(node, frozenset(), out)
    return out


def _loads(node: ast.AST, bound: frozenset[str], out: set[str]) -> None:
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, (ast.Load, ast.Del)) and node.id not in bound:
            out.add(node.id)
        return
    if isinstance(node, _COMPS):
        inner = set(bound)
        for i, gen in enumerate(node.generators):
            _loads(gen.iter, frozenset(inner) if i else bound, out)
            inner |= target_names(gen.target)
            for cond in gen.ifs:
                _loads(cond, frozenset(inner), out)
        elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for elt in elts:
            _loads(elt, frozenset(inner), out)
        return
    if isinstance(node, ast.Lambda):
        args = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
        for extra in (node.args.vararg, node.args.kwarg):
            if extra is not None:
                args.add(extra.arg)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                _loads(default, bound, out)
        _loads(node.body, bound | args, out)
        return
    for child in ast.iter_child_nodes(node):
        _loads(child, bound, out)


def events(stmts: Iterable[ast.stmt]) -> Iterator[tuple[str, str]]:
    """``("load"|"store", name)`` in (roughly) the order the statements run them."""
    for stmt in stmts:
        yield from _stmt_events(stmt)


def _walrus(node: ast.AST) -> Iterator[tuple[str, str]]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.NamedExpr):
            yield ("store", sub.target.id)


def _expr_events(node: ast.AST | None) -> Iterator[tuple[str, str]]:
    if node is None:
        return
    for name in sorted(loads(node)):
        yield ("load", name)
    yield from _walrus(node)


def _target_events(target: ast.AST) -> Iterator[tuple[str, str]]:
    # subscript/attribute targets read their base and index: X[i] = ... reads X and i
    if isinstance(target, (ast.Subscript, ast.Attribute)):
        yield from _expr_events(target)
        return
    if isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _target_events(elt)
        return
    for name in sorted(target_names(target)):
        yield ("store", name)


def _stmt_events(stmt: ast.stmt) -> Iterator[tuple[str, str]]:
    if isinstance(stmt, ast.Assign):
        yield from _expr_events(stmt.value)
        for target in stmt.targets:
            yield from _target_events(target)
    elif isinstance(stmt, ast.AugAssign):
        yield from _expr_events(stmt.value)
        if isinstance(stmt.target, ast.Name):
            yield ("load", stmt.target.id)
        yield from _target_events(stmt.target)
    elif isinstance(stmt, ast.AnnAssign):
        if stmt.value is not None:
            yield from _expr_events(stmt.value)
            yield from _target_events(stmt.target)
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        yield from _expr_events(stmt.iter)
        yield from _target_events(stmt.target)
        yield from events(stmt.body)
        yield from events(stmt.orelse)
    elif isinstance(stmt, (ast.While, ast.If)):
        yield from _expr_events(stmt.test)
        yield from events(stmt.body)
        yield from events(stmt.orelse)
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        for item in stmt.items:
            yield from _expr_events(item.context_expr)
            if item.optional_vars is not None:
                yield from _target_events(item.optional_vars)
        yield from events(stmt.body)
    elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        yield from events(stmt.body)  # type: ignore[attr-defined]
        for handler in stmt.handlers:  # type: ignore[attr-defined]
            if handler.name:
                yield ("store", handler.name)
            yield from events(handler.body)
        yield from events(stmt.orelse)  # type: ignore[attr-defined]
        yield from events(stmt.finalbody)  # type: ignore[attr-defined]
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield ("store", stmt.name)
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for alias in stmt.names:
            yield ("store", (alias.asname or alias.name).split(".")[0])
    else:
        yield from _expr_events(stmt)


def bindings(stmts: Iterable[ast.stmt]) -> list[tuple[set[str], set[str]]]:
    """``(names stored, names read to compute them)`` for every binding in ``stmts``."""
    out: list[tuple[set[str], set[str]]] = []
    for stmt in stmts:
        for node in _walk_same_scope(stmt):
            if isinstance(node, ast.Assign):
                stored = set().union(*(target_names(t) for t in node.targets))
                out.append((stored, loads(node.value)))
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                out.append((target_names(node.target), loads(node.value) | loads(node.target)))
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                out.append((target_names(node.target), loads(node.iter)))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        out.append((target_names(item.optional_vars), loads(item.context_expr)))
            elif isinstance(node, ast.NamedExpr):
                out.append(({node.target.id}, loads(node.value)))
    return out


def _walk_same_scope(node: ast.AST) -> Iterator[ast.AST]:
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, _SCOPES):
            yield from _walk_same_scope(child)


def closure(seeds: set[str], binds: list[tuple[set[str], set[str]]]) -> set[str]:
    """Every name whose value (transitively) depends on a name in ``seeds``."""
    tainted = set(seeds)
    changed = True
    while changed:
        changed = False
        for stored, read in binds:
            if read & tainted and not stored <= tainted:
                tainted |= stored
                changed = True
    return tainted


def carried(body: list[ast.stmt], prebound: set[str]) -> set[str]:
    """Names a loop body reads before it writes them: values carried between iterations."""
    stored_anywhere = {name for kind, name in events(body) if kind == "store"}
    seen: set[str] = set(prebound)
    out: set[str] = set()
    for kind, name in events(body):
        if kind == "store":
            seen.add(name)
        elif name in stored_anywhere and name not in seen:
            out.add(name)
    return out


def index_names(body: list[ast.stmt]) -> set[str]:
    """The names a ``while`` loop steps: ``i += 1``, ``i = i + 1``, ``x = queue.pop()``."""
    out: set[str] = set()
    for stmt in body:
        for node in _walk_same_scope(stmt):
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                if isinstance(node.op, (ast.Add, ast.Sub)):
                    out.add(node.target.id)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                names = target_names(node.targets[0])
                value = node.value
                step = (
                    isinstance(node.targets[0], ast.Name)
                    and isinstance(value, ast.BinOp)
                    and isinstance(value.op, (ast.Add, ast.Sub))
                    and node.targets[0].id in loads(value)
                )
                take = isinstance(value, ast.Call) and (
                    (isinstance(value.func, ast.Name) and value.func.id == "next")
                    or (isinstance(value.func, ast.Attribute) and value.func.attr == "pop")
                )
                if step or take:
                    out |= names
    return out
