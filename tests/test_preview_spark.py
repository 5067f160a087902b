"""Preview before publishing (issue 26) on a real local Spark (conftest's ``spark``): a
dry run of the Python API on a SparkSession writes nothing (every table of databases
default and sqlanon, counted and hashed) and returns what the release then returns."""

from __future__ import annotations

from typing import Any

import pytest

import sqlanon
from tests.test_spark import KE, append, people

pytestmark = pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")

PREVIEW_KEYS = {"dry_run", "why_left_out", "utility", "constrains"}


def snapshot(spark: Any) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for db in ("default", "sqlanon"):
        for table in spark.catalog.listTables(db):
            name = f"`{db}`.`{table.name}`" if not table.isTemporary else f"`{table.name}`"
            row = spark.sql(f"SELECT count(*), sum(CAST(hash(*) AS BIGINT)) FROM {name}")  # noqa: S608
            state[f"{db}.{table.name}.{table.isTemporary}"] = tuple(row.collect()[0])
    return state


def test_a_dry_run_on_spark_writes_nothing_and_equals_the_release(spark: Any) -> None:
    append(spark, "people", people(0, 60, 7))
    before = snapshot(spark)
    dry = sqlanon.release_ke(spark, "people", "people_ke", **KE, dry_run=True)
    assert snapshot(spark) == before
    assert dry["dry_run"] is True and dry["version"] == 1
    real = sqlanon.release_ke(spark, "people", "people_ke", **KE)
    assert {k: v for k, v in dry.items() if k not in PREVIEW_KEYS} == real


def test_a_deferring_lhd_release_on_spark_equals_the_duckdb_release(spark: Any) -> None:
    """lHD ``policy`` (issue 26): the same records held back on Spark (row path) as on
    DuckDB (engine path), the dry run equal to the release, the policy recorded."""
    import duckdb

    from tests.test_spark import DUCK_SCHEMA

    con = duckdb.connect()
    sqlanon.install(con)
    con.execute(f"CREATE TABLE appended ({DUCK_SCHEMA})")
    # a domain of its own on both engines: the people of the other test of this module
    # share ids 0..59, and a release joins the domain whose records its keys are (whose
    # other families its new records would then be planned for)
    args = {"key": "id", "quasi": ["age"], "sensitive": ["loss"], "l": 3, "max_suppression": 0.1}
    args["domain"] = "appended_people"
    for start, n, seed in ((0, 60, 7), (60, 12, 8)):
        append(spark, "appended", people(start, n, seed))
        con.executemany("INSERT INTO appended VALUES (?, ?, ?, ?)", people(start, n, seed))
        if start == 0:
            for c in (spark, con):
                sqlanon.hierarchy_widths(c, "appended", "age", [5, 10, 20])
                sqlanon.release_lhd(c, "appended", "appended_l", **args)
    before = snapshot(spark)
    dry = sqlanon.release_lhd(spark, "appended", "appended_l", **args, policy="defer", dry_run=True)
    assert snapshot(spark) == before
    on_spark = sqlanon.release_lhd(spark, "appended", "appended_l", **args, policy="defer")
    on_duckdb = sqlanon.release_lhd(con, "appended", "appended_l", **args, policy="defer")
    assert {k: v for k, v in dry.items() if k not in PREVIEW_KEYS} == on_spark
    assert on_spark["held_back"] == on_duckdb["held_back"] > 0
    assert on_spark["precision_loss"] == on_duckdb["precision_loss"]
    held = spark.sql(
        "SELECT count(*) FROM sqlanon.members WHERE family = 'appended_l' AND version = 2 "
        "AND status = 'held_back'"
    ).collect()[0][0]
    assert held == on_spark["held_back"]
    assert [r["exposed"] for r in sqlanon.audit(spark, "appended_l")] == [0, 0]
