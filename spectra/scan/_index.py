"""One pass over a parsed file that the ``--fix`` proofs query, so a scan stays linear.

Before this index every loop re-derived the whole file's parent map, re-walked its scope
for reads of each loop variable and re-scanned its block for earlier assignments: a file
with tens of thousands of loops took hours. :class:`TreeIndex` computes each of those once
(lazily, per scope or per block) and caches it for the rest of the file.

>>> import ast
>>> tree = ast.parse("xs = [1]\\nfor x in xs:\\n    y = x\\nprint(x)\\n")
>>> index = TreeIndex(tree)
>>> loop = tree.body[1]
>>> index.position(loop)[1], [n.lineno for _, n in index.name_events(tree, "x")]
(1, [2, 3, 4])
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from ._flow import target_names

T = TypeVar("T")
_DYNAMIC = {"locals", "globals", "vars", "eval", "exec"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_BLOCKS = ("body", "orelse", "finalbody")
_LOOP_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)  # as in _safety.scope_of


def walk_scope(scope: ast.AST) -> Iterator[ast.AST]:
    """Nodes of ``scope`` itself, not of the functions, classes or comprehensions in it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (*_SCOPES, *_COMPS)):
            todo.extend(ast.iter_child_nodes(node))


def assigned_names(stmt: ast.stmt) -> set[str]:
    """Names a simple statement rebinds unconditionally (assignment, annotated value, import)."""
    if isinstance(stmt, ast.Assign):
        return set().union(*(target_names(t) for t in stmt.targets))
    if isinstance(stmt, ast.AnnAssign):
        return target_names(stmt.target) if stmt.value is not None else set()
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return set()


class TreeIndex:
    """Parents, statement positions and per-scope name tables of one module, built once.

    Parameters
    ----------
    tree : the parsed module.
    loops : the loops that will be asked about (their strict ancestors are recorded, so
        that the part of a read's shadowing that no such loop can change is cached).
    """

    def __init__(self, tree: ast.AST, loops: Iterable[ast.AST] = ()) -> None:
        self.tree = tree
        self.parents: dict[ast.AST, ast.AST] = {}
        self._position: dict[int, tuple[list[ast.stmt], int]] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            for field in _BLOCKS:
                block = getattr(node, field, None)
                if isinstance(block, list):
                    for i, stmt in enumerate(block):
                        self._position[id(stmt)] = (block, i)
            for handler in getattr(node, "handlers", None) or ():
                for i, stmt in enumerate(handler.body):
                    self._position[id(stmt)] = (handler.body, i)
        self._above_loops: set[tuple[int, int]] = set()
        for loop in loops:
            scope = self.parents.get(loop)
            while scope is not None and not isinstance(scope, _LOOP_SCOPES):
                scope = self.parents.get(scope)
            cur = self.parents.get(loop)
            while cur is not None and (id(cur), id(scope)) not in self._above_loops:
                self._above_loops.add((id(cur), id(scope)))
                if cur is scope:
                    break
                cur = self.parents.get(cur)
        self._events: dict[int, tuple[dict[str, list[tuple[int, ast.AST]]], int | None]] = {}
        self._stores: dict[int, dict[str, list[ast.AST | None]]] = {}
        self._assigns: dict[int, dict[str, list[int]]] = {}
        self._fixed: dict[tuple[int, str], Any] = {}
        self.memo: dict[tuple[int, str], bool] = {}  # (nested function, name) -> local there

    def position(self, stmt: ast.AST) -> tuple[list[ast.stmt], int] | None:
        """The statement list holding ``stmt`` and its index there (None: not in a block)."""
        return self._position.get(id(stmt))

    def above_a_loop(self, node: ast.AST, scope: ast.AST) -> bool:
        """Whether ``node`` strictly contains one of the loops given at construction whose
        scope (enclosing function or module) is ``scope``."""
        return (id(node), id(scope)) in self._above_loops

    def _scope_tables(
        self, scope: ast.AST
    ) -> tuple[dict[str, list[tuple[int, ast.AST]]], int | None]:
        hit = self._events.get(id(scope))
        if hit is None:
            names: dict[str, list[tuple[int, ast.AST]]] = {}
            dynamic: int | None = None
            for order, node in enumerate(ast.walk(scope)):
                func = node.func if isinstance(node, ast.Call) else None
                if isinstance(func, ast.Name) and func.id in _DYNAMIC:
                    dynamic = order if dynamic is None else dynamic
                    names.setdefault("", []).append((order, node))
                elif isinstance(node, (ast.Global, ast.Nonlocal)):
                    for name in node.names:
                        names.setdefault(name, []).append((order, node))
                elif isinstance(node, ast.Name):
                    names.setdefault(node.id, []).append((order, node))
            hit = self._events[id(scope)] = (names, dynamic)
        return hit

    def name_events(self, scope: ast.AST, name: str) -> list[tuple[int, ast.AST]]:
        """``(walk order, node)`` of every ``Name`` ``name`` and ``global``/``nonlocal`` of it
        in ``scope`` (nested scopes included), in ``ast.walk`` order."""
        return self._scope_tables(scope)[0].get(name, [])

    def first_dynamic(self, scope: ast.AST) -> tuple[int, ast.AST] | None:
        """The first ``locals()``/``eval(...)``-like call in ``scope`` (walk order), if any."""
        names, dynamic = self._scope_tables(scope)
        return None if dynamic is None else names[""][0]

    def cached_reads(self, scope: ast.AST, name: str, compute: Callable[[list], T]) -> T:
        """``compute(name_events(scope, name))``, computed once per (scope, name)."""
        key = (id(scope), name)
        hit = self._fixed.get(key)
        if hit is None:
            hit = self._fixed[key] = compute(self.name_events(scope, name))
        return hit

    def stores(self, scope: ast.AST, name: str) -> list[ast.AST | None]:
        """Values bound to ``name`` in ``scope`` itself (None: not a plain value)."""
        table = self._stores.get(id(scope))
        if table is None:
            table = self._stores[id(scope)] = {}
            for node in walk_scope(scope):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            table.setdefault(target.id, []).append(node.value)
                        else:
                            for bound in target_names(target):
                                table.setdefault(bound, []).append(None)
                elif isinstance(
                    node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)
                ):
                    targets = (
                        [node.target]
                        if not isinstance(node, ast.With)
                        else [i.optional_vars for i in node.items if i.optional_vars is not None]
                    )
                    for bound in set().union(*(target_names(t) for t in targets)):
                        table.setdefault(bound, []).append(None)
        return table.get(name, [])

    def assigned_before(
        self, block: list[ast.stmt], index: int, name: str
    ) -> tuple[int, int] | None:
        """The first and the last index ``< index`` of the statements of ``block`` that
        rebind ``name`` (None: no such statement)."""
        table = self._assigns.get(id(block))
        if table is None:
            table = self._assigns[id(block)] = {}
            for i, stmt in enumerate(block):
                for bound in assigned_names(stmt):
                    table.setdefault(bound, []).append(i)
        found = table.get(name, [])
        end = bisect.bisect_left(found, index)
        return (found[0], found[end - 1]) if end else None
