"""What ``--fix`` must prove before it rewrites: pure arguments, re-iterable sources, dead names."""

from __future__ import annotations

import ast
import bisect

from ._flow import target_names
from ._index import TreeIndex, walk_scope
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


def reiterable(node: ast.AST, scope: ast.AST, names: Names, index: TreeIndex) -> bool:
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
                return all(reiterable(a, scope, names, index) for a in node.args)
        return False
    if isinstance(node, ast.Name):
        values = index.stores(scope, node.id)
        return bool(values) and all(
            v is not None and v is not node and reiterable(v, scope, names, index) for v in values
        )
    return False


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


def _is_read(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        parent = parents.get(node)
        return isinstance(parent, ast.AugAssign) and parent.target is node
    return True


def live_after(loop: ast.AST, name: str, scope: ast.AST, index: TreeIndex) -> ast.AST | None:
    """A read of ``name`` (outside ``loop``) that could see the value the loop left, or None.

    The rewrite no longer binds the loop's variables; that is safe when no read can see
    them: reads inside a comprehension or ``for`` that rebinds the name, reads after a plain
    assignment that follows the loop in the same block, or before the loop when the loop
    is not itself repeated. Anything else (a closure, ``global``, ``del``, ``locals()``)
    counts as a read; the earliest such read is returned.

    Linear in the file overall: the reads no loop of the scope can unshadow are dropped
    once per scope and name (:class:`_Reads`), a loop that runs once skips the reads before
    it by bisection, and the reads after it stop at the first one that an assignment in
    the scope's own block shadows (it shadows every later one too).
    """
    dynamic = index.first_dynamic(scope)
    if dynamic is not None:
        return dynamic[1]
    reads = index.cached_reads(scope, name, lambda events: _Reads(events, name, scope, index))
    if reads.declared:
        return reads.declared[0]
    parents = index.parents
    for node in reads.closures:
        if not _inside(node, loop, parents) and _shadowed(node, name, loop, scope, index) is None:
            return node
    at = bisect.bisect_left(reads.positions, (loop.lineno, loop.col_offset))  # type: ignore[attr-defined]
    if _loop_repeats(loop, scope, parents):
        for node in reads.nodes[:at]:
            if _shadowed(node, name, loop, scope, index) is None:
                return node
    for node in reads.nodes[at:]:
        if _inside(node, loop, parents):
            continue
        verdict = _shadowed(node, name, loop, scope, index)
        if verdict is None:
            return node
        if verdict == _IN_SCOPE_BLOCK:
            break
    return None


_IN_SCOPE_BLOCK = "rebound in the scope's own block after the loop"


class _Reads:
    """The reads of one name in one scope that some loop there might leave visible.

    ``declared``: ``global``/``nonlocal`` statements naming it; ``closures``: reads inside
    a nested function or lambda; ``nodes``/``positions``: the other reads, by position.
    """

    def __init__(
        self, events: list[tuple[int, ast.AST]], name: str, scope: ast.AST, index: TreeIndex
    ) -> None:
        self.declared: list[ast.AST] = []
        self.closures: list[ast.AST] = []
        plain: list[tuple[tuple[int, int], ast.AST]] = []
        for _, node in events:
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                self.declared.append(node)
            elif _is_read(node, index.parents) and not _always_shadowed(node, name, scope, index):
                if _in_closure(node, scope, index):
                    self.closures.append(node)
                else:
                    plain.append(((node.lineno, node.col_offset), node))  # type: ignore[attr-defined]
        self.declared.sort(key=lambda n: n.lineno)  # type: ignore[attr-defined]
        plain.sort(key=lambda p: p[0])
        self.positions = [p for p, _ in plain]
        self.nodes = [n for _, n in plain]


def _in_closure(node: ast.AST, scope: ast.AST, index: TreeIndex) -> bool:
    cur = index.parents.get(node)
    while cur is not None and cur is not scope:
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return True
        cur = index.parents.get(cur)
    return False


def _rebound_by_structure(cur: ast.AST, child: ast.AST, name: str, index: TreeIndex) -> bool | None:
    """True/None when ``cur`` (an ancestor of a read, below its scope) decides the read:
    a comprehension or ``for`` rebinding ``name`` (True), a nested function (its verdict);
    False when ``cur`` decides nothing."""
    if isinstance(cur, _COMPS) and any(name in target_names(g.target) for g in cur.generators):
        return True
    if isinstance(cur, (ast.For, ast.AsyncFor)) and name in target_names(cur.target):
        pos = index.position(child)
        if pos is not None and pos[0] is cur.body:
            return True
    if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return _local_to(cur, name, index)
    return False


def _always_shadowed(node: ast.AST, name: str, scope: ast.AST, index: TreeIndex) -> bool:
    """True when the read at ``node`` is shadowed whatever loop of ``scope`` is rewritten:
    :func:`_shadowed`'s walk below the first ancestor that holds such a loop (there the
    "after the loop" condition of a rebinding cannot depend on which loop it is)."""
    child, cur = node, index.parents.get(node)
    while cur is not None and cur is not scope and not index.above_a_loop(cur, scope):
        decided = _rebound_by_structure(cur, child, name, index)
        if decided is not False:
            return decided is True
        pos = index.position(child)
        if pos is not None and index.assigned_before(pos[0], pos[1], name) is not None:
            return True
        child, cur = cur, index.parents.get(cur)
    return False


def _shadowed(
    node: ast.AST, name: str, loop: ast.AST, scope: ast.AST, index: TreeIndex
) -> bool | str | None:
    """True (or :data:`_IN_SCOPE_BLOCK`) when the read of ``name`` at ``node`` cannot see
    the loop's binding; None when it can."""
    parents = index.parents
    before = (node.lineno, node.col_offset) < (loop.lineno, loop.col_offset)  # type: ignore[attr-defined]
    end = loop.end_lineno  # type: ignore[attr-defined]
    child, cur = node, parents.get(node)
    while cur is not None:
        if cur is not scope:
            decided = _rebound_by_structure(cur, child, name, index)
            if decided is not False:
                return decided
        pos = index.position(child)
        hit = None if pos is None else index.assigned_before(pos[0], pos[1], name)
        if hit is not None and (before or pos[0][hit[1]].lineno > end):  # type: ignore[index]
            return _IN_SCOPE_BLOCK if cur is scope and not before else True
        if cur is scope:
            break
        child, cur = cur, parents.get(cur)
    if before and not _loop_repeats(loop, scope, parents):
        return True
    return None


def _local_to(func: ast.AST, name: str, index: TreeIndex) -> bool | None:
    """True when ``name`` is a parameter or a local of the nested function ``func``."""
    a = func.args  # type: ignore[attr-defined]
    if name in {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}:
        return True
    if isinstance(func, ast.Lambda):
        return None
    key = (id(func), name)
    local = index.memo.get(key)
    if local is None:
        local = index.memo[key] = any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            for n in walk_scope(func)
        )
    return True if local else None


def _loop_repeats(loop: ast.AST, scope: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    cur = parents.get(loop)
    while cur is not None and cur is not scope:
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While, *_COMPS)):
            return True
        cur = parents.get(cur)
    return False
