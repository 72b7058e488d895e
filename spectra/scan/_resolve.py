"""Which names in a module are eigensolvers: imports, aliases and ``from ... import *``."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..core.domain import EIGENSOLVER_CALLS

#: The solvers ``spectra scan`` looks for: qualified name -> (kind, library) (the core's table).
SOLVERS: dict[str, tuple[str, str]] = EIGENSOLVER_CALLS

#: Modules whose star import brings solver names into scope.
_STAR_MODULES = {"numpy.linalg", "scipy.linalg", "torch.linalg", "torch"}


@dataclass
class Names:
    """Local name -> qualified dotted name, for imports and simple aliases of a module."""

    bound: dict[str, str]
    star: list[str]

    def qualify(self, node: ast.AST) -> str | None:
        """The dotted name an expression refers to (``np.linalg.norm`` -> ``numpy.linalg.norm``)."""
        if isinstance(node, ast.Name):
            if node.id in self.bound:
                return self.bound[node.id]
            for module in self.star:
                if f"{module}.{node.id}" in SOLVERS:
                    return f"{module}.{node.id}"
            return None
        if isinstance(node, ast.Attribute):
            base = self.qualify(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def solver(self, node: ast.AST) -> str | None:
        """The qualified solver name ``node`` refers to, or None."""
        name = self.qualify(node)
        return name if name in SOLVERS else None

    def spectra_name(self) -> str | None:
        """The local name under which ``spectra`` itself is imported, if any."""
        for local, qual in self.bound.items():
            if qual == "spectra":
                return local
        return None


def collect_names(tree: ast.AST) -> Names:
    """Imports anywhere in ``tree`` and ``name = <solver or module>`` aliases.

    Scoping is flattened (an import inside a function counts everywhere): a scanner that
    misses ``import numpy as np`` inside ``main()`` would miss the loops in it.
    """
    names = Names({}, [])
    assigns: list[tuple[str, ast.AST]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names.bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names.bound[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name == "*":
                    if node.module in _STAR_MODULES:
                        names.star.append(node.module)
                    continue
                names.bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, (ast.Name, ast.Attribute))
        ):
            assigns.append((node.targets[0].id, node.value))
    # `f = <solver>` and `LA = np.linalg` aliases: resolve after every import is known
    for local, value in assigns:
        qual = names.qualify(value)
        if qual is not None and local not in names.bound:
            names.bound[local] = qual
    return names
