"""Find eigensolver calls that run once per item of a batch (loops, comprehensions, map)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from ..core.domain import TORCH_EIGH
from ._flow import bindings, carried, closure, index_names, loads, target_names
from ._resolve import SOLVERS, Names, collect_names

#: Codes and what they mean (``--select``/``--ignore`` take these or their prefixes).
CODES = {
    "SPX001": "eigensolver called once per iteration of a for/while loop",
    "SPX002": "eigensolver called once per element of a comprehension",
    "SPX003": "eigensolver mapped over a batch with map()",
    "SPX010": "torch.symeig: removed from PyTorch",
}

_MAP_ATTRS = {"map", "imap", "imap_unordered"}
_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_COMP_WORD = {
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.GeneratorExp: "generator expression",
    ast.DictComp: "dict comprehension",
}


@dataclass
class Context:
    """A construct that repeats a call: a loop, a comprehension or a mapped lambda."""

    kind: str  # "for", "while", "comp", "map"
    node: Any
    targets: set[str]
    tainted: set[str]
    blocked: set[str] = field(default_factory=set)

    def describe(self) -> str:
        names = ", ".join(f"`{n}`" for n in sorted(self.targets)) or "its items"
        if self.kind == "for":
            return f"iteration of the for loop over {names} (line {self.node.lineno})"
        if self.kind == "while":
            return f"iteration of the while loop over {names} (line {self.node.lineno})"
        if self.kind == "comp":
            return f"element of the {_COMP_WORD[type(self.node)]}"
        return "item of map()"


@dataclass
class Finding:
    """One report: where, which code, what to write instead, and whether ``--fix`` can."""

    path: str
    line: int
    col: int
    code: str
    message: str
    call: str
    replacement: str
    solver: str
    fixable: bool = False
    fix_blocker: str | None = None
    cell: int | None = None
    end_line: int = 0
    end_col: int = 0
    node: Any = field(default=None, repr=False, compare=False)
    context: Context | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``spectra scan --json``)."""
        keys = ("path", "cell", "line", "col", "end_line", "end_col", "code", "message")
        out: dict[str, Any] = {k: getattr(self, k) for k in keys}
        out.update(
            call=self.call,
            solver=self.solver,
            replacement=self.replacement,
            fixable=self.fixable,
            fix_blocker=self.fix_blocker,
        )
        return out


def char_col(lines: list[str], lineno: int, byte_col: int) -> int:
    """1-based character column from ast's 0-based UTF-8 byte offset."""
    line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    return len(line.encode()[:byte_col].decode(errors="replace")) + 1


def solver_kind(call: ast.Call, solver: str) -> str:
    """``eigh`` or ``eigvalsh`` as the call uses it (``eigvals_only=True``, ``symeig``)."""
    kind = SOLVERS[solver][0]
    for kw in call.keywords:
        if kw.arg in ("eigvals_only", "eigenvectors") and isinstance(kw.value, ast.Constant):
            flag = bool(kw.value.value)
            if kw.arg == "eigvals_only":
                return "eigvalsh" if flag else "eigh"
            return "eigh" if flag else "eigvalsh"
    if kind == "symeig":
        return "eigh" if len(call.args) > 1 and _is_true(call.args[1]) else "eigvalsh"
    return kind


