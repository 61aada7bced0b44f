#!/usr/bin/env python3
"""Fail on an import cycle between sibling modules or packages of relay_repl, at any depth,
counting EVERY import: module-level, function-level and `if TYPE_CHECKING:` ones.

Why beside import-linter's acyclic_siblings contract: that contract leaves out TYPE_CHECKING
imports (pyproject: exclude_type_checking_imports, right for the layer contracts, where an
annotation is no runtime dependency), so a cycle held together by a function-level import on
one side and a TYPE_CHECKING import on the other (session.py <-> debugger.py, issue 19) passed.
A cycle is a design fault whichever kind of import closes it: the two modules cannot be read,
tested or moved apart.

Siblings as import-linter means them: for each package P, its direct children (modules and
subpackages, a subpackage standing for everything below it); an import from inside one child
into another is an edge between the two. Imports between a package and its own children are
not sibling edges. Prints each cycle as one line, exits 1 if there is any.
Usage: scripts/import_cycles.py [ROOT]   (ROOT holds relay_repl/; default: the repo)
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = "relay_repl"


def modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in (root / PACKAGE).rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        parts = path.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """Every relay_repl module `path` imports, wherever the import statement stands."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join([*pkg, base] if base else pkg)
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t.split(".")[0] == PACKAGE and t != name:
                found.add(t)
    return found


def sibling_edges(graph: dict[str, set[str]]) -> dict[str, dict[str, set[tuple[str, str]]]]:
    """package -> child -> {(other child, witness 'a -> b')}."""
    edges: dict[str, dict[str, set[tuple[str, str]]]] = defaultdict(lambda: defaultdict(set))
    for a, targets in graph.items():
        pa = a.split(".")
        for b in targets:
            pb = b.split(".")
            n = 0
            while n < min(len(pa), len(pb)) and pa[n] == pb[n]:
                n += 1
            if n == len(pa) or n == len(pb) or n == 0:
                continue  # one contains the other (a package and its own child), or not ours
            parent = ".".join(pa[:n])
            edges[parent][".".join(pa[: n + 1])].add((".".join(pb[: n + 1]), f"{a} -> {b}"))
    return edges


def cycles(adj: dict[str, set[tuple[str, str]]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    nodes = set(adj) | {w for vs in adj.values() for w, _ in vs}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(w for w, _ in adj.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(x for x, _ in adj.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return out


def find(root: Path) -> list[str]:
    known = modules(root)
    graph = {name: imports(path, name, known) for name, path in known.items()}
    problems = []
    for parent, adj in sorted(sibling_edges(graph).items()):
        for comp in cycles(adj):
            witnesses = sorted(why for a in comp for b, why in adj.get(a, ()) if b in comp)
            problems.append(f"import cycle under {parent}: {' <-> '.join(comp)} ({'; '.join(witnesses)})")
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    problems = find(root)
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
