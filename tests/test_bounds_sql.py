"""The engine path's bounds table, built in SQL from the published runs
(``sqlanon/sql/ke_bounds_from_runs.sql``), is the record path's table row for row
(``sqlanon.models.ke_bounds.bounds_columns``), on DuckDB and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.duckdb.session import DuckDBSession
from sqlanon.models.ke_bounds import COLUMNS, bounds_columns
from sqlanon.state.bounds import write_bounds_counts
from sqlanon.state.source import Source, bounds_relation

groups = st.lists(
    st.lists(st.integers(-5, 5) | st.integers(-(10**6), 10**6), min_size=1, max_size=300),
    min_size=1,
    max_size=4,
)


def expected_rows(group_values: list[list[int]]) -> list[tuple[Any, ...]]:
    values = np.array([v for g in group_values for v in g], dtype=np.int64)
    group = np.array([i for i, g in enumerate(group_values) for _ in g], dtype=np.int64)
    columns = bounds_columns(values, group)
    return [tuple(columns[c][i].item() for c in COLUMNS) for i in range(len(columns["group_id"]))]


def entries(group_values: list[list[int]], pieces: int) -> tuple[np.ndarray, ...]:
    """(value, count, group) entries, a (group, value) split over up to ``pieces``."""
    rows = [(g, v, i % pieces) for g, vs in enumerate(group_values) for i, v in enumerate(vs)]
    unique, counts = np.unique(np.array(rows, dtype=np.int64), axis=0, return_counts=True)
    return unique[:, 1].astype(np.float64), counts.astype(np.float64), unique[:, 0]


def build(session: Any, group_values: list[list[int]], pieces: int) -> list[tuple[Any, ...]]:
    bounds = bounds_relation(session, "fam_v1")
    session.execute(f"CREATE SCHEMA IF NOT EXISTS {bounds.split('.')[0]}")
    session.execute(f"DROP TABLE IF EXISTS {bounds}")
    src = Source("main", "t", {"s": "BIGINT"})
    values, counts, group = entries(group_values, pieces)
    write_bounds_counts(session, src, "s", "fam_v1", values, counts, group)
    order = "descending, group_id, block, lo_rank"
    return [
        tuple(r)
        for r in session.query(
            f"SELECT {', '.join(COLUMNS)} FROM {bounds} ORDER BY {order}"  # noqa: S608
        )
    ]


@settings(max_examples=60, deadline=None)
@given(groups, st.integers(1, 3))
def test_duckdb_rows_match_the_record_path(group_values: list[list[int]], pieces: int) -> None:
    session = DuckDBSession(duckdb.connect())
    assert build(session, group_values, pieces) == expected_rows(group_values)


@pytest.mark.postgres
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(groups, st.integers(1, 3))
def test_postgres_rows_match_the_record_path(
    pg_conn: Any, group_values: list[list[int]], pieces: int
) -> None:
    from sqlanon.postgres.session import PsycopgSession

    session = PsycopgSession(pg_conn)
    got = build(session, group_values, pieces)
    assert got == expected_rows(group_values)
