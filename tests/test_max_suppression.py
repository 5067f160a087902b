"""``max_suppression`` is a contract for lHD releases (README, "lHD"; issue 26): a version
leaves out at most that fraction of its records (the source's rows plus the domain's
ghosts), chain rule included; a release that would leave out more is refused, writes
nothing, and names the fraction that would do, with which it then succeeds.

Random tiny (k,e)-then-lHD sequences on one DuckDB source with inserts, deletes,
quasi-identifier and sensitive-value changes between them (the live-table driver of
``tests/test_live_duckdb.py``). What was left out is counted from ``sqlanon.members``
(status per record of the version), not from the summary alone.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import duckdb
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import SqlanonError, SuppressionLimitError
from tests.test_live_duckdb import PERSON, Table, apply, changes, make_table
from tests.test_live_duckdb import snapshot as database_state

KE = {"key": "id", "sensitive": "s", "quasi": ["age"], "k": 2, "e": 1}
LHD = {"key": "id", "quasi": ["age", "zone"], "sensitive": ["c"], "l": 2}
NEEDED = re.compile(r"raise max_suppression to (\d\.\d{4})")


def left_out_of(con: duckdb.DuckDBPyConnection, summary: dict[str, Any]) -> tuple[int, int]:
    """(records left out, records) of the version just published, from its members."""
    left, records = con.execute(
        "SELECT count(*) FILTER (WHERE status <> 'published'), count(*) FROM sqlanon.members "
        "WHERE family = ? AND version = ?",
        [summary["family"], summary["version"]],
    ).fetchone()
    return int(left), int(records)


def check_within(con: duckdb.DuckDBPyConnection, summary: dict[str, Any], fraction: float) -> None:
    if summary.get("unchanged"):
        return
    left, records = left_out_of(con, summary)
    assert summary["left_out"] == left == summary["held_back"] + summary["suppressed"]
    assert summary["records"] == records
    assert summary["chain_held"] <= left
    assert left <= fraction * records + 1e-9, (left, records, fraction)


def release_lhd(table: Table, fraction: float) -> dict[str, Any]:
    return sqlanon.release_lhd(table.con, "src", "f_lhd", **LHD, max_suppression=fraction)


def lhd_within_contract(table: Table, fraction: float) -> str:
    """One lHD release at ``fraction``: published within it, or refused having written
    nothing, and then published at the fraction the refusal names."""
    before = database_state(table.con)
    try:
        summary = release_lhd(table, fraction)
    except SuppressionLimitError as exc:
        assert database_state(table.con) == before, f"a refused release wrote something: {exc}"
        message = str(exc)
        assert "\n" not in message and "the chain rule leaves out" in message
        found = NEEDED.search(message)
        assert found is not None, message
        needed = float(found.group(1))
        assert needed > fraction, message
        check_within(table.con, release_lhd(table, needed), needed)
        return "refused, then published"
    except SqlanonError:
        assert database_state(table.con) == before
        return "refused otherwise"
    check_within(table.con, summary, fraction)
    return "published"


Step = tuple[str, int, Any]


@st.composite
def sequences(draw: Any) -> tuple[list[tuple[Any, ...]], list[list[Step]], float]:
    first = draw(st.lists(PERSON, min_size=4, max_size=7))
    batches = draw(st.lists(st.lists(changes(), min_size=1, max_size=3), min_size=1, max_size=2))
    return first, batches, draw(st.sampled_from((0.0, 0.1, 0.25, 0.5)))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sequences())
# a corrected s splits a (k,e) cell that the lHD release cannot keep whole
@example(
    (
        [(20, "z1", 1, "a"), (20, "z2", 2, "b"), (20, "z3", 1, "c"), (30, "z4", 2, "a")]
        + [(30, "z1", 3, "b"), (30, "z2", 3, "c")],
        [[("value", 1, ("s", 1)), ("insert", 0, (40, "z3", 2, "a"))]],
        0.0,
    )
)
def test_lhd_releases_keep_max_suppression(scenario: Any) -> None:
    first, batches, fraction = scenario
    with tempfile.TemporaryDirectory() as tmp:
        con = duckdb.connect(str(Path(tmp) / "supp.duckdb"))
        try:
            sqlanon.install(con)
            table = make_table(con, Path(tmp) / "hier", "both")
            for person in first:
                table.insert(*person)
            for batch in [[], *batches]:
                apply(table, batch)
                try:
                    sqlanon.release_ke(con, "src", "f_ke", **KE)
                except SqlanonError:
                    pass  # (k,e) may have nothing to publish yet
                event(lhd_within_contract(table, fraction))
        finally:
            con.close()
