"""Spark as a third engine (issue 14): a real local Spark (local[1], one SparkSession
for the module: conftest's ``spark``; small data), no mocks.

A (k,e) or lHD release made on Spark equals the DuckDB release (the same groups with
the same records and values, members, cells and bounds), the audit reports no exposed
record, interval answers contain the true answer, an lHD sequence (inserts, ghosts,
changed quasi-identifiers) plans on units without collecting rows in the driver and
publishes DuckDB's classes, versions share their rows (a release appends parquet files
for what changed; earlier versions read as they did), deletions make ghosts, a release that
fails after writing its table (and the catalog's tables anew) leaves nothing visible, a
dead driver's leftovers are removed by the next release, bad input is refused before
anything is written, a new application finds the releases, and the CLI takes a master.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import numpy as np
import pyspark.sql as pyspark_sql  # the dev extra (and Java, scripts/setup): never skipped
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import SqlanonError

# pyspark's collect() reads its result from a local socket it never closes (pyspark 4.0,
# pyspark/sql/classic/dataframe.py via _load_from_socket): ResourceWarning on every call.
pytestmark = pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")

SCHEMA = "id BIGINT, age INT, sex STRING, loss BIGINT"
DUCK_SCHEMA = "id BIGINT, age INTEGER, sex VARCHAR, loss BIGINT"
LAB = "id STRING, age INT, sex STRING, loss DOUBLE"
KE = {"key": "id", "sensitive": "loss", "quasi": ["age", "sex"], "k": 3, "e": 20}


def people(start: int, n: int, seed: int) -> list[tuple[int, int, str, int]]:
    rng = np.random.default_rng(seed)
    return [
        (start + i, int(rng.integers(20, 60)), ["M", "F"][i % 2], int(rng.integers(0, 40)) * 10)
        for i in range(n)
    ]


def append(spark: Any, table: str, rows: list[tuple[Any, ...]], schema: str = SCHEMA) -> None:
    spark.createDataFrame(rows, schema).write.mode("append").saveAsTable(table)


def spark_rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def state(spark: Any) -> dict[str, Any]:
    """What a release may write: catalog rows, release tables and views."""
    names = ("releases", "member_spans", "cell_spans", "state_versions", "kept_values", "links")
    names += ("pending",)
    row = spark.sql(
        "SELECT " + ", ".join(f"(SELECT count(*) FROM sqlanon.{t})" for t in names)
    ).collect()[0]
    counts = dict(zip(names, row, strict=True))
    tables = sorted(
        (t.database or "", t.name)
        for db in ("default", "sqlanon")
        for t in spark.catalog.listTables(db)
        if not t.isTemporary
    )
    return {"counts": counts, "tables": tables}


@pytest.fixture(scope="module")
def released(spark: Any) -> dict[str, Any]:
    """Family people_ke released twice (200 rows, then 100 more) on Spark and on DuckDB
    from the same data."""
    con = duckdb.connect()
    sqlanon.install(con)
    con.execute(f"CREATE TABLE people ({DUCK_SCHEMA})")
    summaries = []
    for start, n, seed in ((0, 200, 7), (200, 100, 8)):
        part = people(start, n, seed)
        append(spark, "people", part)
        con.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", part)
        on_spark = sqlanon.release_ke(spark, "people", "people_ke", **KE)
        on_duckdb = sqlanon.release_ke(con, "people", "people_ke", **KE)
        summaries.append((on_spark, on_duckdb))
    return {"con": con, "summaries": summaries}


def rounded(row: dict[str, Any]) -> dict[str, Any]:
    """An answer with its estimates to 9 digits: they sum the rows in the order each
    engine drew for the release."""
    return {k: round(v, 9) if isinstance(v, float) else v for k, v in row.items()}


def by_group(rows: list[tuple[Any, ...]]) -> dict[Any, tuple[list[Any], list[Any]]]:
    """Per group id: the sorted (age, sex) rows and the sorted values."""
    found: dict[Any, tuple[list[Any], list[Any]]] = {}
    for age, sex, group, loss in rows:
        found.setdefault(group, ([], []))[0].append((age, sex))
        found[group][1].append(loss)
    return {g: (sorted(q), sorted(v)) for g, (q, v) in found.items()}


def test_a_release_on_spark_equals_the_duckdb_release(spark: Any, released: dict[str, Any]) -> None:
    con = released["con"]
    for version, (on_spark, on_duckdb) in enumerate(released["summaries"], start=1):
        assert on_spark["version"] == version
        assert on_spark["domain"] == "default.people"  # DuckDB's: main.people
        assert {**on_spark, "domain": None} == {**on_duckdb, "domain": None}
        table = f"people_ke_v{version}"
        # the same groups, each with the same records and values (the keyed shuffle
        # inside a group is drawn per release; DuckDB's group ids follow the groups a
        # version continues, Spark, with a table per version, numbers them afresh)
        select = f"SELECT age, sex, group_id, loss FROM {table}"
        assert sorted(by_group(spark_rows(spark, select)).values()) == sorted(
            by_group(con.execute(select).fetchall()).values()
        )
        where = f"WHERE family = 'people_ke' AND version = {version}"
        cells = f"SELECT cell_id, attribute, min_distinct, min_spread FROM sqlanon.cells {where}"
        assert sorted(spark_rows(spark, cells)) == sorted(con.execute(cells).fetchall())
        for sql in (
            f"SELECT record_key, cell_id, status, group_id FROM sqlanon.members {where}",
            f"SELECT * FROM sqlanon.{table}_bounds",
        ):
            cursor = con.execute(sql)
            group = [d[0] for d in cursor.description or []].index("group_id")
            assert classes(spark_rows(spark, sql), group) == classes(cursor.fetchall(), group), sql
    assert released["summaries"][1][0]["inserted"] == 100
    assert spark_rows(spark, "SELECT count(*) FROM people_ke") == [
        (released["summaries"][1][0]["rows_published"],)
    ]
    again = sqlanon.release_ke(spark, "people", "people_ke", **KE)
    assert again["unchanged"] is True and again["version"] == 2


def test_the_audit_of_spark_releases_exposes_no_record(
    spark: Any, released: dict[str, Any]
) -> None:
    audit = sqlanon.audit(spark, "people_ke")
    assert [(r["family"], r["version"]) for r in audit] == [("people_ke", 1), ("people_ke", 2)]
    assert all(r["exposed"] == 0 and r["subtraction_complete"] for r in audit)
    assert audit == [
        {**r, "domain": "default.people"} for r in sqlanon.audit(released["con"], "people_ke")
    ]


AGGREGATES = ("COUNT(*)", "SUM(loss)", "AVG(loss)", "MIN(loss)", "MAX(loss)")


def truth(spark: Any, aggregate: str, low: int, high: int, sex: str | None) -> Any:
    """The true answer over the records the newest version published, from the source."""
    where = f"p.age BETWEEN {low} AND {high}" + (f" AND p.sex = '{sex}'" if sex else "")
    return spark.sql(
        f"SELECT {aggregate.replace('loss', 'p.loss')} FROM people AS p "
        "JOIN sqlanon.members AS m ON m.record_key = CAST(p.id AS STRING) "
        "AND m.family = 'people_ke' AND m.version = 2 AND m.status = 'published' "
        f"WHERE {where}"
    ).collect()[0][0]


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    aggregate=st.sampled_from(AGGREGATES),
    ages=st.tuples(st.integers(15, 65), st.integers(0, 30)),
    sex=st.sampled_from([None, "M", "F"]),
)
def test_interval_answers_on_spark_contain_the_true_answer(
    spark: Any,
    released: dict[str, Any],
    aggregate: str,
    ages: tuple[int, int],
    sex: str | None,
) -> None:
    low, high = ages[0], ages[0] + ages[1]
    where = f"age BETWEEN {low} AND {high}" + (f" AND sex = '{sex}'" if sex else "")
    query = f"SELECT {aggregate} AS a FROM people_ke WHERE {where}"
    rows = sqlanon.interval(spark, query)
    assert len(rows) == 1
    answer, true = rows[0], truth(spark, aggregate, low, high, sex)
    if true is not None:  # None: no record matches (MIN, MAX, AVG, SUM of no rows)
        slack = 1e-9 * max(1.0, abs(float(true)))
        assert answer["a_low"] - slack <= float(true) <= answer["a_high"] + slack
    # the same answer as DuckDB's over the same release
    on_duckdb = sqlanon.interval(released["con"], query)[0]
    assert answer.keys() == on_duckdb.keys()
    for name, value in on_duckdb.items():
        assert answer[name] == (value if value is None else pytest.approx(value)), name


#: Everyday analyst SQL (issue 25) valid in Spark's and DuckDB's dialects.
EVERYDAY = [
    "SELECT CASE WHEN age < 40 THEN 'young' ELSE 'old' END AS band, COUNT(*) AS n,"
    " AVG(loss) AS mean FROM people_ke GROUP BY 1 ORDER BY 1",
    "SELECT sex, SUM(loss) AS total FROM people_ke GROUP BY sex HAVING SUM(loss) > 1000",
    "SELECT sex, COUNT(*) AS n FROM people_ke WHERE age > 50 OR loss > 40 GROUP BY sex",
    "WITH t AS (SELECT *, age + 1 AS next FROM people_ke WHERE sex = 'F')"
    " SELECT next > 40 AS older, SUM(loss) AS s FROM t GROUP BY 1",
    "SELECT sex, SUM(loss) / COUNT(*) AS per_head, MAX(loss) - MIN(loss) AS spread"
    " FROM people_ke GROUP BY sex",
    "SELECT sex, percentile_cont(0.5) WITHIN GROUP (ORDER BY loss) AS med FROM people_ke"
    " GROUP BY sex",
    "SELECT sex, COUNT(*) FILTER (WHERE loss > 30) AS many FROM people_ke GROUP BY ROLLUP (sex)",
]


@pytest.mark.parametrize("query", EVERYDAY)
def test_everyday_sql_on_spark_gives_duckdbs_intervals(
    spark: Any, released: dict[str, Any], query: str
) -> None:
    on_spark = sorted(map(rounded, sqlanon.interval(spark, query)), key=str)
    on_duckdb = sorted(map(rounded, sqlanon.interval(released["con"], query)), key=str)
    assert on_spark == on_duckdb


def test_rewrite_for_spark_runs_on_spark(spark: Any, released: dict[str, Any]) -> None:
    sql = sqlanon.rewrite("SELECT sex, SUM(loss) AS l FROM people_ke GROUP BY sex", spark, "spark")
    assert "`" in sql or "people_ke" in sql
    rows = sorted(spark_rows(spark, sql))
    assert [r[0] for r in rows] == ["F", "M"]
    # the data owner's query limits: stored once on Spark (no DELETE to replace a row)
    assert sqlanon.set_limit(spark, "max_query_chars", 200)["max_query_chars"] == 200
    with pytest.raises(SqlanonError, match="max_query_chars"):
        sqlanon.interval(
            spark, "SELECT SUM(loss) FROM people_ke WHERE " + "age > 1 AND " * 20 + "TRUE"
        )
    with pytest.raises(SqlanonError, match="cannot replace it"):
        sqlanon.set_limit(spark, "max_query_chars", None)


class Killed(Exception):
    """The failure a test injects after the release table was written."""


def kill_after_writing(stage: str, count: int) -> None:
    if stage == "rows written":  # the release table exists; no state or catalog row yet
        raise Killed(stage)


def test_an_lhd_release_on_spark_equals_the_duckdb_release(spark: Any) -> None:
    from sqlanon.demo import bundled_adult, load_adult

    con = duckdb.connect()
    sqlanon.install(con)
    load_adult(con, "adult")
    con.execute("DELETE FROM adult WHERE id >= 400")
    adult = spark.read.csv(str(bundled_adult()), header=True, inferSchema=True)
    adult.where("id < 400").write.saveAsTable("adult")
    for c in (spark, con):
        sqlanon.load_hierarchies(c, "adult")  # the ARX hierarchies bundled for Adult
    args = {
        "key": "id",
        "quasi": ["sex", "marital_status", "race"],
        "sensitive": ["capital_loss"],
        "l": 3,
    }
    on_spark = sqlanon.release_lhd(spark, "adult", "adult_gzs", **args)
    on_duckdb = sqlanon.release_lhd(con, "adult", "adult_gzs", **args)
    assert {**on_spark, "domain": None} == {**on_duckdb, "domain": None}
    # the same rows; their order is drawn per release (the engine path's keyed order)
    assert sorted(spark_rows(spark, "SELECT * FROM adult_gzs_v1")) == sorted(
        con.execute("SELECT * FROM adult_gzs_v1").fetchall()
    )
    assert [r["exposed"] for r in sqlanon.audit(spark, "adult_gzs")] == [0]
    query = "SELECT sex, COUNT(*), SUM(capital_loss) AS l FROM adult_gzs WHERE race = 'White' GROUP BY sex"
    assert sorted(map(rounded, sqlanon.interval(spark, query)), key=str) == sorted(
        map(rounded, sqlanon.interval(con, query)), key=str
    )
    with pytest.raises(SqlanonError, match="cannot replace it"):  # Spark takes no DELETE
        sqlanon.load_hierarchies(spark, "adult")


WARD = "id BIGINT, age INT, zip INT, disease STRING"
DISEASES = ["flu", "cold", "asthma", "ulcer"]


def ward(ids: range, seed: int, moved: frozenset[int] = frozenset()) -> list[tuple[Any, ...]]:
    """Records ``ids`` with few distinct values (units of many records); ``moved``:
    records whose age (a quasi-identifier) changed."""
    rng = np.random.default_rng(seed)
    return [
        (i, int(rng.integers(20, 30)) + (7 if i in moved else 0), int(rng.integers(0, 4)),
         DISEASES[int(rng.integers(0, 4))])
        for i in ids
    ]  # fmt: skip


def driver_results(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """Every result the driver collects through sqlanon's Spark session from now on, as
    it happens: its number of rows and whether it is the units'
    (sqlanon/sql/lhd_engine_units.sql)."""
    from sqlanon.spark.session import SparkSqlSession

    sizes: list[tuple[int, bool]] = []
    for name in ("query", "query_dicts", "query_arrays"):
        real = getattr(SparkSqlSession, name)

        def counted(self: Any, sql: str, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            out = _real(self, sql, *args, **kwargs)
            rows = len(next(iter(out.values()))) if isinstance(out, dict) else len(out)
            sizes.append((rows, "AS first_key" in sql))
            return out

        monkeypatch.setattr(SparkSqlSession, name, counted)
    return sizes


@contextmanager
def driver_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, bool]]]:
    """:func:`driver_results`; every lHD release must take the engine path."""
    from sqlanon.release import lhd_engine

    sizes = driver_results(monkeypatch)
    real_release = lhd_engine.release
    taken: list[bool] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real_release(*args, **kwargs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(lhd_engine, "release", spy)
    yield sizes
    assert taken and all(taken), taken


def classes(rows: list[tuple[Any, ...]], column: int) -> list[list[tuple[Any, ...]]]:
    """``rows`` as a multiset of classes (by their ``column``, left out), each the
    sorted list of its rows."""
    found: dict[Any, list[tuple[Any, ...]]] = {}
    for row in rows:
        found.setdefault(row[column], []).append(row[:column] + row[column + 1 :])
    return sorted(sorted(members) for members in found.values())


def same_draws(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """What two engines would draw apart, drawn alike, so that they publish the same
    classes: ghost ids (random; the planner reads ghosts in their order) numbered in
    key order from a base the returned function sets before each release, and each
    ghost's stand-in record (random: the QI it plans with)."""
    from sqlanon.release import lhd_job
    from sqlanon.state import deletions

    real_gone = deletions._gone
    monkeypatch.setattr(deletions, "_gone", lambda *a, **k: sorted(real_gone(*a, **k)))
    numbers = itertools.count()

    def restart(base: int) -> None:
        nonlocal numbers
        numbers = itertools.count(base)

    monkeypatch.setattr(deletions, "new_ghost_id", lambda: f"ghost:{next(numbers):032x}")
    monkeypatch.setattr(lhd_job, "os", SimpleNamespace(urandom=lambda n: bytes(n)))
    return restart


