"""Fixture queries (tests/rewrite_fixtures/*.sql), run on DuckDB against the truth.

Like sqlglot's optimizer tests, each fixture is executed: the rewritten query runs on the
release, the analyst's query on the private source, and every interval must hold the true
value. The expected output columns are checked exactly.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
import sqlglot
from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter import ReleaseInfo, rewrite
from sqlanon.rewriter.analyze import AggregateItem, analyze
from sqlanon.rewriter.normalize import Plan, normalize
from tests.test_rewrite_ke import check_sound
from tests.test_rewrite_support import answer, catalog_of, fetch, make_release, on_source

FIXTURES = Path(__file__).parent / "rewrite_fixtures"


def load_cases(path: Path) -> list[tuple[list[str], str]]:
    """(expected columns, query) pairs: a ``-- columns:`` line, then SQL up to ``;``."""
    cases = []
    columns: list[str] | None = None
    query: list[str] = []
    for line in path.read_text().splitlines():
        header = re.match(r"--\s*columns:\s*(.*)", line)
        if header:
            columns = [c.strip() for c in header.group(1).split(",")]
            continue
        if line.startswith("--") or not line.strip():
            continue
        query.append(line)
        if line.rstrip().endswith(";"):
            assert columns is not None, f"{path}: query without a columns line"
            cases.append((columns, " ".join(query).rstrip(";")))
            columns, query = None, []
    return cases


CASES = load_cases(FIXTURES / "ke.sql")


@pytest.fixture(scope="module")
def adult() -> Any:
    """A deterministic Adult-like (k,e) release: groups are runs of the sorted loss."""
    rng = np.random.default_rng(7)
    n = 300
    losses = rng.choice(
        [0, 155, 1408, 1485, 1590, 1602, 1719, 1740, 1887, 1902, 1977, 2001, 2258, 2415, 3004],
        size=n,
    )
    educations = ["Bachelors", "Masters", "Doctorate", "HS-grad", "Some-college", None]
    rows = [
        {
            "age": int(rng.integers(17, 80)),
            "sex": str(rng.choice(["Male", "Female"])),
            "education": educations[int(rng.integers(0, len(educations)))],
            "capital_loss": int(v),
        }
        for v in losses
    ]
    order = np.argsort(losses, kind="stable")
    groups = [0] * n
    for rank, i in enumerate(order):
        groups[int(i)] = rank // 7
    con = duckdb.connect()
    info = make_release(
        con,
        "adult_ke",
        {"age": "INTEGER", "sex": "VARCHAR", "education": "VARCHAR"},
        ("capital_loss", "INTEGER"),
        rows,
        groups,
    )
    return con, info


@pytest.mark.parametrize(("columns", "sql"), CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_fixture(adult: Any, columns: list[str], sql: str) -> None:
    con, info = adult
    catalog = catalog_of(info)
    out = answer(con, sql, catalog)
    names = list(con.execute(rewrite(sql, catalog)).description or [])
    assert [d[0] for d in names] == columns
    try:
        analyze(sql, catalog)
    except UnsupportedQueryError:  # the general front end: checked on its plan
        check_general(con, sql, catalog, info, out)
        return
    truth = fetch(con, on_source(sql, info))
    aggs = {
        item.name: item.func
        for item in analyze(sql, catalog).items
        if isinstance(item, AggregateItem)
    }
    check_sound(out, truth, sql, aggs)
    if " ORDER BY " in sql and " AND capital_loss" not in sql:
        keys = [c for c in columns if not any(c.startswith(a) for a in aggs)]
        assert [[r[k] for k in keys] for r in out] == [[r[k] for k in keys] for r in truth]


EPS = 1e-6


def truth_sql(sql: str, info: ReleaseInfo) -> str:
    """The query over the private source: every release name swapped for the source,
    unaliased aggregates named as the rewriter names them, ORDER BY / LIMIT / OFFSET
    dropped (the groups are compared by key, the order and the count separately)."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    for key in ("order", "limit", "offset"):
        tree.set(key, None)

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and node.name.lower() in (info.family, info.table):
            return exp.table_(f"{info.family}_source", alias=node.alias or None)
        return node

    tree = tree.transform(swap)
    for select in tree.find_all(exp.Select):
        named = []
        for item in select.expressions:
            if isinstance(item, exp.AggFunc):
                arg = item.this
                item = exp.alias_(
                    item, f"{item.key}_{'star' if isinstance(arg, exp.Star) else arg.name}"
                )
            named.append(item)
        select.set("expressions", named)
    return tree.sql("duckdb")


def check_general(con: Any, sql: str, catalog: Any, info: ReleaseInfo, out: list[Any]) -> None:
    """Intervals hold the truth per group key; HAVING maybe/surely; ORDER BY / LIMIT."""
    plan = normalize(sql, catalog)
    first = plan.branches[0]
    keys = [i.name for i in first.items if not i.is_value]
    values = [i.name for i in first.items if i.is_value]
    truth = fetch(con, truth_sql(sql, info))
    out_by = {tuple(r[k] for k in keys): r for r in out}
    truth_by = {tuple(r[k] for k in keys): r for r in truth}
    assert len(truth_by) == len(truth), "fixture keys must identify the groups"
    if plan.limit is None and not plan.offset:
        assert len(out_by) == len(out), "duplicate output groups"
        assert set(truth_by) <= set(out_by), (sql, truth_by.keys(), out_by.keys())
    for key, row in out_by.items():
        true_row = truth_by.get(key)
        if plan.having and row["having_surely"]:
            assert true_row is not None, ("surely passes HAVING, yet does not", sql, key)
        for name in values:
            value = true_row[name] if true_row is not None else None
            low, high = row[f"{name}_low"], row[f"{name}_high"]
            if value is None:
                continue
            assert low is None or float(low) - EPS <= value, (sql, key, name, value, row)
            assert high is None or value <= float(high) + EPS, (sql, key, name, value, row)
    _check_order(con, sql, catalog, plan, out)


def _check_order(con: Any, sql: str, catalog: Any, plan: Plan, out: list[Any]) -> None:
    kinds = {i.name: i.is_value for i in plan.branches[0].items}
    for ordered in plan.order[:1]:  # sorted by its first key (estimate or group column)
        name = f"{ordered.name}_est" if kinds.get(ordered.name) else ordered.name
        seen = [r[name] for r in out if r[name] is not None]
        assert seen == sorted(seen, reverse=ordered.desc), (sql, seen)
    if plan.limit is not None or plan.offset:
        tree = sqlglot.parse_one(sql, read="duckdb")
        tree.set("limit", None)
        tree.set("offset", None)
        total = len(answer(con, tree.sql("duckdb"), catalog))
        expected = max(0, total - (plan.offset or 0))
        if plan.limit is not None:
            expected = min(plan.limit, expected)
        assert len(out) == expected, (sql, len(out), expected)


def test_fixture_files_are_not_empty() -> None:
    assert len(CASES) >= 10
