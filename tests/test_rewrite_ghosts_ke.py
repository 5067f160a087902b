"""Interval answers over (k,e) releases with ghosts, on real DuckDB (and PostgreSQL).

A ghost is a deleted record that stays a slot of its group's shuffle (MODELS.md,
"Changing tables"): the release shows it with ``ghost`` true and NULL quasi columns, and
it receives a random value of its group's multiset like every row; the bounds table
counts it. The truth is the query over the real rows only (the private source lacks the
ghosts). Soundness: the truth lies in every interval. Tightness: enumerating every
permutation of each group's values over all its slots (every world consistent with
the release) reaches low and high.
"""

from __future__ import annotations

import random
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.rewriter import rewrite
from sqlanon.rewriter.analyze import AggregateItem, analyze
from tests.test_rewrite_ke import (
    AGGS,
    _all_answers,
    build,
    check_sound,
    check_tight,
    queries,
    releases,
)
from tests.test_rewrite_support import answer, catalog_of, fetch, make_release, on_source


@st.composite
def ghost_releases(
    draw: Any, max_size: int = 30
) -> tuple[list[dict[str, Any]], list[int], list[bool]]:
    rows, groups = draw(releases(max_size=max_size))
    ghosts = draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
    return rows, groups, ghosts


SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(ghost_releases(), queries(), st.integers(0, 3))
def test_intervals_contain_the_truth_over_real_rows(release: Any, query: Any, seed: int) -> None:
    rows, groups, ghosts = release
    sql, aggs = query
    con, info = build(rows, groups, seed, ghosts)
    assert info.ghosts == sum(ghosts)
    out = answer(con, sql, catalog_of(info))
    truth = fetch(con, on_source(sql, info))
    check_sound(out, truth, sql, {n: AGGS[n][0] for n in aggs})


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(ghost_releases(max_size=6), queries())
def test_intervals_are_tight_over_every_ghost_placement(release: Any, query: Any) -> None:
    rows, groups, ghosts = release
    sql, aggs = query
    con, info = build(rows, groups, ghosts=ghosts)
    out = answer(con, sql, catalog_of(info))
    worlds, answers = _all_answers(con, rows, groups, sql, ghosts)
    check_tight(out, worlds, answers, sql, aggs)


# --- hand-made cases ---------------------------------------------------------------------


def test_ghosts_are_not_counted_nor_grouped() -> None:
    # One group {1, 2, 3, 10}: three real rows and one ghost slot.
    rows = [{"a": i, "b": "x", "s": v} for i, v in enumerate([1, 2, 3, 10])]
    con, info = build(rows, [0, 0, 0, 0], ghosts=[False, False, False, True])
    catalog = catalog_of(info)
    out = answer(con, "SELECT COUNT(*) AS n, SUM(s) AS t FROM fam", catalog)
    # 3 real rows out of the 4 values: any 3 of {1, 2, 3, 10}.
    assert (out[0]["n"], out[0]["t_low"], out[0]["t_high"]) == (3, 6, 15)
    assert out[0]["t_est"] == pytest.approx(3 * 16 / 4)
    by_b = answer(con, "SELECT b, COUNT(*) AS n FROM fam GROUP BY b", catalog)
    assert [(r["b"], r["n"]) for r in by_b] == [("x", 3)]  # no NULL group of ghosts
    nulls = answer(con, "SELECT COUNT(*) AS n FROM fam WHERE b IS NULL", catalog)
    assert nulls[0]["n"] == 0
    by_gid = answer(con, "SELECT group_id, MIN(s) AS lo FROM fam GROUP BY group_id", catalog)
    # MIN of 3 of the 4 values: 1 .. 2 (the ghost may hold the 1).
    assert (by_gid[0]["lo_low"], by_gid[0]["lo_high"]) == (1, 2)
    pred = answer(con, "SELECT COUNT(*) AS n FROM fam WHERE s > 2", catalog)
    # 2 of the 4 values exceed 2; 3 real rows: between 1 and 2 of them do.
    assert (pred[0]["n_low"], pred[0]["n_high"]) == (1, 2)


def test_ghost_column_is_not_an_analyst_column() -> None:
    rows = [{"a": i, "b": "x", "s": i} for i in range(4)]
    _, info = build(rows, [0, 0, 0, 0], ghosts=[True, False, False, False])
    from sqlanon.errors import UnsupportedQueryError

    with pytest.raises(UnsupportedQueryError, match="not published"):
        rewrite("SELECT COUNT(*) FROM fam WHERE NOT ghost", catalog_of(info))


