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
