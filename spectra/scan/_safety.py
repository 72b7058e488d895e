"""What ``--fix`` must prove before it rewrites: pure arguments, re-iterable sources, dead names."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ._flow import target_names
from ._resolve import Names

_PURE_BUILTINS = {
    "abs", "bool", "complex", "dict", "enumerate", "float", "int", "len", "list", "max", "min",
    "range", "reversed", "round", "slice", "sorted", "str", "sum", "tuple", "zip",
}  # fmt: skip
_PURE_MODULES = ("numpy.", "torch.", "scipy.", "math.", "cmath.")
_PURE_METHODS = {
    "T", "H", "mT", "mH", "astype", "cdouble", "cfloat", "clone", "conj", "conj_physical",
    "conjugate", "contiguous", "copy", "cpu", "cuda", "detach", "diagonal", "dot", "double",
    "flatten", "float", "matmul", "mean", "mm", "numpy", "permute", "ravel", "reshape",
    "squeeze", "sum", "swapaxes", "to", "toarray", "todense", "trace", "transpose", "unsqueeze",
    "view",
}  # fmt: skip
_REITERABLE_CALLS = {"range", "list", "tuple", "sorted"}
_DYNAMIC = {"locals", "globals", "vars", "eval", "exec"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def impure_part(node: ast.AST, names: Names) -> str | None:
    """The first sub-expression whose evaluation might not commute with the solver calls.

    Moving every argument evaluation ahead of every solver call is exact when evaluating
    an argument has no effect that a later one can see. Calls are trusted only when known:
    NumPy/torch/SciPy/math functions without ``out=`` and not in-place (``_`` suffix), the
    pure builtins, and array methods such as ``.T``, ``.conj()``, ``.astype()``. A call of
    anything else (``model.hamiltonian(k)``) may hand back one reused buffer per call.
    """
    for sub in ast.walk(node):
        if isinstance(sub, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda)):
            return ast.unparse(sub)
        if not isinstance(sub, ast.Call):
            continue
        if any(kw.arg == "out" for kw in sub.keywords):
            return ast.unparse(sub)
        func = sub.func
        qual = names.qualify(func)
        if qual is not None and qual.startswith(_PURE_MODULES) and not qual.endswith("_"):
            continue
        if isinstance(func, ast.Name) and func.id in _PURE_BUILTINS and func.id not in names.bound:
            continue
        if isinstance(func, ast.Attribute) and func.attr in _PURE_METHODS and qual is None:
            continue
        return ast.unparse(sub)
    return None


def reiterable(node: ast.AST, scope: ast.AST, names: Names) -> bool:
    """Whether evaluating ``node`` twice gives the same items twice (never an iterator).

    True for ``range(...)``, list/tuple literals, NumPy/torch calls, ``zip``/``enumerate``
    of such, and names that the scope only ever binds to one of those.
    """
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp, ast.Constant)):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        qual = names.qualify(func)
        if qual is not None and qual.startswith(("numpy.", "torch.")):
            return True
        if isinstance(func, ast.Name) and func.id not in names.bound:
            if func.id in _REITERABLE_CALLS:
                return True
            if func.id in ("zip", "enumerate", "reversed"):
                return all(reiterable(a, scope, names) for a in node.args)
        return False
    if isinstance(node, ast.Name):
        values = list(_stores(scope, node.id))
        return bool(values) and all(
            v is not None and v is not node and reiterable(v, scope, names) for v in values
        )
    return False


def _stores(scope: ast.AST, name: str) -> Iterator[ast.AST | None]:
    """The values bound to ``name`` in ``scope`` (None when the binding is not a plain value)."""
    for node in _walk_scope(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    yield node.value
                elif name in target_names(target):
                    yield None
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
            bound = (
                [node.target]
                if not isinstance(node, ast.With)
                else [i.optional_vars for i in node.items if i.optional_vars is not None]
            )
            if any(name in target_names(t) for t in bound):
                yield None
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            yield None
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = scope.args
        if name in {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}:
            yield None


def _walk_scope(scope: ast.AST) -> Iterator[ast.AST]:
    """Nodes of ``scope`` itself, not of the functions, classes or comprehensions in it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (*_SCOPES, *_COMPS)):
            todo.extend(ast.iter_child_nodes(node))


