"""The seeds' incremental rule: faithful to their tests, and leaky as MODELS.md says."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlanon.audit_core import KeVersion, audit_ke_history
from sqlanon.errors import ConfigError, InfeasibleError
from sqlanon.models.ke import optimal_partition, sum_of_errors
from sqlanon.models.ke_paper import plan_paper

# The bundled copy of adult.data's records with no "?" and capital-loss > 0, in file order.
ADULT = Path(__file__).resolve().parents[1] / "sqlanon" / "data" / "adult_capital_loss.csv"

V1_VALUES = np.array([2, 16, 25, 26, 31, 32, 48, 50, 53, 56, 58], dtype=float)


def unpublished(n: int) -> np.ndarray:
    return np.full(n, -1, dtype=np.int64)


def valid(values, k: int, e: float) -> bool:
    return len(set(values)) >= k and max(values) - min(values) >= e


def members(group: np.ndarray) -> list[set[int]]:
    return [set(np.flatnonzero(group == g).tolist()) for g in np.unique(group[group >= 0])]


def test_models_counter_example_is_accepted_and_leaks():
    first = plan_paper(V1_VALUES, unpublished(11), unpublished(11), k=3, e=5)
    assert members(first.group) == [{0, 1, 2}, {3, 4, 5}, {6, 7, 8, 9, 10}]
    values = np.r_[V1_VALUES, 22, 30]
    second = plan_paper(values, np.r_[first.cell, -1, -1], np.r_[first.group, -1, -1], k=3, e=5)
    assert members(second.group) == [{0, 1, 2, 3, 4, 5, 11, 12}, {6, 7, 8, 9, 10}]
    assert second.sum_of_errors == 40.0 and second.groups == 2 and second.held_back == 0
    # Cells: the two old groups and the new pair stay apart inside group 0.
    assert len(set(second.cell[[0, 3, 11]].tolist())) == 3
    assert second.cell[11] == second.cell[12]

    keys = np.array([f"r{i}" for i in range(13)])
    history = [
        KeVersion(1, keys[:11], first.group, V1_VALUES),
        KeVersion(2, keys, second.group, values),
    ]
    audit = audit_ke_history(history, k=3, e=5)[-1]
    assert audit.exposed == 2 and audit.exposed_keys == ("r11", "r12")
    assert audit.by_check["pairwise"] == 0


def test_partial_cover_is_refused_even_when_definition_5_would_pass():
    # Old group {0, 10, 20}; the run {0, 10, 11, 12} covers part of its range only.
    values = np.array([0, 10, 20, 11, 12, 30, 31, 40], dtype=float)
    prev = np.array([0, 0, 0, -1, -1, -1, -1, -1])
    plan = plan_paper(values, prev, prev, k=3, e=5)
    for g in members(plan.group):
        if g & {0, 1, 2}:
            assert {0, 1, 2} <= g


def test_infeasible_when_every_run_breaks_a_test():
    prev = np.array([0, 0, 0, -1])
    with pytest.raises(InfeasibleError, match="incremental rule"):
        plan_paper(np.array([1.0, 5.0, 9.0, 7.0]), prev, prev, k=3, e=2)


def test_rejects_bad_arguments():
    with pytest.raises(ConfigError, match="disagree"):
        plan_paper(np.array([1.0, 2.0]), np.array([0, -1]), np.array([-1, -1]), k=2, e=0)
    with pytest.raises(ConfigError, match="one entry per value"):
        plan_paper(np.array([1.0, 2.0]), unpublished(1), unpublished(2), k=2, e=0)
    with pytest.raises(ConfigError, match="k must be"):
        plan_paper(np.array([1.0, 2.0]), unpublished(2), unpublished(2), k=0, e=0)
    with pytest.raises(ConfigError, match="NaN"):
        plan_paper(np.array([1.0, np.nan]), unpublished(2), unpublished(2), k=2, e=0)
    empty = plan_paper(np.zeros(0), unpublished(0), unpublished(0), k=2, e=1)
    assert empty.groups == 0 and len(empty.group) == 0


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 60), min_size=1, max_size=40),
    st.integers(2, 4),
    st.integers(0, 20),
)
def test_first_version_is_the_static_optimum(values, k, e):
    v = np.array(values, dtype=float)
    try:
        reference = sum_of_errors(v, optimal_partition(v, k, e))
    except InfeasibleError:
        with pytest.raises(InfeasibleError):
            plan_paper(v, unpublished(len(v)), unpublished(len(v)), k, e)
        return
    plan = plan_paper(v, unpublished(len(v)), unpublished(len(v)), k, e)
    assert all(valid(v[list(g)], k, e) for g in members(plan.group))
    assert plan.sum_of_errors == pytest.approx(reference)


# ------------------------------------------------ brute force of the seeds' rule (naive)


def overlaps(run: list[float], old: list[float]) -> bool:
    """Lemma 1's three cases, literally (strict inequalities as printed)."""
    lo, hi, a, b = min(run), max(run), min(old), max(old)
    top = lo > a and lo < b and hi >= b
    bottom = hi < b and hi > a and lo <= a
    shrink = hi < b and lo > a
    return top or bottom or shrink