def test_an_lhd_sequence_on_spark_plans_on_units_and_equals_duckdb(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three versions (inserts, deletions that make ghosts, changed quasi-identifiers)
    on Spark and DuckDB: the same figures and the same classes, each with the same rows;
    Spark takes the engine path, and the driver never collects as many rows as the
    source has (it reads units: the largest result is theirs)."""
    con = duckdb.connect()
    sqlanon.install(con)
    args = {"key": "id", "quasi": ["age", "zip"], "sensitive": ["disease"], "l": 2}
    versions = [
        ward(range(3000), 1),
        [r for r in ward(range(3300), 1, frozenset(range(1, 3000, 25))) if r[0] % 11],
        [r for r in ward(range(3500), 1, frozenset(range(2, 3300, 30))) if r[0] % 11],
    ]
    for c in (spark, con):
        for attribute, widths in (("age", [2, 10]), ("zip", [2])):
            sqlanon.hierarchy_widths(c, "ward_l", attribute, widths)
    restart = same_draws(monkeypatch)
    with driver_reads(monkeypatch) as sizes:
        for version, rows in enumerate(versions, start=1):
            spark.createDataFrame(rows, WARD).write.mode("overwrite").saveAsTable("ward_l")
            con.execute(f"CREATE OR REPLACE TABLE ward_l ({WARD.replace('STRING', 'VARCHAR')})")
            con.executemany("INSERT INTO ward_l VALUES (?, ?, ?, ?)", rows)
            sizes.clear()
            restart(1000 * version)
            on_spark = sqlanon.release_lhd(spark, "ward_l", "ward_lhd", **args)
            # the largest result the driver collected: the units, fewer than the rows
            assert max(sizes)[1], sorted(sizes)[-3:]
            assert max(sizes)[0] < len(rows), (version, sorted(sizes)[-3:])
            restart(1000 * version)
            on_duckdb = sqlanon.release_lhd(con, "ward_l", "ward_lhd", **args)
            assert on_spark["version"] == version
            assert {**on_spark, "domain": None} == {**on_duckdb, "domain": None}
            # the same classes, each with the same rows, and each record in the same
            # state (DuckDB's class ids follow the groups a version continues; Spark,
            # with a table per version, numbers them afresh)
            select = f"SELECT * FROM ward_lhd_v{version}"
            assert classes(spark_rows(spark, select), 3) == classes(
                con.execute(select).fetchall(), 3
            )
            members = (
                "SELECT record_key, status, cell_id, ghost, group_id FROM sqlanon.members "
                f"WHERE family = 'ward_lhd' AND version = {version}"
            )
            assert classes(spark_rows(spark, members), 4) == classes(
                con.execute(members).fetchall(), 4
            )
    assert (on_spark["deleted"], on_spark["inserted"]) == (0, 181)  # ids 3300-3499 not % 11
    assert on_spark["quasi_changed"] > 0 and on_spark["ghosts"] > 0
    audited_like_duckdb(spark, con, monkeypatch, len(rows))


def audited_like_duckdb(spark: Any, con: Any, monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """The audit of ward_lhd on Spark equals DuckDB's, and the driver collects one row
    per distinct history (issue 27): as many as DuckDB's audit groups, fewer than the
    ``n`` records."""
    from sqlanon.state import audit_reads

    histories: list[int] = []
    real = audit_reads._histories

    def counted(*args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        out = real(*args, **kwargs)
        histories.append(len(out["records"]))
        return out

    monkeypatch.setattr(audit_reads, "_histories", counted)
    on_duckdb = sqlanon.audit(con, "ward_lhd")
    sizes = driver_results(monkeypatch)
    on_spark = sqlanon.audit(spark, "ward_lhd")
    assert [r["exposed"] for r in on_spark] == [0, 0, 0]
    assert on_spark == [{**r, "domain": "default.ward_l"} for r in on_duckdb]
    assert histories[0] == histories[1] == max(sizes)[0] < n / 2, (histories, sizes, n)


def test_a_killed_or_dead_release_leaves_nothing_and_deletions_make_ghosts(spark: Any) -> None:
    """A driver that dies mid-release runs no undo: its notes in sqlanon.pending tell
    the next writing transaction what to remove (the catalog row was never written).
    A release that fails after writing its table (and, with deletions, after writing
    the catalog's tables anew) is undone: nothing visible, the next one succeeds."""
    from sqlanon.spark.session import SparkSqlSession
    from sqlanon.spark.undo import Transaction

    # text keys, a DOUBLE sensitive column (the other tests: BIGINT), a source in another
    # database named as SQL quotes it (Spark's catalog keeps names in lower case)
    lab = [(f"p{i}", age, sex, loss + 0.25) for i, age, sex, loss in people(4000, 40, 7)]
    spark.sql("CREATE DATABASE IF NOT EXISTS clinic").collect()
    append(spark, "clinic.Lab", lab, LAB)
    before = state(spark)
    dead = SparkSqlSession(spark)
    dead._tx = Transaction.begin(dead)  # as transaction() begins; it never ends
    dead.execute("CREATE TABLE `lab_ke_v1` USING parquet AS SELECT 1 AS x")
    dead.execute(
        "INSERT INTO sqlanon.member_spans (family, record_key, first_version, status) "
        "VALUES ('lab_ke', '4000', 1, 'held_back')"
    )
    assert state(spark) != before
    summary = sqlanon.release_ke(spark, '"clinic"."Lab"', "lab_ke", **KE)
    assert summary["version"] == 1 and summary["domain"] == "clinic.lab"
    assert spark_rows(
        spark, "SELECT count(*) FROM sqlanon.members WHERE family = 'lab_ke' AND version = 1"
    ) == [(40,)]
    assert spark_rows(spark, "SELECT count(*) FROM sqlanon.pending") == [(0,)]
    assert spark_rows(spark, "SELECT count(*) FROM lab_ke") == [(summary["rows_published"],)]
    answer = sqlanon.interval(spark, "SELECT SUM(loss) AS s FROM lab_ke WHERE age < 40")[0]
    true = spark_rows(
        spark,
        "SELECT sum(l.loss) FROM clinic.lab AS l JOIN sqlanon.members AS m ON m.record_key = l.id "
        "AND m.family = 'lab_ke' AND m.status = 'published' WHERE l.age < 40",
    )[0][0]
    assert answer["s_low"] - 1e-9 <= true <= answer["s_high"] + 1e-9

    # Deleted rows and a changed sensitive value become ghosts: Spark writes members,
    # kept values and links anew (INSERT OVERWRITE, old files moved aside); a release
    # killed after that and after its table is written leaves the catalog as it was.
    changed = [(k, a, x, loss + (1000.0 if k == "p4010" else 0.0)) for k, a, x, loss in lab[5:]]
    spark.createDataFrame(changed, LAB).write.mode("overwrite").saveAsTable("clinic.lab_now")
    spark.sql("DROP TABLE clinic.lab").collect()
    spark.sql("ALTER TABLE clinic.lab_now RENAME TO clinic.lab").collect()
    members = (
        "SELECT family, version, record_key, group_id, cell_id, status, ghost FROM sqlanon.members"
    )
    before, rows_before = state(spark), sorted(spark_rows(spark, members), key=str)
    view = sorted(spark_rows(spark, "SELECT * FROM lab_ke"), key=str)
    with pytest.raises(Killed):
        sqlanon.release_ke(spark, "clinic.lab", "lab_ke", progress=kill_after_writing, **KE)
    assert state(spark) == before  # no lab_ke_v2, no bounds, no links, no catalog row
    assert sorted(spark_rows(spark, members), key=str) == rows_before  # no key replaced
    assert sorted(spark_rows(spark, "SELECT * FROM lab_ke"), key=str) == view  # version 1
    second = sqlanon.release_ke(spark, "clinic.lab", "lab_ke", **KE)
    gone = {f"p{i}" for i in (4000, 4001, 4002, 4003, 4004, 4010)}
    published = sum(r[3] is not None for r in rows_before if r[2] in gone)
    assert (second["version"], second["deleted"], second["value_changed"]) == (2, 5, 1)
    assert second["ghosts"] == published
    assert spark_rows(spark, "SELECT count(*) FROM lab_ke WHERE ghost") == [(published,)]
    assert spark_rows(spark, "SELECT count(*) FROM sqlanon.links") == [(1,)]  # p4010's chain
    assert all(r["exposed"] == 0 for r in sqlanon.audit(spark, "lab_ke"))
    assert spark_rows(spark, "SELECT count(*) FROM sqlanon.pending") == [(0,)]


def test_bad_input_is_refused_and_writes_nothing(spark: Any) -> None:
    append(spark, "ward", people(2000, 40, 5))
    append(
        spark,
        "ward_nulls",
        [(2100 + i, 30 + i % 5, "M", None if i == 3 else i * 10) for i in range(20)],
    )
    append(
        spark,
        "ward_nan",
        [(2200 + i, 30 + i % 5, "M", math.nan if i == 4 else float(i)) for i in range(20)],
        "id BIGINT, age INT, sex STRING, loss DOUBLE",
    )
    before = state(spark)
    bad = [
        ("no_such_table", "ward_ke", KE, "does not exist"),
        ("ward", "ward_ke", {**KE, "quasi": ["age", "zip"]}, "zip"),
        ("ward", "ward_ke", {**KE, "key": "nope"}, "nope"),
        ("ward_nulls", "ward_ke", KE, "NULL"),
        ("ward_nan", "ward_ke", KE, "NaN"),
        ("ward", "x; DROP TABLE ward --", KE, "not allowed"),
        ("ward", "`ward_ke`", KE, "not allowed"),
        ("ward", "ward_ke", {**KE, "policy": "paper"}, "DuckDB and PostgreSQL only"),
    ]
    for source, family, args, message in bad:
        with pytest.raises(SqlanonError, match=message):
            sqlanon.release_ke(spark, source, family, **args)
        assert state(spark) == before, (source, family)
    assert spark_rows(spark, "SELECT count(*) FROM ward") == [(40,)]


def _live_step(rows: list[tuple[Any, ...]], rng: np.random.Generator, start: int) -> list[Any]:
    """The source after one random live change: a few records deleted, a few ages and
    a few values changed, a few inserted."""
    order = rng.permutation(len(rows))
    gone, aged, valued = (set(order[i : i + int(rng.integers(1, 4))]) for i in (0, 10, 20))
    kept = [
        (i, age + (1 if j in aged else 0), sex, loss + (10 if j in valued else 0))
        for j, (i, age, sex, loss) in enumerate(rows)
        if j not in gone
    ]
    return kept + people(start, int(rng.integers(2, 6)), start)


def _files(spark: Any, table: str) -> dict[str, int]:
    spark.sql(f"REFRESH TABLE {table}").collect()
    return {
        f: Path(f.removeprefix("file:")).stat().st_size for f in spark.table(table).inputFiles()
    }


def test_versions_share_rows_on_spark_and_a_release_appends_what_changed(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a short random live sequence, every earlier version reads (as a multiset)
    exactly as it did after every later release; a release adds parquet files (the old
    ones stay as they were) holding only what changed; a family whose first version is a
    table of its own (a catalog from before shared rows) keeps it and shares from its
    next version; retire drops old versions' views and tables."""
    from sqlanon.state import release_rows

    rng = np.random.default_rng(27)
    rows: list[Any] = people(7000, 90, 27)
    seen: dict[str, Counter[tuple[Any, ...]]] = {}

    def release() -> dict[str, Any]:
        spark.createDataFrame(rows, SCHEMA).write.mode("overwrite").saveAsTable("live")
        summary = sqlanon.release_ke(spark, "live", "live_ke", **KE)
        for name in [f"live_ke_v{v}" for v in range(1, summary["version"] + 1)]:
            now = Counter(spark_rows(spark, f"SELECT * FROM {name}"))
            assert seen.setdefault(name, now) == now, name
        return summary

    with monkeypatch.context() as before_sharing:
        before_sharing.setattr(release_rows, "SHARED", frozenset({"duckdb", "postgres"}))
        release()
    assert not spark.catalog.tableExists("sqlanon.live_ke__rows")
    table = "sqlanon.live_ke__rows"
    appended, files = [], [_files(spark, "default.live_ke_v1")]
    for version in (2, 3):
        rows = _live_step(rows, rng, 7000 + 100 * version)
        before = _files(spark, table) if version > 2 else {}
        summary = release()
        assert summary["version"] == version
        after = _files(spark, table)
        assert {f: after[f] for f in before} == before  # old files stay as they were
        files.append({f: n for f, n in after.items() if f not in before})
        appended.append(
            spark_rows(spark, f"SELECT count(*) FROM {table} WHERE sqlanon_first = {version}")[0][0]
        )
    # the first shared version writes its rows whole, a later one what changed (rows:
    # at this size a parquet file's bytes are mostly its header and footer)
    assert appended[0] == spark_rows(spark, "SELECT count(*) FROM live_ke_v2")[0][0]
    assert all(0 < n <= appended[0] // 3 for n in appended[1:]), appended
    assert all(files[1:]), "each release adds files"
    hidden = {"sqlanon_first", "sqlanon_row", "sqlanon_last"}
    assert not hidden & (
        set(spark.table("live_ke_v3").columns) | set(spark.table("live_ke").columns)
    )
    assert sqlanon.retire(spark, "live_ke", 1)["retired"] == [1, 2]
    assert not any(spark.catalog.tableExists(f"live_ke_v{v}") for v in (1, 2))
    assert Counter(spark_rows(spark, "SELECT * FROM live_ke_v3")) == seen["live_ke_v3"]
    answer = sqlanon.interval(spark, "SELECT SUM(loss) AS s FROM live_ke_v3 WHERE age < 40")[0]
    assert answer["s_low"] <= answer["s_high"]


def test_the_cli_takes_a_spark_master_url(
    spark: Any, released: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from sqlanon.cli import main

    common = ["--key", "id", "--sensitive", "loss", "--quasi", "age", "sex"]
    assert main(["release-ke", "--db", "local[1]", "people", "people_ke", *common,
                 "--k", "3", "--e", "20"]) == 0  # fmt: skip
    assert "people_ke: no change since version" in capsys.readouterr().err
    assert main(["query", "--db", "local[1]", "SELECT COUNT(*) FROM people_ke"]) == 0
    assert "count_star" in capsys.readouterr().out
    assert main(["audit", "--db", "local[1]", "no_such_family"]) == 2
    assert "no release family 'no_such_family'" in capsys.readouterr().err
    assert not spark.sparkContext._jsc.sc().isStopped()  # the running session stays


def test_import_sqlanon_does_not_import_pyspark(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = "import sys, sqlanon; assert 'pyspark' not in sys.modules, 'pyspark imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)


def test_an_audit_that_exposes_records_on_spark_equals_duckdbs(
    spark: Any, released: dict[str, Any]
) -> None:
    """An independent release of a copy of people (another domain) audited with
    people_ke v2 (records linked by key) exposes records; Spark's figures and keys are
    DuckDB's (issue 27: the audit's per-record work runs in Spark)."""
    from sqlanon.api import session_for
    from sqlanon.state.audit_reads import audit_versions

    con = released["con"]
    copy = {**KE, "quasi": ["sex", "age"], "k": 2, "e": 10, "domain": "copies"}
    spark.sql("CREATE TABLE people_copy AS SELECT * FROM people").collect()
    con.execute("CREATE TABLE people_copy AS SELECT * FROM people")
    for c in (spark, con):
        sqlanon.release_ke(c, "people_copy", "copy_ke", **copy)
    refs = [("people_ke", 2), ("copy_ke", 1)]
    found = []
    for c in (spark, con):
        with session_for(c) as session:
            found.append([audit_versions(session, refs, records=r) for r in (False, True)])
    assert found[0][1][-1]["exposed"] > 0
    spark_domain = {"main.people": "default.people", "copies": "copies"}
    assert found[0] == [
        [{**r, "domain": spark_domain[r["domain"]]} for r in audits] for audits in found[1]
    ]


def test_a_new_application_on_the_same_warehouse_finds_the_releases(
    spark: Any, released: dict[str, Any]
) -> None:
    """Spark's in-memory catalog forgets tables when the application ends; install()
    attaches the catalog, bounds and release tables the warehouse holds. (Last in this
    module: it ends the module's SparkSession.)"""
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    view = sorted(spark_rows(spark, "SELECT * FROM people_ke"))
    newest = spark_rows(
        spark, "SELECT max(version) FROM sqlanon.releases WHERE family = 'people_ke'"
    )
    spark.stop()
    # The CLI in a new application (another process) audits from the catalog: the source
    # table is attached from the warehouse, and Spark's log and stage bars stay quiet.
    folder = Path(warehouse.removeprefix("file:"))
    conf = folder.parent / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "spark-defaults.conf").write_text(
        f"spark.sql.warehouse.dir {warehouse}\nspark.sql.shuffle.partitions 1\n"
    )
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "SQLANON_SPARK_VERBOSE"}
    root = str(Path(__file__).resolve().parents[1])  # this checkout, whatever is installed
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "sqlanon.cli", "audit", "--db", "local[1]", "people_ke"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**env, "SPARK_CONF_DIR": str(conf)}, cwd=folder.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "people_ke" in done.stdout and "exposed" in done.stdout
    # (the JVM's start-up lines come before any setting can apply; after them, nothing)
    assert "[Stage" not in done.stderr, done.stderr[-3000:]
    later = done.stderr.split('Setting Spark log level to "ERROR".', 1)
    assert len(later) == 2 and not later[1].strip(), done.stderr[-3000:]
    again = (
        pyspark_sql.SparkSession.builder.master("local[1]")
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    try:
        assert not again.catalog.tableExists("sqlanon.releases")
        assert sqlanon.install(again) == []
        assert sorted(spark_rows(again, "SELECT * FROM people_ke")) == view
        audited = sqlanon.audit(again, "people_ke")  # the source, attached again
        assert [r["version"] for r in audited] == [1, 2]
        assert all(r["exposed"] == 0 for r in audited)
        rows = sqlanon.interval(again, "SELECT SUM(loss) AS s FROM people_ke")
        assert rows[0]["s_low"] <= rows[0]["s_high"]
        versions = "SELECT family, version FROM sqlanon.releases WHERE family = 'people_ke'"
        assert sorted(spark_rows(again, versions)) == [("people_ke", 1), ("people_ke", 2)]
        assert newest == [(2,)]
    finally:
        again.stop()
