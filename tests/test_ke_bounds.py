"""The bounds table's rows (sqlanon/models/ke_bounds.py) against the rank-by-rank
reference of the rewriter tests, and against the sums they stand for."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlanon.models.ke_bounds import COLUMNS, bounds_columns
from tests.test_rewrite_support import bounds_rows

groups_of_values = st.lists(
    st.lists(st.integers(-5, 5) | st.integers(-(10**6), 10**6), min_size=1, max_size=200),
    min_size=0,
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(groups_of_values)
def test_rows_match_the_reference(groups: list[list[int]]) -> None:
    values = np.array([v for g in groups for v in g], dtype=np.int64)
    group = np.array([i for i, g in enumerate(groups) for _ in g], dtype=np.int64)
    order = np.random.default_rng(len(values)).permutation(len(values))
    columns = bounds_columns(values[order], group[order])
    got = [tuple(int(columns[c][i]) for c in COLUMNS) for i in range(len(columns["block"]))]
    expected = [row for i, g in enumerate(groups) for row in bounds_rows(i, g)]
    assert got == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=300))
def test_lookups_give_the_order_statistics(values: list[int]) -> None:
    columns = bounds_columns(np.array(values, dtype=np.int64), np.zeros(len(values), np.int64))
    ordered, n = sorted(values), len(values)

    def row(r: int) -> dict[str, int]:
        hits = [
            i
            for i in range(len(columns["block"]))
            if columns["block"][i] == (r - 1) // 64
            and columns["lo_rank"][i] <= r <= columns["hi_rank"][i]
        ]
        assert len(hits) == 1
        return {c: int(columns[c][hits[0]]) for c in COLUMNS}

    for r in range(1, n + 1):
        at = row(r)
        assert at["value"] == ordered[r - 1]
        assert at["below"] + (r - at["lo_rank"] + 1) * at["value"] == sum(ordered[:r])
        top = row(n - r + 1)
        high = at["total"] - (top["below"] + (n - r + 1 - top["lo_rank"]) * top["value"])
        assert high == sum(ordered[n - r :])
