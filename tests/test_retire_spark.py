"""Retention on Spark (issue 27): ``sqlanon.retire(spark, family, keep)`` drops the
retired versions' tables, the rewriter refuses them by name, the served version reads
and answers as before, the audit still replays every version, and a later release
works (a real local Spark: conftest's ``spark``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sqlanon
from sqlanon.errors import UnsupportedQueryError

# pyspark's collect() leaves its result socket open (see tests/test_spark.py)
pytestmark = pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")

SCHEMA = "id BIGINT, age INT, sex STRING, loss BIGINT"
KE = {"key": "id", "sensitive": "loss", "quasi": ["age", "sex"], "k": 3, "e": 20}


def arrive(spark: Any, start: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = [
        (start + i, int(rng.integers(20, 60)), "MF"[i % 2], int(rng.integers(0, 40)) * 10)
        for i in range(n)
    ]
    spark.createDataFrame(rows, SCHEMA).write.mode("append").saveAsTable("retiring")


def rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def test_retire_on_spark_keeps_the_served_version_and_later_releases(spark: Any) -> None:
    for version, (start, n) in enumerate([(0, 60), (60, 30), (90, 30)], start=1):
        arrive(spark, start, n, version)
        assert sqlanon.release_ke(spark, "retiring", "ret_ke", **KE)["version"] == version
    served = rows(spark, "SELECT * FROM ret_ke")
    assert served == rows(spark, "SELECT * FROM ret_ke_v3")
    answer = sqlanon.interval(spark, "SELECT SUM(loss) AS t FROM ret_ke_v3")
    audit = sqlanon.audit(spark, "ret_ke")

    done = sqlanon.retire(spark, "ret_ke", 1)
    assert (done["served"], done["retired"]) == ([3], [1, 2])
    with pytest.raises(UnsupportedQueryError, match="version 1 of family 'ret_ke'.* is retired"):
        sqlanon.interval(spark, "SELECT SUM(loss) AS t FROM ret_ke_v1")
    tables = {t.name for t in spark.catalog.listTables("default")}
    assert {"ret_ke_v1", "ret_ke_v2"}.isdisjoint(tables) and "ret_ke_v3" in tables
    assert rows(spark, "SELECT * FROM ret_ke") == served
    assert rows(spark, "SELECT * FROM ret_ke_v3") == served
    assert sqlanon.interval(spark, "SELECT SUM(loss) AS t FROM ret_ke_v3") == answer
    assert sqlanon.interval(spark, "SELECT SUM(loss) AS t FROM ret_ke") == answer
    assert sqlanon.audit(spark, "ret_ke") == audit  # retired, not un-published
    assert sqlanon.retire(spark, "ret_ke", 1)["retired"] == []  # again: a no-op
    assert sqlanon.retire(spark, "ret_ke", 5)["served"] == [3]  # never served again

    arrive(spark, 120, 30, 4)
    v4 = sqlanon.release_ke(spark, "retiring", "ret_ke", **KE)
    assert v4["version"] == 4 and v4["rows_published"] > len(served)
    assert len(rows(spark, "SELECT * FROM ret_ke")) == v4["rows_published"]
    assert rows(spark, "SELECT * FROM ret_ke_v3") == served
    later = sqlanon.interval(spark, "SELECT COUNT(*) AS n FROM ret_ke")[0]
    assert later["n_low"] == later["n_high"] == v4["rows_published"]
    assert all(r["exposed"] == 0 for r in sqlanon.audit(spark, "ret_ke"))