def brute_force_paper(values, prev_group, k, e) -> float | None:
    """Least sum of errors over all contiguous partitions of the sorted (distinct) values
    that pass the seeds' three tests; None when none does."""
    order = sorted(range(len(values)), key=lambda r: values[r])
    old = [
        {r for r in range(len(values)) if prev_group[r] == g}
        for g in sorted(set(prev_group) - {-1})
    ]
    best = None
    n = len(order)
    for cuts in itertools.product([False, True], repeat=n - 1):
        bounds = [0, *[i + 1 for i, c in enumerate(cuts) if c], n]
        total = 0.0
        for a, b in itertools.pairwise(bounds):
            run = set(order[a:b])
            run_values = [values[r] for r in run]
            if not valid(run_values, k, e):
                break
            if any(overlaps(run_values, [values[r] for r in o]) for o in old):
                break
            parts = [p for o in old if run & o for p in (run & o, run - o, o - run)]
            if any(p and not valid([values[r] for r in p], k, e) for p in parts):
                break
            total += max(run_values) - min(run_values)
        else:
            best = total if best is None else min(best, total)
    return best


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=3, max_size=11, unique=True),
    st.data(),
    st.integers(2, 3),
    st.integers(0, 8),
)
def test_dp_matches_brute_force_of_the_seeds_tests(values, data, k, e):
    n_old = data.draw(st.integers(0, len(values)))
    try:
        first = plan_paper(np.array(values[:n_old], dtype=float), *[unpublished(n_old)] * 2, k, e)
        prev = np.r_[first.group, unpublished(len(values) - n_old)]
    except InfeasibleError:
        prev = unpublished(len(values))
    expected = brute_force_paper(values, prev.tolist(), k, e)
    v = np.array(values, dtype=float)
    if expected is None:
        with pytest.raises(InfeasibleError):
            plan_paper(v, prev, prev, k, e)
    else:
        assert plan_paper(v, prev, prev, k, e).sum_of_errors == pytest.approx(expected)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=12), min_size=2, max_size=5),
    st.integers(2, 4),
    st.integers(0, 10),
)
def test_append_sequences_keep_groups_valid_and_republish_everything(batches, k, e):
    values = np.zeros(0)
    group = cell = unpublished(0)
    history = []
    for number, batch in enumerate(batches, start=1):
        values = np.r_[values, np.array(batch, dtype=float)]
        extra = unpublished(len(batch))
        try:
            plan = plan_paper(values, np.r_[cell, extra], np.r_[group, extra], k, e)
        except InfeasibleError:
            break
        assert plan.held_back == 0 and (plan.group >= 0).all()  # everything (re)published
        assert plan.groups == len(members(plan.group))
        for g in members(plan.group):
            g_values = values[list(g)]
            assert valid(g_values, k, e)
            for o in members(group):  # no partial overlap with an old group's range
                assert not overlaps(g_values.tolist(), values[list(o)].tolist())
        assert plan.sum_of_errors == pytest.approx(sum_of_errors(values, plan.group))
        # Cells follow the definition: same (previous cell, group), new records apart.
        key = list(zip(np.r_[cell, extra].tolist(), plan.group.tolist(), strict=True))
        for a, b in itertools.combinations(range(len(values)), 2):
            assert (key[a] == key[b]) == (plan.cell[a] == plan.cell[b])
        group, cell = plan.group, plan.cell
        keys = np.array([f"r{i}" for i in range(len(values))])
        history.append(KeVersion(number, keys, group, values))
    if history:
        # Definition 5 against the previous version is exactly what the rule enforces.
        audits = audit_ke_history(history, k, e)
        assert all(a.by_check["pairwise"] == 0 for a in audits)


def adult_capital_loss() -> np.ndarray:
    with ADULT.open(newline="") as f:
        return np.array([float(row["capital_loss"]) for row in csv.DictReader(f)])


def test_seeds_experiment_leaks_with_error_near_the_optimum():
    """Seed 000 section 6: half the rows static, the rest appended in ten parts."""
    s = adult_capital_loss()
    assert len(s) == 1427 and len(np.unique(s)) == 89
    k, e = 3, 20
    half = len(s) // 2
    group = cell = unpublished(0)
    keys = np.array([str(i) for i in range(len(s))])
    history = []
    ends = [half, *[part[-1] + 1 for part in np.array_split(np.arange(half, len(s)), 10)]]
    for number, end in enumerate(ends, start=1):
        extra = unpublished(end - len(group))
        plan = plan_paper(s[:end], np.r_[cell, extra], np.r_[group, extra], k, e)
        group, cell = plan.group, plan.cell
        history.append(KeVersion(number, keys[:end], group, s[:end]))
    optimum = sum_of_errors(s, optimal_partition(s, k, e))
    assert 1.0 <= plan.sum_of_errors / optimum <= 2.14
    audits = audit_ke_history(history, k, e)
    assert audits[-1].exposed > 0
    assert audits[-1].by_check["pairwise"] == 0
