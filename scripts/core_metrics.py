"""Shape metrics of the source: import circles between the core's files, the widest
signatures and the longest functions (issue 23).

Run ``.venv/bin/python scripts/core_metrics.py [--json]``; ``tests/test_tooling.py`` uses
:func:`file_graph` and :func:`circles` to refuse circles not marked deliberate.

An import edge counts wherever the import stands (inside a function too). Importing a
submodule ``pkg.mod`` also runs ``pkg/__init__``: that counts as an edge to ``pkg`` as
well. Imports under ``if TYPE_CHECKING:`` (annotations only, never run) do not count. An import
carrying the comment ``# circle: deliberate`` (with the reason) is left out of the circle
search, e3nn-style.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "spectra"
CORE = PACKAGE / "core"
DELIBERATE = "# circle: deliberate"
LONG_FUNCTION = 80


def module_name(path: Path, base: Path = ROOT) -> str:
    parts = path.relative_to(base).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(path: Path, base: Path = ROOT) -> str:
    parts = path.relative_to(base).with_suffix("").parts
    return ".".join(parts[:-1])


def _imported(path: Path, base: Path = ROOT) -> list[tuple[int, str, list[str]]]:
    """``(line, absolute module, names)`` of every import in ``path`` not marked deliberate."""
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text, str(path))
    package = _package(path, base)
    typing_only = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for stmt in node.body
        for child in ast.walk(stmt)
    }
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in typing_only:
            continue
        if any(DELIBERATE in s for s in lines[node.lineno - 1 : node.end_lineno or node.lineno]):
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                module = node.module or ""
            out.append((node.lineno, module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
    return out


def file_graph(root: Path = CORE, base: Path = ROOT) -> dict[str, set[str]]:
    """module -> the modules under the package ``root`` it imports (the packages above a
    submodule included); module names are relative to ``base``, the import root."""
    paths = sorted(root.rglob("*.py"))
    modules = {module_name(p, base) for p in paths}
    prefix = module_name(root / "__init__.py", base)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for path in paths:
        me = module_name(path, base)
        for _, module, names in _imported(path, base):
            targets = [module, *(f"{module}.{n}" for n in names)]
            for target in targets:
                while target.startswith(prefix) and target not in modules:
                    target = target.rpartition(".")[0]
                if not target.startswith(prefix):
                    continue
                # importing a.b.c runs a/__init__ and a/b/__init__ too
                chain = target
                while chain.startswith(prefix) and len(chain) >= len(prefix):
                    if chain in modules and chain != me and not me.startswith(chain + "."):
                        graph[me].add(chain)
                    if chain == prefix:
                        break
                    chain = chain.rpartition(".")[0]
    # the core's own package __init__ imports everything: leave the root out of the search
    graph.pop(prefix, None)
    for targets in graph.values():
        targets.discard(prefix)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def cycle_edges(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The import edges that lie on some circle (both ends in one component)."""
    comp = {m: i for i, c in enumerate(circles(graph)) for m in c}
    return sorted(
        (a, b) for a, ts in graph.items() for b in ts if a in comp and comp.get(b) == comp[a]
    )


def functions(root: Path = PACKAGE) -> list[tuple[str, int, int]]:
    """``(where, parameters, lines)`` of every function under ``root``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
                count -= bool(args.args and args.args[0].arg in ("self", "cls"))
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                where = f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
                out.append((where, count, lines))
    return out


def metrics() -> dict[str, object]:
    graph = file_graph()
    comps = circles(graph)
    funcs = functions()
    core = [f for f in funcs if f[0].startswith("spectra/core")]
    widest = sorted(funcs, key=lambda f: -f[1])[:8]
    longest = [f for f in funcs if f[2] > LONG_FUNCTION]
    return {
        "core_modules": len(graph),
        "core_import_edges": sum(len(t) for t in graph.values()),
        "core_circles": len(comps),
        "core_modules_in_circles": sum(len(c) for c in comps),
        "core_circle_edges": len(cycle_edges(graph)),
        "circles": comps,
        "widest_signatures": [f"{w} ({n} parameters)" for w, n, _ in widest],
        "core_widest": max((n for _, n, _ in core), default=0),
        "functions_over_80_lines": len(longest),
        "core_functions_over_80_lines": sum(f[0].startswith("spectra/core") for f in longest),
        "long_functions": [f"{w} ({n} lines)" for w, _, n in longest],
    }


def main(argv: list[str]) -> None:
    m = metrics()
    if "--json" in argv:
        print(json.dumps(m, indent=1))
        return
    for key, value in m.items():
        if isinstance(value, list):
            print(f"{key}:")
            for item in value:
                print(f"  {item}")
        else:
            print(f"{key}: {value}")


if __name__ == "__main__":
    main(sys.argv[1:])
