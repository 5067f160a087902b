"""The CLI's table never narrows an interval: bounds are rounded outward for display."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.cli import main
from sqlanon.display import format_value as _fmt

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15)


@settings(max_examples=300, deadline=None)
@given(finite, finite)
def test_shown_bounds_contain_every_value_between_them(a: float, b: float) -> None:
    low, high = min(a, b), max(a, b)
    assert float(_fmt(low, "s_low")) <= low
    assert float(_fmt(high, "s_high")) >= high


def test_a_tight_average_is_not_shown_as_a_point() -> None:
    # the case seen: AVG 1867.418 shown as "1867 1867"
    assert (_fmt(1867.1, "a_low"), _fmt(1867.418, "a_high")) == ("1867", "1868")
    assert (_fmt(-2.5e-7, "x_low"), _fmt(123456.5, "x_high")) == ("-0.00000025", "123457")
    assert _fmt(1867.418, "a_est") == "1867" and _fmt(12.0, "n_low") == "12"


def test_query_output_contains_the_true_average(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "d.duckdb")
    con = duckdb.connect(path)
    sqlanon.install(con)
    con.execute(
        "CREATE TABLE t AS SELECT i AS id, i % 2 AS sex, 1000 + (i * 7919) % 997 + i / 7 AS v "
        "FROM range(60) r(i)"
    )
    sqlanon.release_ke(con, "t", "f", key="id", sensitive="v", quasi=["sex"], k=3, e=5)
    truth = dict(con.execute("SELECT sex, avg(v) FROM t GROUP BY sex").fetchall())
    con.close()
    assert main(["query", "--db", path, "SELECT sex, AVG(v) AS a FROM f GROUP BY sex"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    for line in lines[1:]:
        row = dict(zip(header, line.split(), strict=True))
        true = truth[int(row["sex"])]
        assert float(row["a_low"]) <= true <= float(row["a_high"]) and math.isfinite(true)