def test_release_without_ghosts_reads_no_ghost_column() -> None:
    rows = [{"a": i, "b": "x", "s": i} for i in range(4)]
    _, info = build(rows, [0, 0, 1, 1])
    assert info.ghosts == 0
    assert "ghost" not in rewrite("SELECT COUNT(*), SUM(s) FROM fam", catalog_of(info))


# --- PostgreSQL ----------------------------------------------------------------------------

PG_QUERIES = [
    "SELECT sex, COUNT(*), SUM(loss) AS l, AVG(loss), MIN(loss), MAX(loss) FROM fam "
    "WHERE age BETWEEN 30 AND 50 GROUP BY sex ORDER BY sex",
    "SELECT sex, COUNT(*), COUNT(sex), SUM(loss), AVG(loss), MIN(loss), MAX(loss) FROM fam "
    "GROUP BY sex",
    "SELECT COUNT(*), COUNT(sex), SUM(loss), AVG(loss), MIN(loss), MAX(loss) FROM fam "
    "WHERE loss > 20 AND NOT (age < 25)",
    "SELECT age, COUNT(*), SUM(loss), AVG(loss) FROM fam WHERE (loss < 5 OR loss > 40) "
    "AND sex IN ('M') GROUP BY age ORDER BY age DESC LIMIT 5",
    "SELECT group_id, COUNT(*), SUM(loss), MIN(loss), MAX(loss) FROM fam "
    "WHERE sex IS NULL OR age > 40 GROUP BY group_id",
    "SELECT COUNT(*), SUM(loss), AVG(loss), MIN(loss), MAX(loss) FROM fam",
]


@pytest.mark.postgres
def test_postgres_ghosts_match_duckdb_and_hold_the_truth(pg_conn: Any) -> None:
    from tests.test_rewrite_postgres import _pg_fetch, _same

    rng = random.Random(7)
    rows = [
        {"age": rng.randint(18, 70), "sex": rng.choice("MF"), "loss": rng.randint(-10, 60)}
        for _ in range(120)
    ]
    ghosts = [rng.random() < 0.25 for _ in rows]
    order = sorted(range(len(rows)), key=lambda i: rows[i]["loss"])
    groups = [0] * len(rows)
    for rank, i in enumerate(order):
        groups[i] = rank // 6
    duck = duckdb.connect()
    info = make_release(
        duck, "fam", {"age": "INTEGER", "sex": "VARCHAR"}, ("loss", "INTEGER"), rows, groups,
        ghosts=ghosts,
    )  # fmt: skip
    _copy_to_postgres(duck, pg_conn)
    catalog = catalog_of(info)
    for query in PG_QUERIES:
        on_pg = _pg_fetch(pg_conn, rewrite(query, catalog, "postgres"))
        on_duck = fetch(duck, rewrite(query, catalog, "duckdb"))
        if "ORDER BY" not in query:
            on_pg, on_duck = sorted(on_pg, key=str), sorted(on_duck, key=str)
        assert _same(on_pg, on_duck), (query, on_pg, on_duck)
        import sqlglot

        truth = _pg_fetch(
            pg_conn, sqlglot.transpile(on_source(query, info), read="duckdb", write="postgres")[0]
        )
        aggs = {
            i.name: i.func for i in analyze(query, catalog).items if isinstance(i, AggregateItem)
        }
        check_sound(on_pg, truth, query, aggs)


def _copy_to_postgres(duck: duckdb.DuckDBPyConnection, conn: Any) -> None:
    from psycopg import sql as pgsql

    from tests.test_rewrite_postgres import _copy_to_postgres as copy_without_ghosts

    copy_without_ghosts(duck, conn)  # fam_source, fam_v1 (no ghost column yet), bounds
    conn.execute("DELETE FROM fam_v1")
    conn.execute("ALTER TABLE fam_v1 ADD COLUMN ghost BOOLEAN")
    rows = duck.execute("SELECT age, sex, group_id, loss, ghost FROM fam_v1").fetchall()
    with conn.cursor() as cur:
        cur.executemany(
            pgsql.SQL("INSERT INTO fam_v1 VALUES (%s, %s, %s, %s, %s)"),
            rows,
        )
