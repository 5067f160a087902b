"""A (k,e) plan made on counts is the record planner's plan (issue 13).

The engine path hands the planner one entry per (old cell, value) with the number of
records behind it (``weight``), never the records. These properties check that against
planning every record, on histories of releases with appends and many ties:

- the objective is the same: sum of errors, rows held back and suppressed;
- with distinct values (no two records share a value) the plans are identical;
- every group, expanded back to records, is (k,e)-valid, and every cell of the domain
  keeps its requirement (checked on records, by a count written here).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.errors import ConfigError, InfeasibleError
from sqlanon.models import ke_incremental, ke_plan
from sqlanon.models.cells import Cells, Requirement

SETTINGS = settings(deadline=None, max_examples=120, suppress_health_check=[HealthCheck.too_slow])


def aggregate(values: np.ndarray, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One entry per (cell, value): its cell, value and record count, and for each
    record the entry it belongs to (as SQL's GROUP BY cell, value would make them)."""
    pairs = np.stack([cell.astype(np.float64), values], axis=1)
    unique, inverse, counts = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
    return unique[:, 1], unique[:, 0].astype(np.int64), counts, inverse.reshape(-1)


def plan_both(
    values: np.ndarray, prior: Cells, k: int, e: float, policy: str
) -> tuple[ke_plan.KePlan, ke_plan.KePlan, np.ndarray]:
    by_record = ke_incremental.plan_in_cells(values, prior, "s", k, e, policy)
    v, cell, count, entry = aggregate(values, prior.cell)
    counted = ke_incremental.plan_in_cells(
        v,
        Cells(cell, prior.attributes, prior.distinct, prior.spread),
        "s",
        k,
        e,
        policy,
        weight=count,
    )
    return by_record, counted, entry


def check_cells(values: np.ndarray, cells: Cells) -> None:
    """Every cell's records meet the cell's requirement on S (counted directly)."""
    if "s" not in cells.attributes:
        return
    j = cells.attributes.index("s")
    for c in range(cells.count):
        members = values[cells.cell == c]
        if members.size == 0:
            continue
        assert len(set(members.tolist())) >= cells.distinct[c, j]
        assert members.max() - members.min() >= cells.spread[c, j] - 1e-9


def histories():
    value = st.integers(0, 40).map(float)
    batch = st.lists(value, min_size=1, max_size=40)
    return st.tuples(
        st.lists(batch, min_size=1, max_size=4),
        st.integers(2, 4),
        st.sampled_from([0.0, 1.0, 5.0, 15.0]),
        st.sampled_from(["auto", "merge", "defer"]),
    )


@SETTINGS
@given(histories())
def test_counts_give_the_record_planners_objective(history):
    batches, k, e, policy = history
    values = np.zeros(0)
    prior = Cells.empty(0)
    requirement = Requirement.ke("s", k, e)
    for batch in batches:
        values = np.concatenate([values, np.asarray(batch)])
        prior = prior.select(np.append(np.arange(prior.cell.size), [-1] * len(batch)))
        try:
            by_record, counted, entry = plan_both(values, prior, k, e, policy)
        except InfeasibleError:
            return
        assert counted.held_back == by_record.held_back
        assert counted.suppressed == by_record.suppressed
        assert math.isclose(counted.sum_of_errors, by_record.sum_of_errors, abs_tol=1e-9)
        assert (counted.static_optimum is None) == (by_record.static_optimum is None)
        if counted.static_optimum is not None:
            assert math.isclose(counted.static_optimum, by_record.static_optimum, abs_tol=1e-9)
        # Expanded to records, the counted plan is a valid release under the cell rule.
        group = counted.group[entry]
        for g in np.unique(group[group >= 0]):
            members = values[group == g]
            assert len(set(members.tolist())) >= k and members.max() - members.min() >= e
        after = prior.then(group, requirement)
        check_cells(values, after)
        # The next round builds on the counted plan (the engine path's own history).
        prior = after


@SETTINGS
@given(
    st.lists(st.integers(0, 10_000), min_size=2, max_size=60, unique=True),
    st.integers(1, 3),
    st.integers(2, 4),
    st.sampled_from([0.0, 50.0, 500.0]),
    st.sampled_from(["auto", "merge", "defer"]),
)
def test_distinct_values_give_the_same_plan(values, parts, k, e, policy):
    v = np.asarray(values, dtype=np.float64)
    prior = Cells.empty(0)
    bounds = np.linspace(0, v.size, parts + 1).astype(int)
    for stop in bounds[1:]:
        shown = v[:stop]
        prior = prior.select(np.append(np.arange(prior.cell.size), [-1] * (stop - prior.cell.size)))
        try:
            by_record, counted, entry = plan_both(shown, prior, k, e, policy)
        except InfeasibleError:
            return
        assert counted.group[entry].tolist() == by_record.group.tolist()
        assert counted.cell[entry].tolist() == by_record.cell.tolist()
        prior = prior.then(by_record.group, Requirement.ke("s", k, e))


def test_weights_are_checked():
    with np.testing.assert_raises(ConfigError):
        ke_incremental.plan_release(
            np.array([1.0, 2.0]),
            np.array([-1, -1]),
            np.array([-1, -1]),
            2,
            0,
            weight=np.array([1.0, 0.0]),
        )
    with np.testing.assert_raises(ConfigError):
        ke_incremental.plan_release(
            np.array([1.0, 2.0]),
            np.array([0, 0]),
            np.array([0, 0]),
            2,
            0,
            policy="paper",
            weight=np.array([1.0, 2.0]),
        )
