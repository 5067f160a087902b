"""The rewriter's PostgreSQL output on a real server: same intervals as on DuckDB, and
every one holds the truth. Covers each code path (bounds lookups, S predicates, AVG pools,
MIN/MAX, COUNT of a column, ORDER BY/LIMIT)."""

from __future__ import annotations

import math
import random
from typing import Any

import duckdb
import pytest
import sqlglot
from psycopg import sql as pgsql

from sqlanon.models.ke_bounds import COLUMNS
from sqlanon.rewriter import rewrite
from sqlanon.rewriter.analyze import AggregateItem, analyze
from sqlanon.rewriter.normalize import normalize
from sqlanon.sqltext import pg_qualified
from tests.test_rewrite_fixtures import truth_sql
from tests.test_rewrite_ke import check_sound
from tests.test_rewrite_support import catalog_of, fetch, make_release, on_source

pytestmark = pytest.mark.postgres

QUERIES = [
    "SELECT sex, COUNT(*), SUM(loss) AS l, AVG(loss), MIN(loss), MAX(loss) FROM fam "
    "WHERE age BETWEEN 30 AND 50 GROUP BY sex ORDER BY sex",
    "SELECT COUNT(*), COUNT(sex), SUM(loss), AVG(loss), MIN(loss), MAX(loss) FROM fam "
    "WHERE loss > 20 AND NOT (age < 25)",
    "SELECT age, COUNT(*), SUM(loss), AVG(loss) FROM fam WHERE (loss < 5 OR loss > 40) "
    "AND sex IN ('M') GROUP BY age ORDER BY age DESC LIMIT 5",
    "SELECT sex, AVG(loss) FROM fam WHERE age > 100 GROUP BY sex",
    "SELECT SUM(loss), MIN(loss) FROM fam WHERE age > 100 AND loss > 3",
]

TABLES = {
    "fam_source": ["key", "age", "sex", "group_id", "loss"],
    "fam_v1": ["age", "sex", "group_id", "loss"],
}


def _copy_to_postgres(duck: duckdb.DuckDBPyConnection, conn: Any) -> None:
    conn.execute("CREATE SCHEMA sqlanon")
    conn.execute(
        "CREATE TABLE fam_source (key INTEGER, age INTEGER, sex TEXT, group_id INTEGER, "
        "loss INTEGER)"
    )
    conn.execute("CREATE TABLE fam_v1 (age INTEGER, sex TEXT, group_id INTEGER, loss INTEGER)")
    conn.execute(
        'CREATE TABLE sqlanon."fam_v1_bounds" (group_id INTEGER, descending BOOLEAN, '
        "block INTEGER, lo_rank INTEGER, hi_rank INTEGER, value INTEGER, prior_sum BIGINT, "
        "n INTEGER, total BIGINT, vmin INTEGER, vmax INTEGER)"
    )
    copies = {
        **TABLES,
        "sqlanon.fam_v1_bounds": list(COLUMNS),
    }
    for name, columns in copies.items():
        schema, _, table = name.rpartition(".")
        target = pgsql.Identifier(schema, table) if schema else pgsql.Identifier(table)
        rows = duck.execute(sqlglot.exp.select(*columns).from_(name).sql("duckdb")).fetchall()
        with conn.cursor() as cur:
            cur.executemany(
                pgsql.SQL("INSERT INTO {} VALUES ({})").format(
                    target, pgsql.SQL(", ").join(pgsql.Placeholder() * len(columns))
                ),
                rows,
            )


def _pg_fetch(conn: Any, text: str) -> list[dict[str, Any]]:
    cur = conn.execute(text)
    names = [d.name for d in cur.description]
    return [
        {
            k: (float(v) if type(v).__name__ == "Decimal" else v)
            for k, v in zip(names, row, strict=True)
        }
        for row in cur.fetchall()
    ]


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.keys() != y.keys():
            return False
        for k in x:
            u, v = x[k], y[k]
            if isinstance(u, int | float) and isinstance(v, int | float):
                if not math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-9):
                    return False
            elif u != v:
                return False
    return True


