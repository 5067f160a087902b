"""The incremental (k,e) planner's dynamic programme: elements, runs, and the plan they give.

Pure numpy. :func:`sqlanon.models.ke_incremental.plan_release` keeps old cells whole and
groups **elements** (clusters of overlapping cells, and new values outside them, see
:class:`Elements`) into runs of consecutive elements; :func:`best_runs` finds the optimal
runs with the same kind of DP as the static optimum, and :func:`plan_from_runs` turns
them into a :class:`~sqlanon.models.ke_plan.KePlan`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from sqlanon.models.ke_plan import KePlan
from sqlanon.models.ke_static import dense_ranks, run_starts, sum_of_errors, unique_ids

__all__ = ["Elements", "best_runs", "make_plan", "plan_from_runs", "runs_held_back"]


@dataclass(frozen=True)
class Elements:
    """The units the planner groups, in ascending value order.

    An atom is a maximal set of old cells whose value intervals overlap or touch; any group
    holding one of them can take the others at no extra cost, so they always go together.
    A new value inside an atom's interval belongs to that atom; every other new value is an
    element of its own, with every new record of that value: records of one new value
    share their fate (one group, or held back together), whether the planner sees them
    one by one or as one entry with their count (the engine path), so both plan alike.
    Elements are disjoint intervals, so the new values of consecutive elements are
    consecutive in sorted order.
    """

    left: np.ndarray  # float, per element
    right: np.ndarray
    is_atom: np.ndarray  # bool
    new_start: np.ndarray  # first index into new_records of the element's new values
    new_count: np.ndarray
    new_weight: np.ndarray  # records the element's new values stand for (weights summed)
    atom_of_cell: np.ndarray  # element index of every old cell
    new_records: np.ndarray  # record index of every new value, sorted by value
    element_of_new: np.ndarray  # element index of every entry of new_records
    last_valid_start: np.ndarray  # per element t: largest j with elements j..t a valid run

    @staticmethod
    def build(
        v: np.ndarray, cell: np.ndarray, k: int, e: float, order: np.ndarray, weight: np.ndarray
    ) -> Elements:
        """``order`` sorts ``v`` stably (``SortedValues.order``)."""
        old = cell >= 0
        count = int(cell.max()) + 1
        low = np.full(count, np.inf)
        high = np.full(count, -np.inf)
        np.minimum.at(low, cell[old], v[old])
        np.maximum.at(high, cell[old], v[old])
        by_low = np.argsort(low, kind="stable")
        reach = np.maximum.accumulate(high[by_low])
        starts_atom = np.ones(count, dtype=bool)
        starts_atom[1:] = low[by_low][1:] > reach[:-1]
        atom_sorted = np.cumsum(starts_atom) - 1
        atoms = int(atom_sorted[-1]) + 1
        atom_left = low[by_low][starts_atom]
        atom_right = np.full(atoms, -np.inf)
        np.maximum.at(atom_right, atom_sorted, high[by_low])
        atom_of_cell = np.empty(count, dtype=np.int64)
        atom_of_cell[by_low] = atom_sorted

        new_records = order[~old[order]]
        x = v[new_records]
        atom = np.searchsorted(atom_left, x, side="right") - 1
        inside = (atom >= 0) & (x <= atom_right[np.maximum(atom, 0)])
        free = np.flatnonzero(~inside)

        # A free value never equals an atom's left end (it would be inside the atom).
        free_values = np.unique(x[free])
        keys = np.concatenate([atom_left, free_values])
        order = np.argsort(keys, kind="stable")
        element_of = np.empty(len(keys), dtype=np.int64)
        element_of[order] = np.arange(len(keys))
        atom_element = element_of[:atoms]
        element_of_new = np.empty(len(x), dtype=np.int64)
        element_of_new[inside] = atom_element[atom[inside]]
        element_of_new[free] = element_of[atoms + np.searchsorted(free_values, x[free])]

        m = len(keys)
        is_atom = np.zeros(m, dtype=bool)
        is_atom[atom_element] = True
        left = keys[order]
        right = left.copy()
        right[atom_element] = atom_right
        new_start = np.searchsorted(element_of_new, np.arange(m), side="left")
        new_count = np.diff(np.append(new_start, len(x)))
        new_weight = np.zeros(m, dtype=np.float64)
        np.add.at(new_weight, element_of_new, weight[new_records])

        # Run j..t has new values x[new_start[j] : new_start[t] + new_count[t]]; it is valid
        # iff its first new value is at or before the last valid start for its last one
        # (a run starting at the element holding that start has more values: still valid).
        last_valid_start = np.full(m, -1, dtype=np.int64)
        last_new = new_start + new_count - 1
        if len(x):
            ranks = dense_ranks(x)
            start = run_starts(ranks, x, np.maximum(last_new, 0), k, e)
            has = (last_new >= 0) & (start >= 0)
            last_valid_start[has] = np.searchsorted(new_start, start[has], side="right") - 1
        return Elements(
            left=left,
            right=right,
            is_atom=is_atom,
            new_start=new_start,
            new_count=new_count,
            new_weight=new_weight,
            atom_of_cell=atom_element[atom_of_cell],
            new_records=new_records,
            element_of_new=element_of_new,
            last_valid_start=last_valid_start,
        )


_HOLD = -1  # choice of an element that holds back its new values alone

_Score = tuple[float, float]  # compared lexicographically


def best_runs(
    elements: Elements, *, lexicographic: bool, one_atom: bool, penalty: float
) -> list[tuple[int, int, bool]]:
    """Optimal runs ``(start, end, publish_new)`` over the elements, ascending.

    f[t] = best score of elements 0..t-1; a score is a pair compared lexicographically:
    (held back, error) when ``lexicographic``, else (error + penalty * held back, held
    back). A run j..t-1 that publishes its new values scores right[t-1] - left[j] on the
    error; its valid starts are j <= last_valid_start[t-1] (a prefix), and with
    ``one_atom`` also j >= the first start that leaves at most one atom in the run. Both
    bounds only grow with t, so a monotone deque gives the window minimum of
    f[j] - left[j] in O(1) amortised. Element t-1 alone may instead hold back its new
    values (an atom keeps its old cells published: its range is still paid).
    """
    hold, opening, closing = _score_terms(elements, lexicographic, penalty)
    lowest = _lowest_starts(elements, one_atom)
    choice = _choices(hold, opening, closing, elements.last_valid_start.tolist(), lowest.tolist())
    return _backtrack(choice)


def _score_terms(
    elements: Elements, lexicographic: bool, penalty: float
) -> tuple[list[_Score], list[_Score], list[_Score]]:
    """Per element, the score pairs of :func:`best_runs`: holding back its new values
    alone, and the parts of a publishing run's score paid where it opens (its first
    element) and where it closes (its last)."""
    m = len(elements.left)
    # An element's new values are held back together: an atom's, or one new value
    # (weight 1 per record; more when one entry stands for several records).
    held = elements.new_weight
    span = elements.right - elements.left
    zero = np.zeros(m)
    if lexicographic:
        hold_a, hold_b = held, span
        open_a, open_b = zero, -elements.left
        close_a, close_b = zero, elements.right
    else:
        hold_a, hold_b = span + penalty * held, held
        open_a, open_b = -elements.left, zero
        close_a, close_b = elements.right, zero
    return (
        list(zip(hold_a.tolist(), hold_b.tolist(), strict=True)),
        list(zip(open_a.tolist(), open_b.tolist(), strict=True)),
        list(zip(close_a.tolist(), close_b.tolist(), strict=True)),
    )


def _lowest_starts(elements: Elements, one_atom: bool) -> np.ndarray:
    """Per element t: the least start of a run ending at t; with ``one_atom``, the first
    that leaves at most one atom in the run, else 0."""
    m = len(elements.left)
    if one_atom:
        atoms_seen = np.cumsum(elements.is_atom)
        atom_at = np.flatnonzero(elements.is_atom)
        lowest = np.zeros(m, dtype=np.int64)
        two = atoms_seen >= 2
        lowest[two] = atom_at[atoms_seen[two] - 2] + 1
    else:
        lowest = np.zeros(m, dtype=np.int64)
    return lowest


def _choices(
    hold_list: list[_Score],
    open_list: list[_Score],
    close_list: list[_Score],
    upper: list[int],
    lower: list[int],
) -> list[int]:
    """The DP of :func:`best_runs`: ``choice[t]`` is the start of the last run of the
    best score of elements 0..t-1, or ``_HOLD`` when element t-1 holds back alone.
    A run ending at element t-1 may start at ``lower[t-1]..upper[t-1]``."""
    m = len(hold_list)
    f: list[_Score] = [(0.0, 0.0)] * (m + 1)
    choice = [_HOLD] * (m + 1)
    window: deque[tuple[float, float, int]] = deque()
    pushed = 0
    for t in range(1, m + 1):
        previous = f[t - 1]
        hold = hold_list[t - 1]
        best = (previous[0] + hold[0], previous[1] + hold[1])
        chosen = _HOLD
        top = upper[t - 1]
        while pushed <= top:
            base, add = f[pushed], open_list[pushed]
            entry = (base[0] + add[0], base[1] + add[1], pushed)
            while window and entry[:2] <= window[-1][:2]:
                window.pop()
            window.append(entry)
            pushed += 1
        bottom = lower[t - 1]
        while window and window[0][2] < bottom:
            window.popleft()
        if window:
            low_a, low_b, j = window[0]
            close = close_list[t - 1]
            candidate = (low_a + close[0], low_b + close[1])
            if candidate < best:
                best, chosen = candidate, j
        f[t] = best
        choice[t] = chosen
    return choice


def _backtrack(choice: list[int]) -> list[tuple[int, int, bool]]:
    """The runs ``(start, end, publish_new)`` of :func:`_choices`' answer, ascending."""
    runs = []
    t = len(choice) - 1
    while t > 0:
        if choice[t] == _HOLD:
            runs.append((t - 1, t, False))
            t -= 1
        else:
            runs.append((choice[t], t, True))
            t = choice[t]
    runs.reverse()
    return runs