def parents_of(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """Child -> parent for every node."""
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def scope_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    """The module or function whose local names ``node`` uses."""
    cur = parents.get(node)
    while cur is not None and not isinstance(
        cur, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        cur = parents.get(cur)
    assert cur is not None
    return cur


def _inside(node: ast.AST, region: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    cur: ast.AST | None = node
    while cur is not None:
        if cur is region:
            return True
        cur = parents.get(cur)
    return False


def live_after(
    loop: ast.AST, name: str, scope: ast.AST, parents: dict[ast.AST, ast.AST]
) -> ast.AST | None:
    """A read of ``name`` (outside ``loop``) that could see the value the loop left, or None.

    The rewrite no longer binds the loop's variables; that is safe when no read can see
    them: reads inside a comprehension or ``for`` that rebinds the name, reads after a plain
    assignment that follows the loop in the same block, or before the loop when the loop
    is not itself repeated. Anything else (a closure, ``global``, ``del``) counts as a read.
    """
    for node in ast.walk(scope):
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Name) and func.id in _DYNAMIC:
            return node
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return node
        if not isinstance(node, ast.Name) or node.id != name:
            continue
        reads = True
        if isinstance(node.ctx, ast.Store):
            parent = parents.get(node)
            reads = isinstance(parent, ast.AugAssign) and parent.target is node
        if not reads or _inside(node, loop, parents):
            continue
        verdict = _shadowed(node, name, loop, scope, parents)
        if verdict is None:
            return node
    return None


def _shadowed(
    node: ast.AST, name: str, loop: ast.AST, scope: ast.AST, parents: dict[ast.AST, ast.AST]
) -> bool | None:
    """True when the read of ``name`` at ``node`` cannot see the loop's binding."""
    before = (node.lineno, node.col_offset) < (loop.lineno, loop.col_offset)  # type: ignore[attr-defined]
    child, cur = node, parents.get(node)
    while cur is not None:
        if cur is not scope:
            if isinstance(cur, _COMPS) and any(
                name in target_names(g.target) for g in cur.generators
            ):
                return True
            loop_var = isinstance(cur, (ast.For, ast.AsyncFor)) and child in cur.body
            if loop_var and name in target_names(cur.target):  # type: ignore[attr-defined]
                return True
            if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return _local_to(cur, name)
        for block in ("body", "orelse", "finalbody"):
            stmts = getattr(cur, block, None)
            if isinstance(stmts, list) and child in stmts:
                for prev in stmts[: stmts.index(child)]:
                    after_loop = prev.lineno > loop.end_lineno  # type: ignore[attr-defined]
                    if (after_loop or before) and _assigns(prev, name):
                        return True
        if cur is scope:
            break
        child, cur = cur, parents.get(cur)
    if before and not _loop_repeats(loop, scope, parents):
        return True
    return None


def _local_to(func: ast.AST, name: str) -> bool | None:
    """True when ``name`` is a parameter or a local of the nested function ``func``."""
    a = func.args  # type: ignore[attr-defined]
    if name in {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}:
        return True
    if isinstance(func, ast.Lambda):
        return None
    local = any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in _walk_scope(func)
    )
    return True if local else None


def _loop_repeats(loop: ast.AST, scope: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    cur = parents.get(loop)
    while cur is not None and cur is not scope:
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While, *_COMPS)):
            return True
        cur = parents.get(cur)
    return False


def _assigns(stmt: ast.stmt, name: str) -> bool:
    if isinstance(stmt, ast.Assign):
        return any(name in target_names(t) for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return stmt.value is not None and name in target_names(stmt.target)
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name).split(".")[0] == name for a in stmt.names)
    return False
