"""The seeds' incremental rule: faithful to their tests, and leaky as MODELS.md says."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlanon.attacker.history import AttackedRelease
from sqlanon.attacker.replay import audit_domain
from sqlanon.errors import ConfigError, InfeasibleError
from sqlanon.models.cells import Requirement
from sqlanon.models.ke_paper import plan_paper
from sqlanon.models.ke_static import optimal_partition, sum_of_errors

# The bundled copy of adult.data's records with no "?" and capital-loss > 0, in file order.
ADULT = Path(__file__).resolve().parents[1] / "sqlanon" / "data" / "adult_capital_loss.csv"

V1_VALUES = np.array([2, 16, 25, 26, 31, 32, 48, 50, 53, 56, 58], dtype=float)


def unpublished(n: int) -> np.ndarray:
    return np.full(n, -1, dtype=np.int64)


def valid(values, k: int, e: float) -> bool:
    return len(set(values)) >= k and max(values) - min(values) >= e


def members(group: np.ndarray) -> list[set[int]]:
    return [set(np.flatnonzero(group == g).tolist()) for g in np.unique(group[group >= 0])]


def audit(groups: list[np.ndarray], values: np.ndarray, k: int, e: float) -> list:
    """The domain attacker over versions of one (k,e) family (record i = value i)."""
    n = values.size
    releases = [
        AttackedRelease(np.r_[g, np.full(n - g.size, -1)], Requirement.ke("s", k, e))
        for g in groups
    ]
    return audit_domain({"s": values}, releases)


def definition_5_failures(prev: np.ndarray, group: np.ndarray, values, k, e) -> set[int]:
    """The seeds' pairwise test between consecutive versions: for each new group G and
    old group O sharing records, G ∩ O, G - O and O - G must satisfy (k,e) when
    non-empty; the records of a failing part."""
    prev = np.r_[prev, np.full(group.size - prev.size, -1)]
    out: set[int] = set()
    for new in members(group):
        for old in members(prev):
            if new & old:
                for part in (new & old, new - old, old - new):
                    if part and not valid(values[list(part)].tolist(), k, e):
                        out |= part
    return out


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

    last = audit([first.group, second.group], values, k=3, e=5)[-1]
    assert np.flatnonzero(last.exposed).tolist() == [11, 12]
    assert np.flatnonzero(last.by_subtraction).tolist() == [11, 12]
    assert definition_5_failures(first.group, second.group, values, 3, 5) == set()


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


def seeds_order(values, prev_group) -> list[int]:
    """D_n sorted by S as the module reads the seeds for ties: by value, then by the old
    partition (ranked by its (min, max, id)), new records last, then input position."""
    ids = sorted(set(prev_group) - {-1})
    span = {
        g: (min(values[r] for r in range(len(values)) if prev_group[r] == g),
            max(values[r] for r in range(len(values)) if prev_group[r] == g), g)
        for g in ids
    }  # fmt: skip
    rank = {g: i for i, g in enumerate(sorted(ids, key=lambda g: span[g]))}
    return sorted(
        range(len(values)),
        key=lambda r: (values[r], rank.get(prev_group[r], len(ids)), r),
    )


def brute_force_paper(values, prev_group, k, e) -> float | None:
    """Least sum of errors over all contiguous partitions of D_n sorted as the seeds
    order it (:func:`seeds_order`, ties included) that pass the seeds' three tests;
    None when none does."""
    order = seeds_order(values, prev_group)
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
    for batch in batches:
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
        # Definition 5 against the previous version is exactly what the rule enforces.
        assert definition_5_failures(group, plan.group, values, k, e) == set()
        group, cell = plan.group, plan.cell
        history.append(group)
    if history:
        # ... and it is not enough: the domain attacker may still pin records (never
        # more than the cells allow).
        for a in audit(history, values, k, e):
            assert not (a.by_subtraction & ~a.by_cell).any()


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
    history = []
    ends = [half, *[part[-1] + 1 for part in np.array_split(np.arange(half, len(s)), 10)]]
    for end in ends:
        extra = unpublished(end - len(group))
        plan = plan_paper(s[:end], np.r_[cell, extra], np.r_[group, extra], k, e)
        assert definition_5_failures(group, plan.group, s[:end], k, e) == set()
        group, cell = plan.group, plan.cell
        history.append(group)
    optimum = sum_of_errors(s, optimal_partition(s, k, e))
    assert 1.0 <= plan.sum_of_errors / optimum <= 2.14
    last = audit(history, s, k, e)[-1]
    assert last.exposed.sum() > 0 and last.by_subtraction.sum() > 0


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 12), min_size=3, max_size=11),
    st.data(),
    st.integers(2, 3),
    st.integers(0, 5),
)
def test_dp_matches_brute_force_with_tied_values(values, data, k, e):
    """Tied values (a few distinct ones, as in real data): the DP still finds the least
    error the seeds' tests allow over the seeds' order of D_n."""
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


def test_table_4_1_of_seed_001():
    """Seed 001's Table 4.1 (k = 3): D_0 = Tom 84,000 ... Paul 90,000 gives error 5,000
    in {Tom, Mike, Alice} {Bob, Kate, Paul}; D_1 adds Ann 82,000, Jo 83,000 and Oven
    85,000 and, since {Oven, Mike, Alice} would overlap {Tom, Mike, Alice}, gives error
    7,000 in {Ann, Jo, Tom, Oven, Mike, Alice} {Bob, Kate, Paul}."""
    salaries = {"Ann": 82_000, "Jo": 83_000, "Tom": 84_000, "Oven": 85_000, "Mike": 86_000}
    salaries |= {"Alice": 87_000, "Bob": 88_000, "Kate": 89_000, "Paul": 90_000}
    d0_names = ["Tom", "Mike", "Alice", "Bob", "Kate", "Paul"]
    d1_names = list(salaries)
    for e in (1000, 2000):  # the table holds for any e up to the groups' 2,000 range
        d0 = np.array([salaries[x] for x in d0_names], dtype=float)
        v0 = plan_paper(d0, unpublished(6), unpublished(6), 3, e)
        assert v0.sum_of_errors == 5000
        assert members(v0.group) == [{0, 1, 2}, {3, 4, 5}]
        prev = np.full(9, -1, dtype=np.int64)
        prev[[d1_names.index(x) for x in d0_names]] = v0.group
        d1 = np.array([salaries[x] for x in d1_names], dtype=float)
        v1 = plan_paper(d1, prev, prev, 3, e)
        assert v1.sum_of_errors == 7000
        groups = [{d1_names[i] for i in m} for m in members(v1.group)]
        assert groups == [{"Ann", "Jo", "Tom", "Oven", "Mike", "Alice"}, {"Bob", "Kate", "Paul"}]
