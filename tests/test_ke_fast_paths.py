"""The (k,e) core's fast paths give exactly what the simple code they replace gave.

Each reference below is the straightforward version (a sort where the fast path avoids
one, a loop where it vectorises); the release must not change by a single record or bit.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.errors import InfeasibleError
from sqlanon.models import ke_incremental, ke_shuffle, ke_static
from sqlanon.release.ke_rows import _by_group_and_value
from sqlanon.release.row_path import random_order

SETTINGS = settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])

# Few distinct values (long runs of duplicates, like real data), signed zeros included.
value_lists = st.lists(
    st.one_of(
        st.integers(-20, 60).map(float),
        st.sampled_from([-0.0, 0.0, 0.5, 1e9]),
        st.floats(-100, 100, allow_nan=False),
    ),
    min_size=1,
    max_size=300,
)
ks = st.integers(2, 6)
es = st.sampled_from([0.0, 0.5, 1.0, 3.0, 10.0, 40.0])


def sorted_data(values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    s = np.sort(np.asarray(values, dtype=np.float64), kind="stable")
    return s, ke_static.dense_ranks(s)


def reference_run_starts(ranks, s, last, k, e):
    by_rank = np.searchsorted(ranks, ranks[last] - (k - 1), side="right") - 1
    by_range = np.searchsorted(s, s[last] - e, side="right") - 1
    return np.minimum(by_rank, by_range)


@SETTINGS
@given(value_lists)
def test_stable_order_is_numpys_stable_argsort(values):
    v = np.asarray(values, dtype=np.float64)
    data = ke_static.SortedValues.of(v)
    expected = np.argsort(v, kind="stable")
    assert data.order.tolist() == expected.tolist()
    assert data.s.tobytes() == v[expected].tobytes()  # same bits, signed zeros included
    assert data.ranks.tolist() == ke_static.dense_ranks(v[expected]).tolist()


@SETTINGS
@given(value_lists, ks, es)
def test_run_starts_match_binary_search(values, k, e):
    s, ranks = sorted_data(values)
    last = np.arange(len(s))
    got = ke_static.run_starts(ranks, s, last, k, e)
    assert got.tolist() == reference_run_starts(ranks, s, last, k, e).tolist()


@SETTINGS
@given(value_lists, ks, es, st.integers(1, 6))
def test_blocked_prefix_minima_equal_the_loop(values, k, e, size):
    s, ranks = sorted_data(values)
    limit = ke_static.run_starts(ranks, s, np.arange(len(s)), k, e)
    step = np.empty(len(s))
    step[0] = 0.0
    step[1:] = s[:-1] - s[1:]
    loop = ke_static._best_starts_loop(s, limit, step)
    # small block sizes send most entries through the vectorised blocks
    blocked = ke_static._best_starts_blocked(
        s, limit, step, ke_static._long_block_starts(limit, size)
    )
    assert list(blocked) == loop


@SETTINGS
@given(value_lists, ks, es)
def test_static_optimum_is_the_sum_of_errors_of_the_optimal_partition(values, k, e):
    v = np.asarray(values, dtype=np.float64)
    try:
        expected = ke_static.sum_of_errors(v, ke_static.optimal_partition(v, k, e))
    except InfeasibleError:
        expected = None
    got = ke_static.static_optimum_sorted(ke_static.SortedValues.of(v), k, e)
    assert got == expected
    if got is not None:
        assert math.copysign(1.0, got) == math.copysign(1.0, expected)


@SETTINGS
@given(st.lists(st.integers(0, 40), max_size=200), st.integers(0, 2))
def test_unique_ids_match_numpy_unique(ids, spread):
    array = np.asarray(ids, dtype=np.int64) * [1, 3, 10**9][spread]
    unique, inverse = ke_static.unique_ids(array)
    expected_unique, expected_inverse = np.unique(array, return_inverse=True)
    assert unique.tolist() == expected_unique.tolist()
    assert inverse.tolist() == expected_inverse.tolist()


def reference_cell_stats(value, cell, count):
    order = np.lexsort((value, cell))
    c, s = cell[order], value[order]
    first = np.ones(len(s), dtype=bool)
    first[1:] = (c[1:] != c[:-1]) | (s[1:] != s[:-1])
    low = np.full(count, np.inf)
    high = np.full(count, -np.inf)
    np.minimum.at(low, c, s)
    np.maximum.at(high, c, s)
    return np.bincount(c[first], minlength=count), low, high


def check_cell_stats(cell: np.ndarray, value: np.ndarray) -> None:
    ids, dense = np.unique(cell, return_inverse=True)
    order = np.argsort(value, kind="stable")
    got = ke_incremental._cell_stats(value[order], dense[order], len(ids))
    for mine, expected in zip(got, reference_cell_stats(value, dense, len(ids)), strict=True):
        assert mine.tolist() == expected.tolist()


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 12)), min_size=1, max_size=200))
def test_cell_stats_match_a_lexsort(pairs):
    cell = np.asarray([c for c, _ in pairs], dtype=np.int64)
    check_cell_stats(cell, np.asarray([x for _, x in pairs], dtype=np.float64))


def test_cell_stats_past_the_16_bit_sort():
    rng = np.random.default_rng(3)
    cell = rng.integers(0, 40_000, 120_000)
    check_cell_stats(cell, rng.integers(0, 50, len(cell)).astype(np.float64))


@SETTINGS
@given(
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=300),
    st.integers(0, 64),
    st.booleans(),
)
def test_key_argsort_matches_numpy(keys, random_bits, share_top_bits):
    array = np.asarray(keys, dtype=np.uint64)
    if share_top_bits and len(array) > 1:  # two keys equal above the index bits
        array[1] = array[0] ^ np.uint64(1)
    # the packed sort runs only when the keys are distinct above the index bits
    got = ke_shuffle.argsort_random_keys(array, random_bits)
    assert got.tolist() == np.argsort(array).tolist()
    got = ke_shuffle.argsort_random_keys(array, random_bits, stable=True)
    assert got.tolist() == np.argsort(array, kind="stable").tolist()


def test_seeded_shuffle_is_unchanged():
    # the packed sort must give the permutation numpy's argsort gave
    group = np.repeat(np.arange(40), 50)
    rng = np.random.default_rng(9)
    group = group[rng.permutation(len(group))]
    p = ke_shuffle.permute_within_groups(group, ke_shuffle.secure_rng(123))
    keys_rng = ke_shuffle.secure_rng(123)
    group_bits = int(group.max() + 2).bit_length()
    keys = ((group + 1).astype(np.uint64) << np.uint64(64 - group_bits)) | (
        keys_rng.uint64(len(group)) >> np.uint64(group_bits)
    )
    slots = np.argsort(group, kind="stable")
    expected = np.empty(len(group), dtype=np.int64)
    expected[slots] = np.argsort(keys)
    assert p.tolist() == expected.tolist()


@SETTINGS
@given(st.lists(st.tuples(st.integers(-1, 5), st.integers(0, 9)), max_size=200))
def test_bounds_input_order_is_the_lexsort_of_the_published(pairs):
    group = np.asarray([g for g, _ in pairs], dtype=np.int64)
    values = np.asarray([x for _, x in pairs], dtype=np.float64)
    order = _by_group_and_value(values, group)
    assert sorted(order.tolist()) == np.flatnonzero(group >= 0).tolist()
    expected = np.lexsort((values, group))
    expected = expected[group[expected] >= 0]
    assert group[order].tolist() == group[expected].tolist()
    assert values[order].tolist() == values[expected].tolist()


def test_random_row_ranks_are_a_permutation_drawn_anew():
    """Every release draws its row ranks from the OS; no seed can fix them (issue 23)."""
    for n in (0, 1, 7, 5000):
        assert sorted(random_order(n).tolist()) == list(range(n))
    assert random_order(1000).tolist() != random_order(1000).tolist()  # 1000! orders
