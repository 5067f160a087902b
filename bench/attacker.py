"""An attacker over a sequence of releases of one domain, written in the bench on purpose:
it does not use the planners' bookkeeping (``sqlanon.models.cells``), only each
release's groups and what it promised (MODELS.md, "Cells").

Records are numbered 0..n-1 over the whole domain (appended rows included from the
start: a record no release has published yet is simply never in a group). A
:class:`Release` gives every record's group or class (-1: absent) and its requirement per
sensitive attribute it published (lHD: ``l`` distinct values of each; (k,e): ``k``
distinct values and a spread ``max - min >= e`` of S). Three checks, after the attacker
holds releases 1..t:

- **cell** (the worst case, the rule sqlanon must meet): a record's history is its group
  in every release so far (-1 once absent); the records ever published with the same
  history form a cell, whose requirement is, per attribute, the largest over the releases
  that published it. A cell whose multiset of a required attribute has fewer distinct
  values, or a smaller spread, than required exposes its records.
- **subtraction** (the multiset attacker): every group is a known set (its members and,
  per attribute its release published, their multiset). Whenever known set A lies
  strictly inside known set B and both know attribute a, B - A is known with multiset
  B_a - A_a; repeated to a fixed point, or until ``budget`` derived sets per attribute
  (``DEFAULT_BUDGET``: on independent re-releases the known sets multiply and the search
  grows much faster than linearly past it; a stopped search gives a lower bound,
  ``subtraction_complete=False``), or until every record attacked is exposed.
  A record's candidates for a are the intersection of the distinct values of every known
  set holding it that knows a; fewer distinct candidates, or a candidate spread smaller,
  than its cell requires exposes it.
- **comparison**: the same without subtraction (seed 002's comparison attack).

Known sets are unions of cells (cells refine every group and differences of unions of
cells are unions of cells), so a record's candidates always hold its own cell's values:
comparison <= subtraction <= cell, and only records of failing cells need attacking.
Each attribute is attacked on its own here (links between attributes through rows that
show several are left to the cell check, which covers them).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

DEFAULT_BUDGET = 10_000


@dataclass(frozen=True)
class Release:
    """``group[i]``: record i's group (-1 absent); ``distinct[a]`` / ``spread[a]``: what
    the release promised of attribute ``a`` (its published sensitive attributes)."""

    group: np.ndarray
    distinct: Mapping[str, int]
    spread: Mapping[str, float] = field(default_factory=dict)

    @staticmethod
    def lhd(group: np.ndarray, sensitive: Sequence[str], l: int) -> Release:  # noqa: E741
        return Release(np.asarray(group, dtype=np.int64), dict.fromkeys(sensitive, l))

    @staticmethod
    def ke(group: np.ndarray, sensitive: str, k: int, e: float) -> Release:
        return Release(np.asarray(group, dtype=np.int64), {sensitive: k}, {sensitive: e})

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.distinct) | set(self.spread)))


@dataclass(frozen=True)
class Exposure:
    """Per record: exposed by each check (after the releases given)."""

    by_cell: np.ndarray
    by_subtraction: np.ndarray
    by_comparison: np.ndarray
    subtraction_complete: bool

    def counts(self) -> tuple[int, int, int]:
        flags = (self.by_cell, self.by_subtraction, self.by_comparison)
        cell, subtraction, comparison = (int(f.sum()) for f in flags)
        return cell, subtraction, comparison


def _cells(releases: Sequence[Release], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Cell id per record (-1: never published) and each cell's history (cells x t)."""
    history = np.stack([r.group for r in releases], axis=1)
    seen = (history >= 0).any(axis=1)
    cell = np.full(n, -1, dtype=np.int64)
    if not seen.any():
        return cell, np.zeros((0, len(releases)), dtype=np.int64)
    keys, inverse = np.unique(history[seen], axis=0, return_inverse=True)
    cell[seen] = inverse.reshape(-1)
    return cell, keys


