"""Property tests of the pure (k,e) model: static optimum, release planner, shuffle."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sqlanon.errors import BrokenCellError, ConfigError, InfeasibleError
from sqlanon.models import ke_incremental, ke_plan, ke_shuffle, ke_static
from sqlanon.models.cells import Cells, Requirement
from tests import ke_bruteforce as brute

SETTINGS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])

small_values = st.lists(st.integers(0, 12), min_size=1, max_size=7)
ks = st.integers(2, 4)
es = st.integers(0, 10)


# ------------------------------------------------------------------------ static optimum


@SETTINGS
@given(small_values, ks, es)
def test_static_optimum_equals_brute_force_over_all_set_partitions(values, k, e):
    expected = brute.static_optimum(values, k, e)
    v = np.asarray(values)
    if expected is None:
        with pytest.raises(InfeasibleError):
            ke_static.optimal_partition(v, k, e)
        return
    group = ke_static.optimal_partition(v, k, e)
    assert group.dtype == np.int64 and group.shape == v.shape
    assert ke_static.sum_of_errors(v, group) == pytest.approx(expected)
    ids = np.unique(group)
    assert ids.tolist() == list(range(len(ids)))
    for g in ids:
        assert brute.valid(v[group == g].tolist(), k, e)
    minima = [v[group == g].min() for g in ids]
    assert minima == sorted(minima)


@settings(deadline=None, max_examples=60)
@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=300), ks, st.floats(0, 1e5))
def test_static_groups_are_valid_on_larger_float_inputs(values, k, e):
    v = np.asarray(values)
    assume(len(np.unique(v)) >= k and v.max() - v.min() >= e)
    group = ke_static.optimal_partition(v, k, e)
    for g in np.unique(group):
        assert brute.valid(v[group == g].tolist(), k, e)


def test_infeasible_messages_say_what_is_missing():
    with pytest.raises(InfeasibleError, match="k=3 needs 3 distinct values.*has 2"):
        ke_static.optimal_partition(np.array([1, 1, 2]), 3, 0)
    with pytest.raises(InfeasibleError, match="e=10 needs a range of at least 10.*spans 4"):
        ke_static.optimal_partition(np.array([1, 3, 5]), 2, 10)


@pytest.mark.parametrize(
    ("values", "k", "e"),
    [
        ([1, 2], 1, 0),
        ([1, 2], 2.5, 0),
        ([1, 2], 2, -1),
        ([1, 2], 2, math.nan),
        ([1, math.nan], 2, 0),
    ],
)
def test_bad_arguments_raise_config_error(values, k, e):
    with pytest.raises(ConfigError):
        ke_static.optimal_partition(np.asarray(values, dtype=float), k, e)


def test_empty_input_has_no_groups():
    assert ke_static.optimal_partition(np.zeros(0), 2, 1).tolist() == []


def test_sum_of_errors_ignores_held_back_records():
    assert ke_static.sum_of_errors(np.array([1, 5, 100, 2, 9]), np.array([0, 0, -1, 1, 1])) == 11.0


# ------------------------------------------------------------------ incremental releases


class History:
    """The planner's caller: keeps state and checks every cell from the release history."""

    def __init__(self, k: int, e: float) -> None:
        self.k, self.e = k, e
        self.values = np.zeros(0)
        self.prev_cell = np.zeros(0, dtype=np.int64)
        self.prev_group = np.zeros(0, dtype=np.int64)
        self.first: list[int] = []
        self.groups: list[list[int]] = []
        self.version = 0

    def append(self, batch: list[int]) -> None:
        self.values = np.concatenate([self.values, np.asarray(batch, dtype=float)])
        minus = np.full(len(batch), -1, dtype=np.int64)
        self.prev_cell = np.concatenate([self.prev_cell, minus])
        self.prev_group = np.concatenate([self.prev_group, minus])
        self.first += [0] * len(batch)
        self.groups += [[] for _ in batch]

    def plan(self, policy: str, hold_penalty: float | None = None) -> ke_plan.KePlan:
        return ke_incremental.plan_release(
            self.values, self.prev_cell, self.prev_group, self.k, self.e, policy, hold_penalty
        )

    def publish(self, plan: ke_plan.KePlan) -> None:
        """Check ``plan`` against the cell rule and the KePlan contract, then record it."""
        self.version += 1
        v, group = self.values, plan.group
        assert group.dtype == np.int64 and plan.cell.dtype == np.int64
        assert (group[self.prev_cell >= 0] >= 0).all(), "a published record was dropped"
        assert ((group < 0) == (plan.cell < 0)).all()
        assert plan.held_back == int((group < 0).sum())
        ids = np.unique(group[group >= 0])
        assert ids.tolist() == list(range(len(ids))) and plan.groups == len(ids)
        minima = [v[group == g].min() for g in ids]
        assert minima == sorted(minima)
        assert plan.sum_of_errors == pytest.approx(ke_static.sum_of_errors(v, group))
        for i in np.flatnonzero(group >= 0):
            if not self.groups[i]:
                self.first[i] = self.version
            self.groups[i].append(int(group[i]))
        cells: dict[tuple, list[int]] = defaultdict(list)
        for i in np.flatnonzero(group >= 0):
            cells[(self.first[i], tuple(self.groups[i]))].append(i)
        for members in cells.values():
            assert brute.valid(v[members].tolist(), self.k, self.e), "a cell broke (k,e)"
            assert len(set(plan.cell[members].tolist())) == 1
        assert len(np.unique(plan.cell[group >= 0])) == len(cells)
        self.prev_cell, self.prev_group = plan.cell.copy(), group.copy()

    def old_cells(self) -> list[list[float]]:
        return [
            self.values[self.prev_cell == c].tolist() for c in np.unique(self.prev_cell) if c >= 0
        ]

    def new_values(self) -> list[float]:
        return self.values[self.prev_cell < 0].tolist()


