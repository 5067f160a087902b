"""Interval answers over real sqlanon releases in a DuckDB file, checked against the truth."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.api import interval, rewrite
from sqlanon.errors import UnsupportedQueryError

from .test_release_duckdb import make_people


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    path = Path(tmp_path_factory.mktemp("interval")) / "people.duckdb"
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    make_people(con, 150)
    sqlanon.release_ke(
        con, "people", "people_ke", key="id", sensitive="salary", quasi=["age", "sex"], k=3, e=10
    )
    make_people(con, 40, start=5000)
    sqlanon.release_ke(
        con, "people", "people_ke", key="id", sensitive="salary", quasi=["age", "sex"], k=3, e=10
    )
    # The truth an analyst's interval must contain: the published records' real values.
    con.execute(
        "CREATE TABLE truth AS SELECT p.* FROM people p JOIN sqlanon.members m "
        "ON CAST(p.id AS VARCHAR) = m.record_key "
        "WHERE m.family = 'people_ke' AND m.version = 2 AND m.status = 'published'"
    )
    yield con
    con.close()


predicates = st.sampled_from(
    [
        "age BETWEEN 30 AND 50",
        "sex = 'F'",
        "age < 40 OR sex = 'M'",
        "NOT (age >= 60)",
        "age IN (25, 33, 41, 58)",
        "salary > 200",
        "salary <= 300 AND age > 35",
        "TRUE",
    ]
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(where=predicates, by_sex=st.booleans())
def test_intervals_contain_the_truth(
    released: duckdb.DuckDBPyConnection, where: str, by_sex: bool
) -> None:
    group = " GROUP BY sex" if by_sex else ""
    select = "sex, " if by_sex else ""
    sql = (
        f"SELECT {select}COUNT(*) AS n, SUM(salary) AS total, AVG(salary) AS mean, "
        f"MIN(salary) AS lo, MAX(salary) AS hi FROM people_ke WHERE {where}{group}"
    )
    answers = {r.get("sex"): r for r in interval(released, sql)}
    truth_sql = sql.replace("people_ke", "truth")
    cursor = released.execute(truth_sql)
    names = [d[0] for d in cursor.description]
    for row in cursor.fetchall():
        true = dict(zip(names, row, strict=True))
        got = answers[true.get("sex")]
        for name in ("n", "total", "mean", "lo", "hi"):
            if true[name] is None:
                continue
            assert got[f"{name}_low"] - 1e-9 <= true[name] <= got[f"{name}_high"] + 1e-9, (
                name,
                where,
                got,
                true,
            )


def test_sql_function_and_refusals(released: duckdb.DuckDBPyConnection) -> None:
    cursor = released.execute(
        "SELECT * FROM query(sqlanon_interval('SELECT COUNT(*) AS n, SUM(salary) AS s "
        "FROM people_ke WHERE age > 40'))"
    )
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    assert len(rows) == 1
    truth = released.execute("SELECT count(*), sum(salary) FROM truth WHERE age > 40").fetchone()
    got = dict(zip(columns, rows[0], strict=True))
    assert got["n"] == truth[0] and got["s_low"] <= truth[1] <= got["s_high"]
    for bad in (
        "SELECT SUM(salary) FROM people",
        "SELECT count(*) FROM sqlanon.members",
        "SELECT SUM(salary) FROM people_ke JOIN people USING (age)",
        "SELECT SUM(salary) FROM people_ke WHERE age IN (SELECT age FROM people)",
    ):
        with pytest.raises(UnsupportedQueryError):
            interval(released, bad)
    assert "people_ke_v2" in rewrite("SELECT SUM(salary) FROM people_ke", released)
    pg = rewrite("SELECT SUM(salary) FROM people_ke", released, dialect="postgres")
    assert "sqlanon" in pg and 'people"' not in pg
