"""The comparison and subtraction attacks: known sets of cells and what they reveal.

Pure numpy. Every group of every release is a known set (its records, as the set of
cells it holds, and per published attribute its multiset); the subtraction adds B - A
for known A strictly inside known B, to a fixed point or a budget. A cell's candidates
for an attribute are the intersection of the values of the known sets holding it that
know the attribute (see :mod:`sqlanon.attacker`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sqlanon.attacker.encoding import Encoded, spread
from sqlanon.attacker.history import AttackedRelease, DomainCells

__all__ = ["Known", "KnownSetAttack", "cell_codes", "known_groups", "subtract_to_fixed_point"]


Known = dict[frozenset[int], frozenset[str]]  # a set of cells -> the attributes it knows


def known_groups(cells: DomainCells, releases: Sequence[AttackedRelease]) -> Known:
    """Every group of every release as the set of cells it holds (equal sets merged)."""
    known: Known = {}
    for r in releases:
        published = r.group >= 0
        if not published.any():
            continue
        group = np.unique(r.group[published], return_inverse=True)[1].reshape(-1)
        pairs = np.unique(group.astype(np.int64) * cells.count + cells.cell[published])
        bounds = np.flatnonzero(np.r_[True, np.diff(pairs // cells.count) != 0, True])
        members = (pairs % cells.count).tolist()
        attributes = r.published
        ends = bounds.tolist()
        for start, end in zip(ends[:-1], ends[1:], strict=True):
            cell_set = frozenset(members[start:end])
            known[cell_set] = known.get(cell_set, frozenset()) | attributes
    return known


def subtract_to_fixed_point(groups: Known, max_derived: int) -> tuple[Known, bool]:
    """Add B - A for known A strictly inside known B (sharing attributes) until nothing
    new comes, or ``max_derived`` sets were added (then False).

    Sets are processed in the order they became known (the groups, then what one
    subtraction gives, then two...): measured on independent re-releases of the seeds'
    experiment, a budget of a few sets per group then already reaches the candidates of
    the whole fixed point, while the fixed point itself grows about twofold per release.
    Each set, when processed, is compared with the sets processed before it: those inside
    it are registered under their least cell (which it must hold), those around it all
    hold its rarest cell. So every pair is looked at once; a set whose attributes grow
    is processed again.
    """
    known = dict(groups)
    queue = deque(known)
    by_cell: dict[int, list[frozenset[int]]] = {}
    by_least: dict[int, list[frozenset[int]]] = {}
    processed: set[frozenset[int]] = set()
    derived = 0
    while queue:
        x = queue.popleft()
        known_x, size = known[x], len(x)
        found = []
        for c in x:
            for s in by_least.get(c, ()):
                if len(s) < size and s < x:
                    found.append((x - s, known_x & known[s]))
        rare = min(x, key=lambda c: len(by_cell.get(c, ())))
        for s in by_cell.get(rare, ()):
            if len(s) > size and x < s:
                found.append((s - x, known_x & known[s]))
        if x not in processed:
            processed.add(x)
            by_least.setdefault(min(x), []).append(x)
            for c in x:
                by_cell.setdefault(c, []).append(x)
        for difference, attributes in found:
            if not attributes:
                continue
            before = known.get(difference)
            if before is None:
                if derived >= max_derived:
                    return known, False
                derived += 1
                known[difference] = attributes
                queue.append(difference)
            elif not attributes <= before:
                known[difference] = before | attributes
                queue.append(difference)
    return known, True


@dataclass
class KnownSetAttack:
    """Candidates of chosen cells against a collection of known sets."""

    known: Known
    attributes: Sequence[str]
    encoded: list[Encoded]
    cell_codes: list[list[frozenset[int]]]
    _codes: dict[tuple[frozenset[int], int], frozenset[int]] = field(default_factory=dict)

    def sets_holding(self, cells: Sequence[int]) -> dict[int, list[frozenset[int]]]:
        wanted = set(cells)
        holding: dict[int, list[frozenset[int]]] = {c: [] for c in cells}
        for s in self.known:
            for c in s & wanted if len(s) > len(wanted) else (c for c in s if c in wanted):
                holding[c].append(s)
        return holding

    def codes(self, s: frozenset[int], j: int) -> frozenset[int]:
        found = self._codes.get((s, j))
        if found is None:
            per_cell = self.cell_codes[j]
            found = frozenset().union(*(per_cell[c] for c in s))
            self._codes[(s, j)] = found
        return found

    def candidates(self, j: int, holding: Sequence[frozenset[int]]) -> frozenset[int] | None:
        a = self.attributes[j]
        out: frozenset[int] | None = None
        for s in holding:
            if a in self.known[s]:
                codes = self.codes(s, j)
                out = codes if out is None else out & codes
        return out

    def exposed(self, cells: DomainCells, chosen: np.ndarray) -> np.ndarray:
        """Which ``chosen`` cells some attribute's candidates leave below requirement."""
        out = np.zeros(cells.count, dtype=bool)
        holding = self.sets_holding(chosen.tolist())
        for c in chosen.tolist():
            for j in range(len(self.attributes)):
                need_d = int(cells.need_distinct[c, j])
                need_s = float(cells.need_spread[c, j])
                if need_d <= 0 and need_s <= 0:
                    continue
                found = self.candidates(j, holding[c])
                if found is None:
                    continue
                if len(found) < need_d or (need_s > 0 and spread(self.encoded[j], found) < need_s):
                    out[c] = True
                    break
        return out


def cell_codes(cells: DomainCells, encoded: list[Encoded]) -> list[list[frozenset[int]]]:
    """Per attribute, each cell's set of value codes."""
    member = cells.cell >= 0
    ids = cells.cell[member]
    out = []
    for enc in encoded:
        pairs = np.unique(ids * enc.size + enc.codes[member])
        owner = pairs // enc.size
        bounds = np.searchsorted(owner, np.arange(cells.count + 1))
        codes = (pairs % enc.size).tolist()
        out.append([frozenset(codes[bounds[c] : bounds[c + 1]]) for c in range(cells.count)])
    return out
