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

from sqlanon.rewriter import rewrite
from sqlanon.rewriter.analyze import AggregateItem, analyze
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


def test_fixture_files_are_not_empty() -> None:
    assert len(CASES) >= 10
