"""JOIN of a named public lookup table (issue 25): answered with a runtime guard.

The answer reads the table through ``COUNT(...) OVER (PARTITION BY <join key>)`` and its
ON raises when a release row meets a repeated key (sqlanon/rewriter/lookup_join.py).
Properties: with unique keys (NULL keys repeated or not) every interval holds the truth
on DuckDB and PostgreSQL, for (k,e) end to end and for lHD's general builder; a repeated
key that a release row meets raises an error naming the table on both engines.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import duckdb
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql as pgsql

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter import ReleaseInfo, rewrite
from sqlanon.rewriter.normalize import normalize
from tests import test_rewrite_lhd_general as lhd
from tests.test_rewrite_postgres import _copy_to_postgres, _pg_fetch
from tests.test_rewrite_support import catalog_of, fetch, make_release, on_source

EPS = 1e-6
AGES = [20, 30, 40, 50]
Lookup = list[tuple[int | None, str]]

QUERIES = [
    "SELECT l.band AS band, COUNT(*) AS n, SUM(a.loss) AS total, AVG(a.loss) AS mean "
    "FROM fam AS a {join} lk AS l ON l.age = a.age GROUP BY l.band",
    "SELECT a.sex AS sex, COUNT(*) AS n, MAX(a.loss) AS top FROM fam AS a {join} lk AS l "
    "ON l.age = a.age AND l.sex = a.sex WHERE l.band <> 'b' OR a.loss > 20 GROUP BY a.sex",
    "SELECT l.band AS band, GROUPING(l.band) AS g, COUNT(*) AS n, SUM(a.loss) AS total "
    "FROM fam AS a {join} lk AS l ON l.age = a.age GROUP BY ROLLUP (l.band)",
]
AGGS = {"n": "count", "total": "sum", "mean": "avg", "top": "max"}


@st.composite
def releases(draw: Any) -> list[dict[str, Any]]:
    size = draw(st.integers(1, 12))
    return [
        {
            "age": draw(st.sampled_from(AGES)),
            "sex": draw(st.sampled_from("MF")),
            "loss": draw(st.integers(-5, 40)),
        }
        for _ in range(size)
    ]


@st.composite
def lookups(draw: Any) -> Lookup:
    """Unique (age, sex) keys for a subset of the ages, plus rows with a NULL age."""
    keys = draw(st.sets(st.tuples(st.sampled_from(AGES), st.sampled_from("MF")), max_size=6))
    rows: Lookup = [(age, sex) for age, sex in sorted(keys)]
    rows += [(None, "M")] * draw(st.integers(0, 2))
    return rows


def _bands(lookup: Lookup, unique_age: bool) -> list[tuple[int | None, str, str]]:
    """(age, sex, band) rows; ``unique_age`` keeps one row per age (query 0 joins on it)."""
    seen: set[int | None] = set()
    out = []
    for age, sex in lookup:
        if unique_age and age is not None and age in seen:
            continue
        seen.add(age)
        out.append((age, sex, "ab"[(age or 0) // 10 % 2]))
    return out


def _release(con: Any, rows: list[dict[str, Any]]) -> ReleaseInfo:
    order = sorted(range(len(rows)), key=lambda i: rows[i]["loss"])
    groups = [0] * len(rows)
    for rank, i in enumerate(order):
        groups[i] = rank // 3
    quasi = {"age": "INTEGER", "sex": "VARCHAR"}
    return make_release(con, "fam", quasi, ("loss", "INTEGER"), rows, groups)


def _load_lookup(con: Any, lookup: Sequence[tuple[Any, ...]], postgres: bool = False) -> None:
    con.execute("DROP TABLE IF EXISTS lk")
    con.execute("CREATE TABLE lk (age INTEGER, sex VARCHAR, band VARCHAR)")
    if postgres:
        with con.cursor() as cur:
            cur.executemany(pgsql.SQL("INSERT INTO lk VALUES (%s, %s, %s)"), lookup)
    elif lookup:
        con.executemany("INSERT INTO lk VALUES (?, ?, ?)", lookup)


def _group(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in ("band", "sex", "g") if k in row)


def check(out: list[dict[str, Any]], truth: list[dict[str, Any]], sql: str) -> None:
    out_by = {_group(r): r for r in out}
    assert len(out_by) == len(out), out
    for row in truth:
        assert _group(row) in out_by, (sql, row, out)
        got = out_by[_group(row)]
        for name, func in AGGS.items():
            if name not in row:
                continue
            value = row[name]
            if value is None:
                continue
            low, high = got[f"{name}_low"], got[f"{name}_high"]
            assert low is not None and high is not None, (sql, row, got)
            assert low - EPS <= float(value) <= high + EPS, (sql, name, func, row, got)
        if "g" in row:
            assert got["g"] == row["g"]


def _truth(con: Any, sql: str, info: ReleaseInfo, dialect: str) -> list[dict[str, Any]]:
    text = sqlglot.transpile(on_source(sql, info), read="duckdb", write=dialect)[0]
    return fetch(con, text) if dialect == "duckdb" else _pg_fetch(con, text)


# --- (k,e), end to end ----------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(releases(), lookups(), st.sampled_from(range(len(QUERIES))), st.sampled_from(["", "LEFT"]))
def test_ke_intervals_hold_the_truth_on_duckdb(
    rows: list[dict[str, Any]], lookup: Lookup, which: int, side: str
) -> None:
    con = duckdb.connect()
    info = _release(con, rows)
    _load_lookup(con, _bands(lookup, unique_age=which != 1))
    sql = QUERIES[which].format(join=f"{side} JOIN")
    check(
        fetch(con, rewrite(sql, catalog_of(info), "duckdb")), _truth(con, sql, info, "duckdb"), sql
    )


@pytest.mark.postgres
def test_ke_intervals_hold_the_truth_on_postgres(pg_conn: Any) -> None:
    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(releases(), lookups(), st.sampled_from(range(len(QUERIES))), st.booleans())
    def sample(rows: list[dict[str, Any]], lookup: Lookup, which: int, left: bool) -> None:
        duck = duckdb.connect()
        info = _release(duck, rows)
        pg_conn.execute("DROP SCHEMA IF EXISTS sqlanon CASCADE")
        pg_conn.execute("DROP TABLE IF EXISTS fam_source, fam_v1")
        _copy_to_postgres(duck, pg_conn)
        _load_lookup(pg_conn, _bands(lookup, unique_age=which != 1), postgres=True)
        sql = QUERIES[which].format(join="LEFT JOIN" if left else "JOIN")
        out = _pg_fetch(pg_conn, rewrite(sql, catalog_of(info), "postgres"))
        check(out, _truth(pg_conn, sql, info, "postgres"), sql)

    sample()


# --- a repeated key ---------------------------------------------------------------------


def _one_release(con: Any) -> ReleaseInfo:
    rows = [{"age": a, "sex": "M", "loss": i} for i, a in enumerate([20, 30, 30, 40, 50, 50])]
    return _release(con, rows)


REPEATED = [(30, "M", "a"), (30, "F", "b"), (None, "M", "x"), (None, "M", "y")]


@pytest.mark.parametrize("side", ["", "LEFT"])
def test_a_repeated_key_raises_naming_the_table_on_duckdb(side: str) -> None:
    con = duckdb.connect()
    info = _one_release(con)
    _load_lookup(con, REPEATED)
    sql = QUERIES[0].format(join=f"{side} JOIN")
    with pytest.raises(duckdb.Error, match="lookup table lk repeats the join key"):
        con.execute(rewrite(sql, catalog_of(info), "duckdb")).fetchall()
    # the same table joined on a unique key: NULL keys repeat, and never match
    on_pair = QUERIES[1].format(join=f"{side} JOIN")
    out = fetch(con, rewrite(on_pair, catalog_of(info), "duckdb"))
    check(out, _truth(con, on_pair, info, "duckdb"), on_pair)


@pytest.mark.postgres
def test_a_repeated_key_raises_naming_the_table_on_postgres(pg_conn: Any) -> None:
    import psycopg

    duck = duckdb.connect()
    info = _one_release(duck)
    _copy_to_postgres(duck, pg_conn)
    _load_lookup(pg_conn, REPEATED, postgres=True)
    for side in ("", "LEFT"):
        sql = QUERIES[0].format(join=f"{side} JOIN")
        with pytest.raises(psycopg.Error, match="lookup table lk repeats the join key"):
            pg_conn.execute(rewrite(sql, catalog_of(info), "postgres")).fetchall()
        on_pair = QUERIES[1].format(join=f"{side} JOIN")
        out = _pg_fetch(pg_conn, rewrite(on_pair, catalog_of(info), "postgres"))
        check(out, _truth(pg_conn, on_pair, info, "postgres"), on_pair)


# --- lHD's general builder ----------------------------------------------------------------

LHD_JOIN = "SELECT p.tag, COUNT(*) FROM tiny_v1 AS r {side} JOIN lk AS p ON p.cid = r.class_id"


def _lhd_shape(rows: list[lhd.Row], where: Any, atoms: Any, side: str) -> Any:
    catalog = {"tiny_v1": lhd.info(rows)}
    joined = normalize(LHD_JOIN.format(side=side) + " GROUP BY p.tag", catalog).branches[0].shape
    base = lhd.shape_of(rows, [], where, atoms)
    return dataclasses.replace(joined, atoms=base.atoms, where=base.where)


def _lhd_lookup(con: Any, rows: Sequence[tuple[Any, ...]], postgres: bool = False) -> None:
    con.execute("DROP TABLE IF EXISTS lk")
    con.execute("CREATE TABLE lk (cid INTEGER, tag VARCHAR)")
    if postgres:
        with con.cursor() as cur:
            cur.executemany(pgsql.SQL("INSERT INTO lk VALUES (%s, %s)"), rows)
    else:
        con.executemany("INSERT INTO lk VALUES (?, ?)", rows)


TAGS = {0: "x", 1: "y"}  # class 2 has no lookup row


def _lhd_check(con: Any, case: Any, side: str, dialect: str) -> None:
    rows, _, where, atoms = case
    out = lhd.run(con, _lhd_shape(rows, where, atoms, side), dialect)
    lhd.KEYS["p.tag"] = lambda row: TAGS.get(row[4])
    try:
        kept = rows if side else [r for r in rows if r[4] in TAGS]
        lhd.check(out, kept, ["p.tag"], where, atoms)
    finally:
        del lhd.KEYS["p.tag"]


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(lhd.cases(ghosts=False) | lhd.cases(ghosts=True), st.sampled_from(["", "LEFT"]))
def test_lhd_intervals_hold_every_world_on_duckdb(case: Any, side: str) -> None:
    con = lhd.duck()
    lhd.load(con, case[0])
    _lhd_lookup(con, [*TAGS.items(), (None, "z"), (None, "z")])
    _lhd_check(con, case, side, "duckdb")


@pytest.mark.postgres
def test_lhd_intervals_hold_every_world_on_postgres(pg_conn: Any) -> None:
    _lhd_lookup(pg_conn, [*TAGS.items(), (None, "z"), (None, "z")], postgres=True)

    @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
    @given(lhd.cases(ghosts=False) | lhd.cases(ghosts=True), st.sampled_from(["", "LEFT"]))
    def sample(case: Any, side: str) -> None:
        lhd.load(pg_conn, case[0])
        _lhd_check(pg_conn, case, side, "postgres")

    sample()


def test_lhd_repeated_key_raises_and_quasi_join_is_refused() -> None:
    rows: list[lhd.Row] = [("1", "5", "r", 3, 0, 0), ("2", "5", "g", 4, 1, 0)]
    con = lhd.duck()
    lhd.load(con, rows)
    _lhd_lookup(con, [(0, "x"), (0, "y")])
    with pytest.raises(duckdb.Error, match="lookup table lk repeats the join key"):
        lhd.run(con, _lhd_shape(rows, None, [lhd.AtomCase("count", None, None)], ""), "duckdb")
    catalog = {"tiny_v1": lhd.info(rows)}
    with pytest.raises(UnsupportedQueryError, match="generalized column 'a'"):
        rewrite("SELECT COUNT(*) FROM tiny_v1 AS r JOIN lk ON lk.cid = r.a", catalog)


# --- refusals and dialects ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        ("SELECT COUNT(*) FROM fam AS a JOIN sqlanon.fam_v1_bounds AS b ON b.n = a.age", "private"),
        ("SELECT COUNT(*) FROM fam AS a JOIN fam_source AS s ON s.key = a.age", "private"),
        ("SELECT COUNT(*) FROM fam AS a JOIN fam_v1 AS b ON b.age = a.age", "two releases"),
        ("SELECT COUNT(*) FROM fam AS a JOIN lk ON lk.age < a.age", "conjunction"),
        ("SELECT COUNT(*) FROM fam AS a JOIN lk ON lk.age = a.age OR lk.sex = a.sex", "conjunct"),
        ("SELECT COUNT(*) FROM fam AS a JOIN lk ON lk.age = a.loss", "permuted column"),
        ("SELECT COUNT(*) FROM fam AS a RIGHT JOIN lk ON lk.age = a.age", "RIGHT"),
    ],
)
def test_refused(sql: str, match: str) -> None:
    info = dataclasses.replace(_one_release(duckdb.connect()), source="main.fam_source")
    with pytest.raises(UnsupportedQueryError, match=match):
        rewrite(sql, catalog_of(info), "duckdb")


def test_spark_output_raises_with_raise_error() -> None:
    info = _one_release(duckdb.connect())
    text = rewrite(QUERIES[0].format(join="JOIN"), catalog_of(info), "spark")
    assert "RAISE_ERROR('sqlanon: lookup table lk repeats the join key (age)" in text
    assert "CAST(CASE" not in text
    assert sqlglot.parse_one(text, read="spark") is not None  # valid Spark SQL text
