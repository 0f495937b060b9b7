"""Layers point one way: the import graph of ``src/neural_cost``, built from the source.

The graph has one node per module (a package is its ``__init__.py``) and one edge per
``import``/``from ... import`` of our own code wherever it is written: at the top of a
module, inside a function (a lazy import is still a dependency), or under
``if TYPE_CHECKING:``. A ``TYPE_CHECKING`` import counts like any other unless every name it
binds is used only in annotations (or elsewhere inside ``TYPE_CHECKING`` blocks): with
``from __future__ import annotations`` such a name is never evaluated at run time, so it
documents a type, not a dependency. A ``TYPE_CHECKING`` import whose name is used in code
(``cast(X, ...)``, ``isinstance``, a base class) counts.

Importing ``a.b.c`` also runs ``a/__init__.py`` and ``a/b/__init__.py``; those implicit
parent imports are not edges (every module would then depend on the root, which imports
everything), only the module named is.

Who may import whom follows ARCHITECTURE.md ("Layers and who may import whom"), with these
decisions where it is silent:

- ``report`` may also import ``hardware`` and ``measure``: a report holds a HardwareSpec and a
  Measurement, and ``report/load.py`` rebuilds them from JSON. It may not import ``costs``
  (rendering never recounts) nor anything above it.
- ``adapters`` import ``core``, ``hardware`` and ``measure`` and never ``costs``: they build
  records; costs are computed from those records by ``costs`` (the lowering tables register
  kinds through ``core``).
- ``examples`` (the demo workloads ``neural-cost example`` runs) sit just above ``core``.
- the root ``neural_cost/__init__.py`` and ``cli`` may import everything.
- ``_version`` (the version string alone) imports nothing and any layer may read it, so that
  provenance needs no import of the root.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "neural_cost"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE
MAX_LINES = 450

#: layer → the layers it may import (its own layer always allowed).
ALLOWED: dict[str, frozenset[str]] = {
    "_version": frozenset(),
    "core": frozenset(),
    "costs": frozenset({"core"}),
    "hardware": frozenset({"core"}),
    "measure": frozenset({"core"}),
    "examples": frozenset({"core"}),
    "analysis": frozenset({"core", "costs", "hardware", "measure"}),
    "report": frozenset({"core", "analysis", "hardware", "measure"}),
    "adapters": frozenset({"core", "hardware", "measure"}),
    "cli": frozenset({"core", "costs", "hardware", "measure", "examples", "analysis", "report", "adapters", "root"}),
    "root": frozenset({"core", "costs", "hardware", "measure", "examples", "analysis", "report", "adapters", "cli"}),
}

#: Upward edges in files other helpers are changing under issue 11, as "src → dst"; the lead
#: empties this list once they land. An entry that no longer occurs fails the test too, so the
#: list cannot go stale.
KNOWN_VIOLATIONS: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    how: str  # "import", "lazy import" or "TYPE_CHECKING import"

    def __str__(self) -> str:
        return f"{self.source} → {self.target} ({self.how}, {_path_of(self.source)}:{self.line})"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _path_of(module: str) -> str:
    relative = Path(*module.split("."))
    package = SRC.parent / relative / "__init__.py"
    return str((package if package.exists() else (SRC.parent / relative).with_suffix(".py")).relative_to(SRC.parent))


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _type_checking_blocks(tree: ast.Module) -> list[ast.stmt]:
    """The statements under ``if TYPE_CHECKING:`` (not its ``else:``, which runs)."""
    return [
        stmt
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _is_type_checking(node.test)
        for stmt in node.body
    ]


def _annotation_nodes(tree: ast.Module) -> set[int]:
    """ids of every node inside an annotation or a TYPE_CHECKING block: typing-only positions."""
    roots: list[ast.AST] = list(_type_checking_blocks(tree))
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(inner) for root in roots for inner in ast.walk(root)}


def _runtime_names(tree: ast.Module) -> set[str]:
    """Names read anywhere outside annotations and TYPE_CHECKING blocks."""
    typing_only = _annotation_nodes(tree)
    names = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            base: ast.expr = node
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name):
                names.add(base.id)
    return names


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] == PACKAGE:
                yield alias.name
        return
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        origin = ".".join(base + ([node.module] if node.module else []))
    else:
        origin = node.module or ""
    if origin.split(".")[0] != PACKAGE:
        return
    for alias in node.names:
        submodule = f"{origin}.{alias.name}"
        yield submodule if submodule in known else origin


def _bound_names(node: ast.Import | ast.ImportFrom) -> set[str]:
    return {alias.asname or alias.name.split(".")[0] for alias in node.names}


def _edges() -> list[Edge]:
    modules = _modules()
    known = set(modules)
    edges = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        type_checking = {id(n) for block in _type_checking_blocks(tree) for n in ast.walk(block)}
        top_level = {id(n) for n in tree.body}
        runtime_names = _runtime_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if id(node) in type_checking:
                if not _bound_names(node) & runtime_names:
                    continue  # annotations only: a type named, never a module run
                how = "TYPE_CHECKING import"
            else:
                how = "import" if id(node) in top_level else "lazy import"
            for target in _targets(module, path.name == "__init__.py", node, known):
                assert target in known, f"{path}:{node.lineno} imports {target}, which is not a module of ours"
                if target != module:
                    edges.append(Edge(module, target, node.lineno, how))
    return list(dict.fromkeys(edges))  # one edge per statement and target, in source order


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "root"


def _upward(edges: list[Edge]) -> list[Edge]:
    found = []
    for edge in edges:
        source, target = _layer(edge.source), _layer(edge.target)
        if source != target and target != "_version" and target not in ALLOWED[source]:
            found.append(edge)
    return found


def _cycles(edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def test_every_layer_is_mapped() -> None:
    layers = {_layer(module) for module in _modules()}
    assert layers == set(ALLOWED), f"map every layer in ALLOWED: {sorted(layers ^ set(ALLOWED))}"


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    # Guards the builder itself, so that an empty graph cannot pass: the root imports every
    # layer at its top, and the CLI imports adapters inside functions.
    edges = _edges()
    assert {_layer(e.target) for e in edges if e.source == PACKAGE} >= {"analysis", "core", "costs", "report"}
    assert any(e.how == "lazy import" and _layer(e.source) == "cli" for e in edges)
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from x import A, B\ndef f(a: A) -> B: ..."
    )
    assert "A" not in _runtime_names(tree) and "B" not in _runtime_names(tree)
    tree = ast.parse("from typing import TYPE_CHECKING, cast\nif TYPE_CHECKING:\n    from x import A\ncast(A, 1)")
    assert "A" in _runtime_names(tree)
    # and the checks flag what they are for: an upward lazy import, a two-module cycle.
    upward = Edge("neural_cost.analysis.gap", "neural_cost.report.text", 1, "lazy import")
    assert _upward([upward, Edge("neural_cost.report.text", "neural_cost.analysis.gap", 1, "import")]) == [upward]
    back = Edge("neural_cost.core.units", "neural_cost.core.dtypes", 1, "import")
    assert _cycles([back, Edge("neural_cost.core.dtypes", "neural_cost.core.units", 2, "lazy import")]) == [
        ["neural_cost.core.dtypes", "neural_cost.core.units"]
    ]


def test_no_import_points_up_a_layer() -> None:
    upward = {str(edge).split(" (")[0]: edge for edge in _upward(_edges())}
    unexpected = sorted(str(edge) for key, edge in upward.items() if key not in KNOWN_VIOLATIONS)
    stale = sorted(KNOWN_VIOLATIONS - set(upward))
    assert not unexpected, "imports that point up a layer:\n" + "\n".join(unexpected)
    assert not stale, "known violations that no longer occur (remove them from KNOWN_VIOLATIONS):\n" + "\n".join(stale)


def test_no_import_cycle() -> None:
    edges = _edges()
    cycles = _cycles(edges)
    described = []
    for component in cycles:
        members = set(component)
        inside = sorted(str(e) for e in edges if e.source in members and e.target in members)
        described.append(" ↔ ".join(component) + "\n    " + "\n    ".join(inside))
    assert not cycles, "import cycles:\n" + "\n".join(described)


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC.parent)))
def test_no_module_over_450_lines(path: Path) -> None:
    name = str(path.relative_to(SRC.parent))
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{name} is {lines} lines; split it (modules aim at ~400, never over {MAX_LINES})"