@st.composite
def growing_tables(draw, max_initial=10, max_batch=5):
    k = draw(ks)
    e = draw(es)
    initial = draw(st.lists(st.integers(0, 30), min_size=2, max_size=max_initial))
    batches = draw(
        st.lists(st.lists(st.integers(0, 30), max_size=max_batch), min_size=1, max_size=4)
    )
    return k, e, initial, batches


def start(k, e, initial, policy) -> History | None:
    """Version 1, or None (after checking the error) when the first batch is infeasible."""
    history = History(k, e)
    history.append(initial)
    if not brute.valid(initial, k, e):
        with pytest.raises(InfeasibleError):
            history.plan(policy)
        return None
    plan = history.plan(policy)
    assert plan.held_back == 0
    assert plan.sum_of_errors == pytest.approx(brute.static_optimum(initial, k, e) or 0.0)
    history.publish(plan)
    return history


@settings(deadline=None, max_examples=100)
@given(growing_tables(), st.sampled_from(["auto", "merge", "defer"]))
def test_no_release_sequence_breaks_a_cell(table, policy):
    k, e, initial, batches = table
    history = start(k, e, initial, policy)
    if history is None:
        return
    for batch in batches:
        history.append(batch)
        new = history.new_values()
        atom_of = dict(
            zip(
                np.unique(history.prev_cell[history.prev_cell >= 0]).tolist(),
                brute.atoms(history.old_cells()),
                strict=True,
            )
        )
        plan = history.plan(policy)
        old_cell = history.prev_cell.copy()
        history.publish(plan)
        if policy == "merge":
            expected = 0 if new and brute.valid(new, k, e) else len(new)
            assert plan.held_back == expected
        if policy == "defer":
            for g in np.unique(plan.group[plan.group >= 0]):
                cells = old_cell[(plan.group == g) & (old_cell >= 0)]
                assert len({atom_of[c] for c in cells.tolist()}) <= 1, "defer merged atoms"


def small_enough(history: History) -> bool:
    return len(history.old_cells()) + len(history.new_values()) <= 6


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    growing_tables(max_initial=8, max_batch=4),
    st.sampled_from(["auto", "merge", "defer"]),
    st.integers(0, 20),
)
def test_planner_is_optimal_among_safe_releases_keeping_cells_whole(table, policy, penalty):
    k, e, initial, batches = table
    history = start(k, e, initial, "merge")
    if history is None:
        return
    for batch in batches:
        history.append(batch)
        if not small_enough(history):
            return
        options = list(
            brute.release_options(
                history.old_cells(), history.new_values(), k, e, one_atom=policy == "defer"
            )
        )
        if policy == "auto":
            plan = history.plan("auto", float(penalty))
            best = min(cost + penalty * held for held, cost in options)
            assert plan.sum_of_errors + penalty * plan.held_back == pytest.approx(best)
        else:
            plan = history.plan(policy)
            held, cost = min(options)
            assert plan.held_back == held
            assert plan.sum_of_errors == pytest.approx(cost)
        history.publish(plan)


def test_seed_counter_example_is_refused():
    # MODELS.md: v1 {2,16,25} {26,31,32} {48,50,53,56,58}; 22 and 30 arrive (k=3, e=5).
    history = History(3, 5)
    history.append([2, 16, 25, 26, 31, 32, 48, 50, 53, 56, 58])
    plan = history.plan("merge")
    assert plan.groups == 3
    history.publish(plan)
    history.append([22, 30])
    for policy in ("auto", "merge", "defer"):
        plan = history.plan(policy)
        assert plan.group[-2:].tolist() == [-1, -1]  # 2 distinct values < k: held back
    history.publish(history.plan("merge"))
    history.append([40])
    plan = history.plan("merge")
    assert plan.held_back == 0  # {22, 30, 40} is a valid new cell
    history.publish(plan)


def test_previously_held_back_records_are_offered_again():
    history = History(2, 1)
    history.append([1, 2, 10, 11])
    history.publish(history.plan("defer"))
    history.append([5])
    plan = history.plan("defer")
    assert plan.held_back == 1
    history.publish(plan)
    history.append([6])
    plan = history.plan("defer")
    assert plan.held_back == 0 and plan.group[4] == plan.group[5] >= 0
    history.publish(plan)


