"""The analyst hand-off file from PostgreSQL: the owner exports through a psycopg
connection into the same DuckDB layout, and the export answers as the server does."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import duckdb
import pytest
from psycopg.conninfo import conninfo_to_dict

import sqlanon
from sqlanon import cli
from sqlanon.postgres.install import install_postgres

pytestmark = pytest.mark.postgres

QUERIES = [
    "SELECT sex, COUNT(*), SUM(salary) AS s, AVG(salary), MAX(salary) FROM people_ke"
    " WHERE age BETWEEN 30 AND 50 GROUP BY sex",
    "SELECT COUNT(*), SUM(salary) FROM people_ke_v1 WHERE sex = 'F'",
    "SELECT COUNT(*), SUM(salary), MIN(salary) FROM people_lhd WHERE age >= 40",
]


def add(conn: Any, first: int, last: int) -> None:
    conn.execute(
        "INSERT INTO people SELECT 'key-' || md5(i::text), 20 + mod(i * 7, 50),"
        " CASE mod(i, 3) WHEN 0 THEN 'F' ELSE 'M' END, mod(i * 37, 60) * 10 + 5"
        " FROM generate_series(%s::int, %s::int) AS i",
        [first, last],
    )


def release(conn: Any) -> None:
    sqlanon.release_ke(conn, "people", "people_ke", key="pid", sensitive="salary",
                       quasi=["age", "sex"], k=3, e=10)  # fmt: skip
    sqlanon.release_lhd(conn, "people", "people_lhd", key="pid", quasi=["age"],
                        sensitive=["salary"], l=3)  # fmt: skip


def same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    def key(r: dict[str, Any]) -> str:
        return repr(sorted((k, str(v)) for k, v in r.items() if not k.endswith("_est")))

    assert len(a) == len(b)
    for x, y in zip(sorted(a, key=key), sorted(b, key=key), strict=True):
        assert x.keys() == y.keys()
        for k in x:
            if isinstance(x[k], str) or x[k] is None:
                assert x[k] == y[k], k
            else:
                assert math.isclose(float(x[k]), float(y[k]), rel_tol=1e-9), (k, x[k], y[k])


def test_export_from_postgres(
    pg_db: str, pg_python_root: Path, pg_conn: Any, tmp_path: Path
) -> None:
    install_postgres(pg_db, python_root=pg_python_root)
    pg_conn.execute("CREATE TABLE people (pid text, age integer, sex text, salary numeric(8, 2))")
    add(pg_conn, 1, 120)
    sqlanon.hierarchy_widths(pg_conn, "people", "age", [5, 10, 20])
    release(pg_conn)
    add(pg_conn, 121, 200)
    pg_conn.execute(
        "DELETE FROM people WHERE pid IN (SELECT 'key-' || md5(i::text) FROM generate_series(1, 200, 17) AS i)"
    )
    release(pg_conn)
    path = tmp_path / "people.duckdb"
    summary = sqlanon.export(pg_conn, "public.people", path)
    assert summary["families"] == ["people_ke", "people_lhd"]
    keys = {
        r[0]
        for r in pg_conn.execute(
            "SELECT 'key-' || md5(i::text) FROM generate_series(1, 200) AS i"
        ).fetchall()
    }
    with duckdb.connect(str(path), read_only=True) as con:
        sqlanon.install(con)
        for sql in QUERIES:
            same(sqlanon.interval(con, sql), sqlanon.interval(pg_conn, sql))
        tables = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
        ).fetchall()
        assert {t for s, t in tables if s == "main"} == {
            "people_ke", "people_lhd", "people_ke_v1", "people_ke_v2", "people_lhd_v1", "people_lhd_v2"
        }  # fmt: skip
        for schema, table in tables:
            for row in con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall():  # noqa: S608
                assert not any(str(v) in keys for v in row)
        params = con.execute(
            "SELECT string_agg(CAST(parameters AS VARCHAR), ' ') FROM sqlanon.releases"
        ).fetchone()[0]
        assert "released_by" not in params and '"schema"' not in params and "pid" not in params
    # the CLI, to a Parquet folder
    folder = tmp_path / "people_pq"
    info = conninfo_to_dict(pg_db)
    url = f"postgresql://{info['user']}@{info['host']}:{info['port']}/{info['dbname']}"
    assert cli.main(["export", "--db", url, "people_ke", str(folder), "--format", "parquet"]) == 0
    con = duckdb.connect()
    assert sqlanon.attach_export(con, folder) == ["people_ke"]
    same(sqlanon.interval(con, QUERIES[0]), sqlanon.interval(pg_conn, QUERIES[0]))
