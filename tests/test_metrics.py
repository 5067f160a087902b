"""Utility metrics against hand-computed values (MODELS.md formulas)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlanon.errors import ConfigError
from sqlanon.metrics import discernibility, precision_loss, relative_error


def test_precision_loss_by_hand() -> None:
    # Two QI with heights 2 and 1; published rows at levels (0, 1) and (2, 1); one
    # suppressed record. Sum = 0/2 + 1/1 + 2/2 + 1/1 = 3, plus |Gamma| = 2 -> 5 / (3 * 2).
    assert precision_loss(np.array([[0, 1], [2, 1]]), [2, 1], suppressed=1) == pytest.approx(5 / 6)


def test_precision_loss_extremes() -> None:
    assert precision_loss(np.zeros((4, 3), dtype=int), [1, 2, 3], 0) == 0.0
    assert precision_loss(np.array([[1, 2, 3]]), [1, 2, 3], 0) == 1.0
    assert precision_loss(np.zeros((0, 2), dtype=int), [1, 1], 5) == 1.0
    assert precision_loss(np.zeros((0, 2), dtype=int), [1, 1], 0) == 0.0


def test_precision_loss_rejects_bad_shapes() -> None:
    with pytest.raises(ConfigError, match="one column per QI"):
        precision_loss(np.zeros((2, 3)), [1, 1], 0)
    with pytest.raises(ConfigError, match="heights must be positive"):
        precision_loss(np.zeros((2, 1)), [0], 0)
    with pytest.raises(ConfigError, match="suppressed"):
        precision_loss(np.zeros((2, 1)), [1], -1)


def test_discernibility_by_hand() -> None:
    # classes of 2 and 3, one suppressed record out of |D| = 6: 4 + 9 + 6.
    assert discernibility([2, 3], suppressed=1) == 19
    assert discernibility([], suppressed=0) == 0
    assert discernibility(np.array([7]), suppressed=0) == 49
    with pytest.raises(ConfigError):
        discernibility([0, 2], suppressed=0)


def test_relative_error_by_hand() -> None:
    assert relative_error(110.0, 100.0) == pytest.approx(0.1)
    assert relative_error(-90.0, -100.0) == pytest.approx(0.1)
    assert relative_error(0.0, 0.0) == 0.0
    assert math.isinf(relative_error(1.0, 0.0))


@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=4).flatmap(
        lambda heights: st.tuples(
            st.just(heights),
            st.lists(st.tuples(*[st.integers(0, h) for h in heights]), min_size=0, max_size=20),
            st.integers(0, 10),
        )
    )
)
def test_precision_loss_is_in_unit_interval_and_matches_formula(
    case: tuple[list[int], list[tuple[int, ...]], int],
) -> None:
    heights, rows, suppressed = case
    levels = np.array(rows, dtype=np.int64).reshape(len(rows), len(heights))
    value = precision_loss(levels, heights, suppressed)
    assert 0.0 <= value <= 1.0
    total = len(rows) + suppressed
    if total:
        by_hand = sum(lv / h for row in rows for lv, h in zip(row, heights, strict=True))
        expected = (by_hand + len(heights) * suppressed) / (total * len(heights))
        assert value == pytest.approx(expected)