def test_default_auto_caps_held_back_rows():
    rng = np.random.default_rng(3)
    history = History(5, 20)
    history.append(rng.integers(0, 1000, 400).tolist())
    history.publish(history.plan("auto"))
    for _ in range(5):
        history.append(rng.integers(0, 1000, 40).tolist())
        plan = history.plan("auto")
        assert plan.held_back <= ke_incremental.HELD_BACK_CAP * len(history.values)
        history.publish(plan)


def test_paper_policy_is_dispatched():
    history = History(2, 1)
    history.append([1, 2, 10, 11])
    history.publish(history.plan("paper"))
    history.append([5, 7])
    plan = history.plan("paper")
    assert isinstance(plan, ke_plan.KePlan) and (plan.group[:4] >= 0).all()


def test_planner_refuses_bad_state_and_arguments():
    values = np.array([1.0, 2.0, 3.0])
    cell = np.array([0, 0, -1])
    group = np.array([0, 0, -1])
    with pytest.raises(ConfigError, match="unknown policy"):
        ke_incremental.plan_release(values, cell, group, 2, 0, "fast")
    with pytest.raises(ConfigError, match="hold_penalty only applies"):
        ke_incremental.plan_release(values, cell, group, 2, 0, "merge", hold_penalty=1.0)
    with pytest.raises(ConfigError, match="both be -1"):
        ke_incremental.plan_release(values, cell, np.array([0, -1, -1]), 2, 0, "merge")
    with pytest.raises(ConfigError, match="same prev_group"):
        ke_incremental.plan_release(values, cell, np.array([0, 1, -1]), 2, 0, "merge")
    with pytest.raises(BrokenCellError, match="below k=3, e=0"):
        ke_incremental.plan_release(values, cell, group, 3, 0, "merge")
    with pytest.raises(ConfigError, match="one entry per value"):
        ke_incremental.plan_release(values, cell[:2], group[:2], 2, 0, "merge")


# ----------------------------------------------------------------------------- shuffle


@settings(deadline=None, max_examples=100)
@given(st.lists(st.integers(-1, 4), max_size=60), st.integers(0, 2**32))
def test_permutation_stays_within_groups(groups, seed):
    group = np.asarray(groups, dtype=np.int64)
    p = ke_shuffle.permute_within_groups(group, ke_shuffle.secure_rng(seed))
    assert sorted(p.tolist()) == list(range(len(group)))
    assert (group[p] == group).all()
    held = np.flatnonzero(group < 0)
    assert (p[held] == held).all()
    again = ke_shuffle.permute_within_groups(group, ke_shuffle.secure_rng(seed))
    assert (p == again).all()


def test_unseeded_permutations_come_from_the_os_and_differ():
    group = np.zeros(30, dtype=np.int64)
    rng = ke_shuffle.secure_rng(None)
    assert not rng.seeded
    first = ke_shuffle.permute_within_groups(group, rng)
    second = ke_shuffle.permute_within_groups(group, ke_shuffle.secure_rng())
    assert sorted(first.tolist()) == list(range(30))
    assert (first != second).any()


def test_permutation_is_uniform_on_a_small_group():
    counts = Counter(
        tuple(
            ke_shuffle.permute_within_groups(np.array([0, 0, 0]), ke_shuffle.secure_rng(s)).tolist()
        )
        for s in range(6000)
    )
    assert len(counts) == 6
    assert all(850 < c < 1150 for c in counts.values())


def test_random_row_order_is_a_permutation():
    order = ke_shuffle.secure_rng(1).permutation(10)
    assert sorted(order.tolist()) == list(range(10))


def test_shuffled_values_stay_in_their_group():
    values = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    group = np.array([0, 0, 1, 1, 1])
    p = ke_shuffle.permute_within_groups(group, ke_shuffle.secure_rng(5))
    shown = values[p]
    assert sorted(shown[:2].tolist()) == [10.0, 20.0]
    assert sorted(shown[2:].tolist()) == [30.0, 40.0, 50.0]


def test_plan_in_cells_keeps_old_cells_whole_or_leaves_them_out() -> None:
    """Cells an lHD release left (requirement: 2 distinct values of v) join a (k,e)
    release whole when they meet (k,e) on v, else stay out whole (suppressed: they were
    published); new records are planned as plan_release plans them."""
    cells = Cells.empty(7).then(np.array([0, 0, 1, 1, -1, -1, -1]), Requirement.lhd(["v"], 2))
    values = np.array([100, 900, 110, 111, 500, 600, 700])
    plan = ke_incremental.plan_in_cells(values, cells, "v", 2, 5)
    assert plan.group[0] == plan.group[1] >= 0  # {100, 900}: kept whole
    assert plan.group[2] == plan.group[3] == -1  # {110, 111}: spans 1 < e, left out
    assert (plan.suppressed, plan.held_back) == (2, 0)
    assert (plan.group[4:] >= 0).all()
    nothing = ke_incremental.plan_in_cells(values[:4], cells.select(np.arange(4)), "v", 3, 5)
    assert (nothing.group == -1).all() and (nothing.suppressed, nothing.held_back) == (4, 0)
