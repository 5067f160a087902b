"""``recoding='global'`` on a real local Spark (conftest's ``spark``): the Python API on
a SparkSession publishes what DuckDB publishes from the same 400 Adult records, every
label of a column of one level, and the audit finds 0 exposed."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

import sqlanon
from sqlanon.demo import bundled_adult, load_adult
from tests.test_spark import spark_rows

pytestmark = pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")

ARGS = {
    "key": "id",
    "quasi": ["age", "sex", "marital_status", "race"],
    "sensitive": ["capital_loss"],
    "l": 3,
    "recoding": "global",
}


def test_a_global_release_on_spark_equals_the_duckdb_release(spark: Any) -> None:
    con = duckdb.connect()
    sqlanon.install(con)
    load_adult(con, "adult")
    con.execute("DELETE FROM adult WHERE id >= 400")
    adult = spark.read.csv(str(bundled_adult()), header=True, inferSchema=True)
    adult.where("id < 400").write.saveAsTable("adult")
    for c in (spark, con):
        sqlanon.load_hierarchies(c, "adult")
    on_spark = sqlanon.release_lhd(spark, "adult", "adult_g", **ARGS)
    on_duckdb = sqlanon.release_lhd(con, "adult", "adult_g", **ARGS)
    assert on_spark["algorithm_used"] == "global"
    assert {**on_spark, "domain": None} == {**on_duckdb, "domain": None}
    query = "SELECT age, sex, marital_status, race, capital_loss FROM adult_g_v1"
    assert sorted(spark_rows(spark, query)) == sorted(con.execute(query).fetchall())
    for column, level in on_spark["levels"].items():
        labels = {r[0] for r in spark_rows(spark, f"SELECT DISTINCT {column} FROM adult_g")}  # noqa: S608
        if level == 0:
            continue
        # a generalized column: its labels are those of one level, none a raw value
        raw = {r[0] for r in spark_rows(spark, f"SELECT DISTINCT {column} FROM adult")}  # noqa: S608
        assert not labels & {str(v) for v in raw} or labels == {"*"}
    assert [r["exposed"] for r in sqlanon.audit(spark, "adult_g")] == [0]
    con.close()
