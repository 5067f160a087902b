"""The summary's error ratio: a release's sum of errors over the static optimum of the
rows it published. Never below 1, also when rows are held back (the whole table's
optimum read 0.64 there)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import InfeasibleError
from sqlanon.metrics import error_ratio
from sqlanon.models import ke_static
from tests.test_ke_model import growing_tables, start
from tests.test_release_duckdb import make_people

TOLERANCE = 1e-9


@settings(deadline=None, max_examples=40)
@given(growing_tables(), st.sampled_from(["auto", "merge", "defer", "paper"]))
def test_the_ratio_is_at_least_one_on_random_releases(
    table: tuple[int, int, list[int], list[list[int]]], policy: str
) -> None:
    k, e, initial, batches = table
    history = start(k, e, initial, "auto")
    if history is None:
        return
    for batch in batches:
        history.append(batch)
        try:
            plan = history.plan(policy)
        except InfeasibleError:
            assert policy == "paper"  # the seeds' rule may find no partition
            return
        published = history.values[plan.group >= 0]
        optimum = ke_static.static_optimum(published, k, e)
        assert optimum is not None  # the plan's own groups are a valid partition
        ratio = error_ratio(plan.sum_of_errors, optimum)
        assert ratio is not None and ratio >= 1 - TOLERANCE
        if policy == "paper":
            return  # the seeds' rule breaks cells: History.publish would refuse it
        history.publish(plan)


def test_error_ratio_edges() -> None:
    assert error_ratio(120.0, 100.0) == pytest.approx(1.2)
    assert error_ratio(0.0, 0.0) == 1.0
    assert error_ratio(5.0, None) is None and error_ratio(None, 5.0) is None


def test_release_summary_carries_the_optimum_of_its_published_rows(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "ratio.duckdb"))
    try:
        sqlanon.install(con)
        make_people(con, 80)
        kwargs = {"key": "id", "sensitive": "salary", "quasi": ["age"], "k": 4, "e": 50}
        sqlanon.release_ke(con, "people", "people_ke", **kwargs)  # type: ignore[arg-type]
        make_people(con, 7, start=9000)
        summary = sqlanon.release_ke(con, "people", "people_ke", **kwargs)  # type: ignore[arg-type]
        published = np.array(
            [r[0] for r in con.execute("SELECT salary FROM people_ke").fetchall()], dtype=float
        )
        assert summary["published_optimum"] == pytest.approx(
            ke_static.static_optimum(published, 4, 50)
        )
        ratio = error_ratio(summary["sum_of_errors"], summary["published_optimum"])
        assert ratio is not None and ratio >= 1 - TOLERANCE
    finally:
        con.close()