def _codes(column: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Value codes (equal values, equal codes) and, for numbers, the sorted distinct values."""
    array = np.asarray(column)
    if array.dtype.kind in "biuf":
        unique, inverse = np.unique(array.astype(np.float64), return_inverse=True)
        return inverse.reshape(-1), unique
    index: dict[object, int] = {}
    codes = np.array([index.setdefault(v, len(index)) for v in array.tolist()], dtype=np.int64)
    return codes, None


class _Known:
    """Known sets of cells for one attribute, closed under subtraction on demand, and the
    candidates (intersection of the sets' distinct values) of the cells attacked."""

    def __init__(self, cell_values: list[set[int]], targets: Sequence[int]) -> None:
        self.cell_values = cell_values
        self.index: dict[frozenset[int], int] = {}
        self.sets: list[frozenset[int]] = []
        self.holders: dict[int, list[int]] = {}  # cell -> sets holding it
        self.anchored: dict[int, list[int]] = {}  # smallest cell -> sets starting there
        self.candidates: dict[int, set[int] | None] = dict.fromkeys(targets)

    def add(self, s: frozenset[int]) -> bool:
        if not s or s in self.index:
            return False
        i = self.index[s] = len(self.sets)
        self.sets.append(s)
        for c in s:
            self.holders.setdefault(c, []).append(i)
        self.anchored.setdefault(min(s), []).append(i)
        values: set[int] | None = None
        for c in s:
            if c in self.candidates:
                if values is None:
                    values = set().union(*(self.cell_values[x] for x in s))
                found = self.candidates[c]
                self.candidates[c] = set(values) if found is None else found & values
        return True

    def differences(self, i: int) -> list[frozenset[int]]:
        """B - x for known B strictly around x, and x - C for known C strictly inside."""
        x = self.sets[i]
        rarest = min(x, key=lambda c: len(self.holders[c]))
        out = [
            self.sets[b] - x
            for b in self.holders[rarest]
            if len(self.sets[b]) > len(x) and x < self.sets[b]
        ]
        for c in x:
            out += [x - self.sets[j] for j in self.anchored.get(c, ()) if self.sets[j] < x]
        return out

    def close(self, budget: int, done: Callable[[], bool]) -> bool:
        """Subtract to a fixed point (True), or stop after ``budget`` derived sets or once
        ``done()`` (nothing more to learn about the targets)."""
        queue = deque(range(len(self.sets)))
        derived = popped = 0
        while queue:
            popped += 1
            if popped % 64 == 0 and done():
                return True
            for d in self.differences(queue.popleft()):
                if self.add(d):
                    derived += 1
                    queue.append(self.index[d])
                    if derived >= budget:
                        return False
        return True


def attack(
    values: Mapping[str, np.ndarray],
    releases: Sequence[Release],
    subtraction: bool = True,
    budget: int = DEFAULT_BUDGET,
) -> Exposure:
    """Replay the three checks over ``releases`` (see the module docstring)."""
    n = len(next(iter(values.values())))
    cell, history = _cells(releases, n)
    count = history.shape[0]
    member = cell >= 0
    none = np.zeros(n, dtype=bool)
    if count == 0:
        return Exposure(none, none.copy(), none.copy(), True)
    attributes = sorted({a for r in releases for a in r.attributes})
    failing = np.zeros(count, dtype=bool)
    by_sub = np.zeros(count, dtype=bool)
    by_cmp = np.zeros(count, dtype=bool)
    complete = True
    for a in attributes:
        need_d = np.zeros(count, dtype=np.int64)
        need_s = np.zeros(count)
        for j, r in enumerate(releases):
            shown = history[:, j] >= 0
            need_d[shown] = np.maximum(need_d[shown], r.distinct.get(a, 0))
            need_s[shown] = np.maximum(need_s[shown], r.spread.get(a, 0.0))
        if not ((need_d > 0) | (need_s > 0)).any():
            continue
        codes, numbers = _codes(values[a])
        cell_values: list[set[int]] = [set() for _ in range(count)]
        for c, v in zip(cell[member].tolist(), codes[member].tolist(), strict=True):
            cell_values[c].add(v)

        def short(found: set[int] | frozenset[int], c: int) -> bool:
            if len(found) < need_d[c]:  # noqa: B023
                return True
            if need_s[c] > 0 and numbers is not None:  # noqa: B023
                spread = numbers[max(found)] - numbers[min(found)]  # noqa: B023
                return bool(spread < need_s[c])  # noqa: B023
            return False

        fails = np.array([short(cell_values[c], c) for c in range(count)])
        failing |= fails
        if not fails.any():
            continue
        groups: list[frozenset[int]] = []
        for r in releases:
            if a not in r.attributes:
                continue
            shown = r.group >= 0
            pairs = np.unique(np.stack([r.group[shown], cell[shown]]), axis=1)
            bounds = np.flatnonzero(np.diff(pairs[0])) + 1
            groups += [frozenset(p.tolist()) for p in np.split(pairs[1], bounds)]
        targets = np.flatnonzero(fails).tolist()
        known = _Known(cell_values, targets)
        for g in groups:
            known.add(g)

        def exposed(c: int) -> bool:
            found = known.candidates[c]  # noqa: B023
            return found is not None and short(found, c)

        for c in targets:
            by_cmp[c] |= exposed(c)
        if subtraction:
            open_ = [c for c in targets if not exposed(c)]

            def done() -> bool:
                open_[:] = [c for c in open_ if not exposed(c)]  # noqa: B023
                return not open_  # noqa: B023

            complete &= known.close(budget, done)
            for c in targets:
                by_sub[c] |= exposed(c)
    per_record = [np.append(f, False)[cell] for f in (failing, by_sub, by_cmp)]
    return Exposure(*per_record, subtraction_complete=complete)
