"""The package's shape (issues 13 and 24), as docs/ARCHITECTURE.md draws it.

- Layers, lowest first (:data:`LAYERS`): a module imports only from its own layer or
  lower ones, and an engine folder never imports another engine.
- No import cycle among sqlanon's modules.
- No import of sqlanon's own modules inside a function (a lazy import hides the graph).
- The pure core imports no database driver.
- Modules of at most :data:`MAX_MODULE_LINES` lines; at most :data:`MAX_LONG_FUNCTIONS`
  functions over :data:`LONG_FUNCTION` lines.

Every ``import`` / ``from ... import`` of a ``sqlanon`` module counts, typing-only ones
included. ``from sqlanon import x`` is an edge to ``sqlanon.x`` when that is a module;
the implicit import of a package's ``__init__`` is not counted.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import sqlanon

ROOT = Path(__file__).resolve().parents[1] / "sqlanon"

#: Lowest first. A name is a module or a package (every module under it).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ground", ("sqlanon.errors", "sqlanon.version", "sqlanon.session", "sqlanon.sqltext")),
    (
        "core",
        ("sqlanon.models", "sqlanon.attacker", "sqlanon.hierarchy", "sqlanon.metrics"),
    ),
    ("rewriter", ("sqlanon.rewriter",)),
    ("state", ("sqlanon.state",)),
    ("release", ("sqlanon.release",)),
    ("answers", ("sqlanon.intervals",)),
    ("engines", ("sqlanon.duckdb", "sqlanon.postgres", "sqlanon.spark")),
    (
        "edges",
        (
            "sqlanon.api",
            "sqlanon.cli",
            "sqlanon.connect",
            "sqlanon.demo",
            "sqlanon.display",
            "sqlanon.report",
        ),
    ),
)
ENGINES = ("sqlanon.duckdb", "sqlanon.postgres", "sqlanon.spark")
PURE = ("sqlanon.models", "sqlanon.hierarchy", "sqlanon.metrics", "sqlanon.attacker")
DRIVERS = ("duckdb", "psycopg", "plpy", "pyspark")

MAX_MODULE_LINES = 600
LONG_FUNCTION = 80
MAX_LONG_FUNCTIONS = 3


def modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def under(name: str, prefixes: tuple[str, ...]) -> bool:
    """Whether module ``name`` is one of ``prefixes`` or inside one of them."""
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def layer_of(name: str) -> int:
    if name == "sqlanon":  # the package's __init__: the public API, on top
        return len(LAYERS) - 1
    found = [i for i, (_, members) in enumerate(LAYERS) if under(name, members)]
    assert len(found) == 1, f"{name} is in no layer (or in several): add it to LAYERS"
    return found[0]


def _edges_of(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> tuple[set, set]:
    package = name if is_package else name.rpartition(".")[0]
    ours: set[str] = set()
    others: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                (ours if alias.name in known else others).add(
                    alias.name if alias.name in known else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
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


def imports(path: Path, name: str, known: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(sqlanon modules imported, other top-level packages imported) by one module."""
    tree = ast.parse(path.read_text())
    return _edges_of(tree, name, path.name == "__init__.py", set(known))


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


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Every import from a lower layer to a higher one, and between two engines."""
    found = []
    for name, targets in sorted(edges.items()):
        for target in sorted(targets):
            if layer_of(target) > layer_of(name):
                found.append(f"{name} ({LAYERS[layer_of(name)][0]}) -> {target}")
            engines = {e for e in ENGINES if under(name, (e,)) or under(target, (e,))}
            if len(engines) == 2:
                found.append(f"{name} -> {target} (one engine imports another)")
    return found


def imports_in_functions(source: str) -> list[str]:
    """``line: module`` of every import of a sqlanon module inside a function."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and (
                inner.level or (inner.module or "").startswith("sqlanon")
            ):
                found.append(f"{inner.lineno}: {inner.module}")
            elif isinstance(inner, ast.Import):
                found += [
                    f"{inner.lineno}: {a.name}" for a in inner.names if a.name.startswith("sqlanon")
                ]
    return sorted(set(found))


def long_functions(source: str) -> list[tuple[str, int]]:
    """(name, lines) of every function over :data:`LONG_FUNCTION` lines, docstring in."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > LONG_FUNCTION
    ]


def test_every_module_is_in_one_layer() -> None:
    for name in modules():
        layer_of(name)


def test_no_import_runs_up_the_layers_or_across_engines() -> None:
    edges, _ = graph()
    assert upward(edges) == []


def test_the_layer_check_finds_an_arrow_up_and_one_across() -> None:
    assert upward({"sqlanon.state.catalog": {"sqlanon.release.plan"}}) == [
        "sqlanon.state.catalog (state) -> sqlanon.release.plan"
    ]
    assert upward({"sqlanon.release.plan": {"sqlanon.state.catalog"}}) == []
    assert upward({"sqlanon.spark.attach": {"sqlanon.duckdb.session"}}) == [
        "sqlanon.spark.attach -> sqlanon.duckdb.session (one engine imports another)"
    ]


def test_no_import_cycle() -> None:
    edges, _ = graph()
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_imports_sqlanon_inside_a_function() -> None:
    found = {
        name: lazy
        for name, path in modules().items()
        if (lazy := imports_in_functions(path.read_text()))
    }
    assert found == {}


def test_the_graph_sees_lazy_relative_and_package_imports() -> None:
    source = textwrap.dedent(
        """
        from sqlanon.state import catalog
        from . import plan

        def f():
            from sqlanon.release import ke
            import sqlanon.models.cells
        """
    )
    known = {"sqlanon.state.catalog", "sqlanon.release.ke", "sqlanon.release.plan"}
    known |= {"sqlanon.models.cells", "sqlanon.release.lhd"}
    ours, _ = _edges_of(ast.parse(source), "sqlanon.release.lhd", False, known)
    assert ours == known - {"sqlanon.release.lhd"}
    assert imports_in_functions(source) == ["6: sqlanon.release", "7: sqlanon.models.cells"]


def test_the_pure_core_imports_no_database_driver() -> None:
    edges, externals = graph()
    for name, used in externals.items():
        if under(name, PURE):
            assert not used & set(DRIVERS), (name, used & set(DRIVERS))
            assert all(under(m, PURE) or m == "sqlanon.errors" for m in edges[name]), (
                name,
                edges[name],
            )


def test_modules_stay_small() -> None:
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert {n: s for n, s in sizes.items() if s > MAX_MODULE_LINES} == {}


def test_few_functions_are_longer_than_a_screen() -> None:
    long = {
        f"{name}.{fn}": lines
        for name, path in modules().items()
        for fn, lines in long_functions(path.read_text())
    }
    assert len(long) <= MAX_LONG_FUNCTIONS, long


def test_no_module_shares_a_name_with_a_public_function() -> None:
    for public in sqlanon.__all__:
        assert f"sqlanon.{public}" not in modules(), public


def test_no_two_modules_share_a_name_unless_one_per_engine() -> None:
    """``session.py`` is the protocol and each engine's implementation of it; every
    other name says what its module holds, once."""
    seen: dict[str, list[str]] = {}
    for name in modules():
        if not modules()[name].name == "__init__.py":
            seen.setdefault(name.rpartition(".")[2], []).append(name)
    shared = {stem: names for stem, names in seen.items() if len(names) > 1}
    assert set(shared) <= {"session"}, shared
