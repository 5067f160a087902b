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
    got = [tuple(columns[c][i].item() for c in COLUMNS) for i in range(len(columns["block"]))]
    rows = [row for i, g in enumerate(groups) for row in bounds_rows(i, g)]
    expected = sorted(rows, key=lambda r: (r[1], r[0], r[2], r[3]))  # ascending rows first
    assert got == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=300))
def test_lookups_give_the_order_statistics(values: list[int]) -> None:
    columns = bounds_columns(np.array(values, dtype=np.int64), np.zeros(len(values), np.int64))
    ordered, n = sorted(values), len(values)

    def row(r: int, descending: bool) -> dict[str, int]:
        hits = [
            i
            for i in range(len(columns["block"]))
            if columns["descending"][i] == descending
            and columns["block"][i] == (r - 1) // 64
            and columns["lo_rank"][i] <= r <= columns["hi_rank"][i]
        ]
        assert len(hits) == 1
        return {c: int(columns[c][hits[0]]) for c in COLUMNS}

    for r in range(1, n + 1):
        up, down = row(r, False), row(r, True)
        assert up["value"] == ordered[r - 1] and down["value"] == ordered[n - r]
        assert up["prior_sum"] + (r - up["lo_rank"] + 1) * up["value"] == sum(ordered[:r])
        assert down["prior_sum"] + (r - down["lo_rank"] + 1) * down["value"] == sum(
            ordered[n - r :]
        )
