"""The package's shape (issue 13): no import cycle among sqlanon's modules, and a pure
core that imports no database driver.

Every ``import`` / ``from ... import`` of a ``sqlanon`` module counts, at the top of a
module or inside a function (a lazy import is still a dependency), typing-only ones
included. ``from sqlanon import x`` is an edge to ``sqlanon.x`` when that is a module;
the implicit import of a package's ``__init__`` is not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sqlanon

ROOT = Path(__file__).resolve().parents[1] / "sqlanon"
PURE = ("sqlanon.models", "sqlanon.hierarchy", "sqlanon.metrics", "sqlanon.attacker")
DRIVERS = ("duckdb", "psycopg", "plpy")


def modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(path: Path, name: str, known: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(sqlanon modules imported, other top-level packages imported) by one module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    ours: set[str] = set()
    others: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                (ours if alias.name in known else others).add(alias.name.split(".")[0])
                if alias.name in known:
                    ours.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            if not base.startswith("sqlanon"):
                others.add(base.split(".")[0])
                continue
            for alias in node.names:
                target = f"{base}.{alias.name}"
                ours.add(target if target in known else base)
    ours.discard("sqlanon")
    ours.discard(name)
    return {m for m in ours if m in known}, others


def graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    known = modules()
    edges, externals = {}, {}
    for name, path in known.items():
        edges[name], externals[name] = imports(path, name, known)
    return edges, externals


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle() -> None:
    edges, _ = graph()
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_sees_lazy_and_package_imports() -> None:
    edges, _ = graph()
    assert "sqlanon.release.ke" in edges["sqlanon.api"]  # a top-level `from ... import`
    assert "sqlanon.release.lhd" in edges["sqlanon.api"]  # imported inside a function
    assert "sqlanon.release.ke_engine" in edges["sqlanon.release.ke"]


def test_the_pure_core_imports_no_database_driver() -> None:
    edges, externals = graph()
    for name, used in externals.items():
        if name.startswith(PURE):
            assert not used & set(DRIVERS), (name, used & set(DRIVERS))
            assert all(m.startswith(PURE) or m == "sqlanon.errors" for m in edges[name]), (
                name,
                edges[name],
            )


def test_no_module_shares_a_name_with_a_public_function() -> None:
    for public in sqlanon.__all__:
        assert f"sqlanon.{public}" not in modules(), public