def test_postgres_output_matches_duckdb_and_holds_the_truth(pg_conn: Any) -> None:
    rng = random.Random(5)
    rows = [
        {"age": rng.randint(18, 70), "sex": rng.choice("MF"), "loss": rng.randint(-10, 60)}
        for _ in range(120)
    ]
    order = sorted(range(len(rows)), key=lambda i: rows[i]["loss"])
    groups = [0] * len(rows)
    for rank, i in enumerate(order):
        groups[i] = rank // 6
    duck = duckdb.connect()
    info = make_release(
        duck, "fam", {"age": "INTEGER", "sex": "VARCHAR"}, ("loss", "INTEGER"), rows, groups
    )
    _copy_to_postgres(duck, pg_conn)
    catalog = catalog_of(info)
    for query in QUERIES:
        on_pg = _pg_fetch(pg_conn, rewrite(query, catalog, "postgres"))
        on_duck = fetch(duck, rewrite(query, catalog, "duckdb"))
        if "ORDER BY" not in query:
            on_pg, on_duck = sorted(on_pg, key=str), sorted(on_duck, key=str)
        assert _same(on_pg, on_duck), (query, on_pg, on_duck)
        truth = _pg_fetch(
            pg_conn, sqlglot.transpile(on_source(query, info), read="duckdb", write="postgres")[0]
        )
        aggs = {
            i.name: i.func for i in analyze(query, catalog).items if isinstance(i, AggregateItem)
        }
        check_sound(on_pg, truth, query, aggs)


GENERAL = [
    # PostgreSQL divides integers by truncating: the bounds are widened to hold that
    "SELECT sex AS s, SUM(loss) / COUNT(*) AS mean, ROUND(AVG(loss), 1) AS r, "
    "MAX(loss) - MIN(loss) AS spread FROM fam WHERE age > 30 GROUP BY 1",
    "SELECT sex, COUNT(*) AS n FROM fam GROUP BY ROLLUP (sex) HAVING SUM(loss) > 100 "
    "ORDER BY n DESC LIMIT 5",
    "WITH t AS (SELECT *, age / 10 AS decade FROM fam WHERE sex = 'M') "
    "SELECT sex, COUNT(*) AS n, COALESCE(SUM(loss), 0) AS total FROM t GROUP BY sex",
    "SELECT 'a' AS v, COUNT(*) AS n FROM fam UNION ALL SELECT 'b', COUNT(*) FROM fam_v1",
]


def test_postgres_general_front_end_holds_the_truth(pg_conn: Any) -> None:
    """The general front end's output runs on PostgreSQL (through pg_qualified, as the
    server runs it) and every interval holds the truth computed there."""
    rng = random.Random(6)
    rows = [
        {"age": rng.randint(18, 70), "sex": rng.choice("MF"), "loss": rng.randint(-10, 60)}
        for _ in range(120)
    ]
    groups = [i // 6 for i in range(len(rows))]
    duck = duckdb.connect()
    info = make_release(
        duck, "fam", {"age": "INTEGER", "sex": "VARCHAR"}, ("loss", "INTEGER"), rows, groups
    )
    _copy_to_postgres(duck, pg_conn)
    catalog = catalog_of(info)
    for query in GENERAL:
        out = _pg_fetch(pg_conn, pg_qualified(rewrite(query, catalog, "postgres")))
        assert out, query
        plan = normalize(query, catalog, "postgres")
        keys = [i.name for i in plan.branches[0].items if not i.is_value]
        values = [i.name for i in plan.branches[0].items if i.is_value]
        truth_text = sqlglot.transpile(truth_sql(query, info), read="duckdb", write="postgres")[0]
        truth = {tuple(r[k] for k in keys): r for r in _pg_fetch(pg_conn, truth_text)}
        for row in out:
            true_row = truth.get(tuple(row[k] for k in keys))
            if "having_surely" in row and row["having_surely"]:
                assert true_row is not None, (query, row)
            for name in values:
                value = true_row[name] if true_row is not None else None
                if value is None:
                    continue
                low, high = row[f"{name}_low"], row[f"{name}_high"]
                assert low is None or low - 1e-6 <= value, (query, name, value, row)
                assert high is None or value <= high + 1e-6, (query, name, value, row)