def _is_true(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and bool(node.value)


def matrix_args(call: ast.Call, solver: str) -> list[ast.expr] | None:
    """``[a]`` or ``[a, b]`` (scipy's generalized form), or None when not plain."""
    args = [a for a in call.args if not isinstance(a, ast.Starred)]
    if len(args) != len(call.args) or not args:
        return None
    if solver.startswith("scipy"):
        b = next((kw.value for kw in call.keywords if kw.arg == "b"), None)
        if len(args) > 2 or (b is not None and len(args) > 1):
            return None
        return [*args, b] if b is not None else args
    return args[:1]


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Visitor:
    def __init__(self, path: str, names: Names, lines: list[str]) -> None:
        self.path, self.names, self.lines = path, names, lines
        self.found: list[Finding] = []

    # -- traversal ---------------------------------------------------------------------
    def visit(self, node: ast.AST, stack: list[Context]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
                if sub is not None:
                    self.visit(sub, stack)
            for stmt in node.body:
                self.visit(stmt, [])
        elif isinstance(node, ast.Lambda):
            self.visit(node.body, [])
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.visit(node.iter, stack)
            # `for obj.x in xs` / `for d[k] in xs`: what changes per iteration is `obj` / `d`
            bases = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            ctx = self._loop(node, target_names(node.target) | bases)
            for stmt in node.body:
                self.visit(stmt, [*stack, ctx])
            for stmt in node.orelse:
                self.visit(stmt, stack)
        elif isinstance(node, ast.While):
            ctx = self._loop(node, index_names(node.body))
            self.visit(node.test, [*stack, ctx])
            for stmt in node.body:
                self.visit(stmt, [*stack, ctx])
            for stmt in node.orelse:
                self.visit(stmt, stack)
        elif isinstance(node, _COMPS):
            self._comprehension(node, stack)
        elif isinstance(node, ast.Call):
            self._call(node, stack)
        else:
            for child in ast.iter_child_nodes(node):
                self.visit(child, stack)

    def _loop(self, node: Any, targets: set[str]) -> Context:
        binds = bindings(node.body)
        kind = "for" if isinstance(node, (ast.For, ast.AsyncFor)) else "while"
        carry = carried(node.body, targets if kind == "for" else set()) - targets
        if kind == "while":
            carry -= loads(node.test) & targets
        return Context(kind, node, targets, closure(targets, binds), closure(carry, binds))

    def _comprehension(self, node: Any, stack: list[Context]) -> None:
        targets: set[str] = set()
        for gen in node.generators:
            targets |= target_names(gen.target)
        ctx = Context("comp", node, targets, set(targets))
        inner = [*stack, ctx]
        for i, gen in enumerate(node.generators):
            self.visit(gen.iter, inner if i else stack)
            for cond in gen.ifs:
                self.visit(cond, inner)
        for elt in [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]:
            self.visit(elt, inner)

    def _call(self, node: ast.Call, stack: list[Context]) -> None:
        func = node.func
        is_map = len(node.args) >= 2 and (
            (isinstance(func, ast.Name) and func.id == "map" and "map" not in self.names.bound)
            or (isinstance(func, ast.Attribute) and func.attr in _MAP_ATTRS)
        )
        rest: list[ast.AST] = [func, *node.args, *(kw.value for kw in node.keywords)]
        if is_map:
            fn = node.args[0]
            solver = self.names.solver(fn)
            if solver is not None:
                self._mapped(node, fn, solver)
                rest = list(node.args[1:])
            elif isinstance(fn, ast.Lambda):
                params = {a.arg for a in fn.args.args}
                ctx = Context("map", node, params, set(params))
                self.visit(fn.body, [*stack, ctx])
                rest = [func, *node.args[1:]]
        solver = self.names.solver(func)
        if solver is not None:
            self._solver_call(node, solver, stack)
        for child in rest:
            self.visit(child, stack)

    # -- findings ----------------------------------------------------------------------
    def _add(self, node: ast.AST, code: str, message: str, call: str, repl: str, solver: str,
             ctx: Context | None) -> None:  # fmt: skip
        self.found.append(
            Finding(
                self.path,
                node.lineno,  # type: ignore[attr-defined]
                char_col(self.lines, node.lineno, node.col_offset),  # type: ignore[attr-defined]
                code,
                message,
                call,
                repl,
                solver,
                end_line=node.end_lineno or node.lineno,  # type: ignore[attr-defined]
                end_col=char_col(self.lines, node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
                node=node,
                context=ctx,
            )
        )

    def _solver_call(self, node: ast.Call, solver: str, stack: list[Context]) -> None:
        text = ast.unparse(node)
        if SOLVERS[solver][0] == "symeig":
            self._add(
                node,
                "SPX010",
                f"`{_short(text)}`: torch.symeig was deprecated in PyTorch 1.9 and is removed; "
                f"use spectra.eigh(A) (or {TORCH_EIGH}(A, UPLO='U'), eigenvalues ascending)",
                text,
                "spectra.eigh(A)",
                solver,
                None,
            )
        deps = set().union(*(loads(a) for a in node.args), *(loads(k.value) for k in node.keywords))
        for ctx in reversed(stack):
            if deps & ctx.blocked:
                continue  # a recurrence (each step needs the last): not a batch
            if deps & ctx.tainted:
                code = {"for": "SPX001", "while": "SPX001", "comp": "SPX002", "map": "SPX003"}
                outer = set().union(*(c.targets for c in stack if c is not ctx))
                repl, ragged = suggest(node, solver, ctx, outer)
                repl = with_element_part(repl, node, solver, ctx)
                tail = " (a list of matrices, sizes may differ; lists come back)" if ragged else ""
                message = (
                    f"`{_short(text)}` runs once per {ctx.describe()}; "
                    f"batch it: `{_short(repl, 90)}`{tail}"
                )
                self._add(node, code[ctx.kind], message, text, repl, solver, ctx)
                return

    def _mapped(self, node: ast.Call, fn: ast.AST, solver: str) -> None:
        kind = SOLVERS[solver][0]
        kind = "eigh" if kind == "symeig" else kind
        iters = [f"list({ast.unparse(a)})" for a in node.args[1:]]
        if isinstance(node.func, ast.Attribute) and node.func.attr == "starmap":
            iters = ["[...]"]
        repl = f"spectra.{kind}({', '.join(iters)})"
        message = (
            f"`{_short(ast.unparse(fn))}` is mapped over a batch, one call per item; "
            f"batch it: `{_short(repl, 90)}` (sizes may differ; lists come back)"
        )
        self._add(node, "SPX003", message, ast.unparse(node), repl, solver, None)


def suggest(
    call: ast.Call, solver: str, ctx: Context, outer: set[str] | None = None
) -> tuple[str, bool]:
    """The batched call to write instead, and whether it is the ragged (list) form.

    ``outer``: iteration variables of the enclosing loops (``X[i, j]`` -> ``X``).
    """
    kind = solver_kind(call, solver)
    mats = matrix_args(call, solver) or call.args[:1]
    stacked = [_stacked(m, ctx, outer or set()) for m in mats]
    if all(s is not None for s in stacked):
        return f"spectra.{kind}({', '.join(stacked)})", False  # type: ignore[arg-type]
    return f"spectra.{kind}({', '.join(batched_list(m, ctx) for m in mats)})", True


_RESULT_PARTS = ("eigenvalues", "eigenvectors")


def element_part(call: ast.Call, ctx: Context) -> int | str | None:
    """What a comprehension keeps of each call: ``[eigvalsh(x)[0] ...]`` -> 0,
    ``[eigh(x).eigenvectors ...]`` -> "eigenvectors"; None for the whole result (or when
    the element is not the call indexed by a constant)."""
    elt = getattr(ctx.node, "elt", None) if ctx.kind == "comp" else None
    if isinstance(elt, ast.Subscript) and elt.value is call:
        index = elt.slice
        sign = 1
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
            index, sign = index.operand, -1
        if isinstance(index, ast.Constant) and type(index.value) is int:
            return sign * index.value
    if isinstance(elt, ast.Attribute) and elt.value is call and elt.attr in _RESULT_PARTS:
        return elt.attr
    return None


def with_element_part(repl: str, call: ast.Call, solver: str, ctx: Context) -> str:
    """``repl`` (the batched call) keeping what the comprehension keeps of each result:
    ``[w[0] for w in spectra.eigvalsh(X)]`` for ``[eigvalsh(X[i])[0] ...]``."""
    part = element_part(call, ctx)
    if part is None:
        return repl
    if solver_kind(call, solver) == "eigvalsh":
        return f"[w[{part}] for w in {repl}]" if isinstance(part, int) else repl
    if part in (0, "eigenvalues"):
        return repl.replace("spectra.eigh(", "spectra.eigvalsh(", 1)
    if part in (1, "eigenvectors"):
        return f"{repl}.eigenvectors"
    return repl


def _stacked(expr: ast.AST, ctx: Context, outer: set[str]) -> str | None:
    """``X`` for ``X[i]`` (``X[i, j]``, ``X[i][j]``) indexed by the loops' own variables."""
    names: set[str] = set()
    while isinstance(expr, ast.Subscript):
        index = expr.slice
        if not isinstance(index, (ast.Name, ast.Tuple)):
            return None
        if isinstance(index, ast.Tuple) and not all(isinstance(e, ast.Name) for e in index.elts):
            return None
        names |= target_names(index)
        expr = expr.value
    if not names or not names & ctx.targets or not names <= ctx.targets | outer:
        return None
    if loads(expr) & (ctx.tainted | outer):
        return None
    return ast.unparse(expr)


def batched_list(expr: ast.AST, ctx: Context) -> str:
    """``[expr for target in iterable]``: the items of one argument as a list."""
    node = ctx.node
    if ctx.kind == "for":
        target, source = ast.unparse(node.target), ast.unparse(node.iter)
        if isinstance(expr, ast.Name) and ast.unparse(node.target) == expr.id:
            return f"list({source})"
        return f"[{ast.unparse(expr)} for {target} in {source}]"
    if ctx.kind == "comp":
        gens = node.generators
        lone = len(gens) == 1 and not gens[0].ifs and isinstance(expr, ast.Name)
        if lone and ast.unparse(gens[0].target) == expr.id:  # type: ignore[attr-defined]
            return f"list({ast.unparse(gens[0].iter)})"
        clauses = " ".join(ast.unparse(g).strip() for g in gens)
        return f"[{ast.unparse(expr)} {clauses}]"
    if ctx.kind == "map":
        lam = node.args[0]
        if len(lam.args.args) == len(node.args) - 1 == 1:
            param = lam.args.args[0].arg
            return f"[{ast.unparse(expr)} for {param} in {ast.unparse(node.args[1])}]"
    return "[...]"


def detect(tree: ast.AST, path: str, lines: list[str]) -> list[Finding]:
    """Every finding in a parsed module, in source order."""
    visitor = _Visitor(path, collect_names(tree), lines)
    visitor.visit(tree, [])
    return sorted(visitor.found, key=lambda f: (f.line, f.col, f.code))
