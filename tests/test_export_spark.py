"""The analyst hand-off file from Spark (issue 25): the owner exports through a
SparkSession into the same DuckDB layout (and Parquet folder), and the export answers
as Spark does. A real local Spark: conftest's ``spark``, one session for this module.

Keys are ``key-<md5>`` strings, so a key that reached the export would be recognized in
any cell; the sensitive column is a DECIMAL (Spark hands it over as a float)."""

from __future__ import annotations

import hashlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

import sqlanon
from sqlanon import cli
from sqlanon.state import exports

# pyspark's collect() leaves a local socket unclosed (see tests/test_spark.py).
pytestmark = pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")

SCHEMA = "pid STRING, age INT, sex STRING, loss DECIMAL(8, 2)"
KE = {"key": "pid", "sensitive": "loss", "quasi": ["age", "sex"], "k": 3, "e": 20}
QUERIES = [
    "SELECT sex, COUNT(*) AS n, SUM(loss) AS s, AVG(loss) AS mean FROM patients_ke"
    " WHERE age BETWEEN 30 AND 50 GROUP BY sex",
    "SELECT COUNT(*) AS n, MIN(loss) AS lo, MAX(loss) AS hi FROM patients_ke_v1 WHERE sex = 'F'",
    "SELECT CASE WHEN age < 40 THEN 'young' ELSE 'old' END AS band, SUM(loss) AS s"
    " FROM patients_ke GROUP BY 1",
]
TABLES = ["patients_ke_v1", "patients_ke_v2"]


def patient(i: int) -> tuple[str, int, str, Decimal]:
    return (
        "key-" + hashlib.md5(str(i).encode()).hexdigest(),  # noqa: S324 - a test's keys
        20 + i * 7 % 45,
        "FM"[i % 3 == 0],
        Decimal(i * 37 % 60 * 10) + Decimal("0.25"),
    )


def rounded(row: dict[str, Any]) -> dict[str, Any]:
    """An answer with its estimates to 9 digits (as tests/test_spark.py compares); a
    DECIMAL's MIN or MAX is a Decimal on DuckDB, a float from Spark's session."""
    return {k: round(float(v), 9) if isinstance(v, float | Decimal) else v for k, v in row.items()}


def answers(con: Any, sql: str) -> list[dict[str, Any]]:
    return sorted(map(rounded, sqlanon.interval(con, sql)), key=str)


def relations(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    return {
        (str(s), str(t))
        for s, t in con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
        ).fetchall()
    }


def cells(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Every value of every table and view, as text."""
    found = set()
    for schema, table in relations(con):
        rows = con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()  # noqa: S608
        found.update(str(v) for row in rows for v in row)
    return found


def test_export_from_spark(spark: Any, tmp_path: Path) -> None:
    first = [patient(i) for i in range(120)]
    spark.createDataFrame(first, SCHEMA).write.saveAsTable("patients")
    assert sqlanon.release_ke(spark, "patients", "patients_ke", **KE)["version"] == 1
    path = tmp_path / "patients.duckdb"
    assert sqlanon.export(spark, "patients_ke", path)["added"] == [
        "patients_ke_v1", "patients_ke_v1_bounds"
    ]  # fmt: skip
    # a live change: 60 records more, every 11th one gone (ghosts in version 2)
    now = [p for i, p in enumerate(first) if i % 11] + [patient(i) for i in range(120, 180)]
    spark.createDataFrame(now, SCHEMA).write.mode("overwrite").saveAsTable("patients")
    assert sqlanon.release_ke(spark, "patients", "patients_ke", **KE)["version"] == 2
    summary = sqlanon.export(spark, "default.patients", path)  # the domain, added to
    assert summary["families"] == ["patients_ke"]
    assert summary["added"] == ["patients_ke_v2", "patients_ke_v2_bounds"]

    keys = {p[0] for p in [*first, *now]}
    allowed = exports.allowed_relations(tables=TABLES, bounds=TABLES, views=["patients_ke"])
    with duckdb.connect(str(path), read_only=True) as con:
        assert sqlanon.install(con) == []  # an export: query functions only
        assert relations(con) == allowed
        assert not keys & cells(con)
        loss = "SELECT data_type FROM information_schema.columns WHERE column_name = 'loss'"
        assert {r[0] for r in con.execute(loss).fetchall()} == {"DECIMAL(8,2)"}
        for sql in QUERIES:
            assert answers(con, sql) == answers(spark, sql), sql

    folder = tmp_path / "patients_pq"
    assert cli.main(["export", "--db", "local[1]", "patients_ke", str(folder),
                     "--format", "parquet"]) == 0  # fmt: skip
    con = duckdb.connect()
    assert sqlanon.attach_export(con, folder) == ["patients_ke"]
    assert relations(con) == allowed
    assert not keys & cells(con)
    assert answers(con, QUERIES[0]) == answers(spark, QUERIES[0])
    assert not spark.sparkContext._jsc.sc().isStopped()  # the CLI left the session running