def runs_held_back(elements: Elements, runs: list[tuple[int, int, bool]]) -> float:
    """Records the runs hold back (their entries' weights summed)."""
    held = 0.0
    for start, _end, publish in runs:
        if not publish:
            held += float(elements.new_weight[start])
    return held


def plan_from_runs(
    v: np.ndarray,
    cell: np.ndarray,
    elements: Elements,
    runs: list[tuple[int, int, bool]],
    weight: np.ndarray,
) -> KePlan:
    """The plan of ``runs``: every run that publishes its new values is a group, and so
    is every atom that holds them back (its old cells stay published); the other new
    values are held back."""
    m = len(elements.left)
    element_group = np.full(m, -1, dtype=np.int64)
    publishes = np.zeros(m, dtype=bool)
    groups = 0
    for start, end, publish in runs:
        if publish or elements.is_atom[start]:
            element_group[start:end] = groups
            publishes[start:end] = publish
            groups += 1
    group = np.full(len(v), -1, dtype=np.int64)
    old = cell >= 0
    group[old] = element_group[elements.atom_of_cell[cell[old]]]
    new_element = elements.element_of_new
    group[elements.new_records] = np.where(publishes[new_element], element_group[new_element], -1)
    return make_plan(v, group, _next_cells(cell, group), weight)


def _next_cells(cell: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Dense ids of (old cell or "new", group) for every published record; -1 otherwise."""
    published = group >= 0
    key = group[published] * (int(cell.max()) + 2) + (cell[published] + 1)
    out = np.full(len(group), -1, dtype=np.int64)
    out[published] = unique_ids(key)[1]
    return out


def make_plan(v: np.ndarray, group: np.ndarray, cell: np.ndarray, weight: np.ndarray) -> KePlan:
    """The :class:`KePlan` of the groups ``group`` (-1: held back) and cells ``cell``."""
    return KePlan(
        group=group,
        cell=cell,
        sum_of_errors=sum_of_errors(v, group),
        groups=int(group.max()) + 1 if len(group) else 0,
        held_back=int(weight[group < 0].sum()),
    )
