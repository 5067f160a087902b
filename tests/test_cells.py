"""Cells seen from another list of records (``Cells.select``) keep every cell's
requirement, also of cells none of the selected records belongs to."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlanon.errors import ConfigError
from sqlanon.models.cells import Cells


@st.composite
def cells_and_rows(draw: st.DrawFn) -> tuple[Cells, np.ndarray]:
    count = draw(st.integers(1, 5))
    cell = draw(st.lists(st.integers(-1, count - 1), min_size=1, max_size=12))
    cell[draw(st.integers(0, len(cell) - 1))] = count - 1  # the highest cell has a record
    distinct = draw(st.lists(st.integers(0, 4), min_size=count, max_size=count))
    spread = draw(st.lists(st.floats(0, 10), min_size=count, max_size=count))
    cells = Cells(
        np.asarray(cell),
        ("s",),
        np.asarray(distinct).reshape(count, 1),
        np.asarray(spread).reshape(count, 1),
    )
    rows = draw(st.lists(st.integers(-1, len(cell) - 1), max_size=12))
    return cells, np.asarray(rows, dtype=np.int64)


@given(cells_and_rows())
def test_select_keeps_every_cell_and_its_requirement(case: tuple[Cells, np.ndarray]) -> None:
    cells, rows = case
    chosen = cells.select(rows)
    expected = [cells.cell[r] if r >= 0 else -1 for r in rows.tolist()]
    assert chosen.cell.tolist() == expected
    assert chosen.count == cells.count
    for c in range(cells.count):
        assert chosen.requirement(c) == cells.requirement(c)


def test_select_of_records_missing_the_highest_cell() -> None:
    """The crash of issue 26: the records kept all miss the highest-numbered cell."""
    cells = Cells(np.array([0, 1]), ("s",), np.array([[2], [3]]), np.array([[0.0], [5.0]]))
    chosen = cells.select(np.array([0]))
    assert chosen.cell.tolist() == [0] and chosen.count == 2
    assert chosen.requirement(1) == cells.requirement(1)


def test_a_record_in_a_cell_without_requirements_is_refused() -> None:
    with pytest.raises(ConfigError, match="requirements cover 1"):
        Cells(np.array([0, 1]), ("s",), np.array([[2]]), np.array([[0.0]]))
