"""Issue 26, "A crash that stops a family", as generated sequences: a (k,e) family K (on
``s``) and an lHD family L with two sensitive attributes (``s`` and ``c``) on one DuckDB
source, released in turn while records are corrected, inserted and deleted between
them (K v1, L v1; correct one record's ``s``, insert two; K v2; L v2 used to raise a
raw ``ValueError`` in ``models/cells.py``). Every release either publishes or is
refused with a :class:`SqlanonError` that is no bug (:class:`InternalError`, or a
message asking to report it), having written nothing; and the exact attacker
(``tests/attacker.py``, through the live-table driver of ``tests/test_live_duckdb.py``)
finds nobody exposed after any release, for the default algorithm and ``greedy``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import sqlanon
from tests.test_live_duckdb import (
    PERSON,
    Step,
    Table,
    changes,
    release_in_turn,
    replay,
)

KE = {"key": "id", "sensitive": "s", "quasi": ["age"], "k": 2, "e": 1}
LHD = {"key": "id", "quasi": ["age", "zone"], "sensitive": ["s", "c"], "l": 2}


def release(table: Table, family: str, algorithm: str, fraction: float) -> dict[str, Any]:
    if family == "K":
        return sqlanon.release_ke(table.con, "src", "k_fam", **KE)
    return sqlanon.release_lhd(
        table.con, "src", "l_fam", **LHD, algorithm=algorithm, max_suppression=fraction
    )


def step(table: Table, algorithm: str, fraction: float, where: str) -> None:
    """K then L after a batch of changes; then the attacker over every release."""
    calls = [(f, lambda f=f: release(table, f, algorithm, fraction)) for f in ("K", "L")]
    release_in_turn(table, calls, where)


@st.composite
def sequences(draw: Any) -> tuple[list[tuple[Any, ...]], list[list[Step]], str, float]:
    first = draw(st.lists(PERSON, min_size=4, max_size=7))
    change = changes(("insert", "delete", "value"))
    batches = draw(st.lists(st.lists(change, min_size=1, max_size=3), min_size=1, max_size=2))
    algorithm = draw(st.sampled_from(("auto", "greedy")))
    return first, batches, algorithm, draw(st.sampled_from((0.5, 1.0)))


THE_ISSUES_SEQUENCE = (
    [(20, "z1", 1, "a"), (20, "z2", 2, "b"), (30, "z3", 3, "c"), (30, "z4", 1, "b")]
    + [(40, "z1", 2, "c"), (40, "z2", 3, "a")],
    [
        [
            ("value", 2, ("s", 0)),
            ("insert", 0, (20, "z3", 2, "a")),
            ("insert", 0, (40, "z4", 1, "c")),
        ]
    ],
)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sequences())
@example((*THE_ISSUES_SEQUENCE, "auto", 1.0))
@example((*THE_ISSUES_SEQUENCE, "greedy", 1.0))
def test_ke_and_two_attribute_lhd_families_never_crash_nor_expose(scenario: Any) -> None:
    first, batches, algorithm, fraction = scenario
    replay(first, batches, lambda table, where: step(table, algorithm, fraction, where), scenario)
