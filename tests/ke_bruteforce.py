"""Exhaustive reference answers for the (k,e) model on tiny inputs (test helper).

Nothing here relies on sorting or runs: every set partition is tried, so these answers
check the claims the fast algorithms in ``sqlanon.models.ke_static`` and
``sqlanon.models.ke_incremental`` are built on.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from itertools import pairwise


def set_partitions(items: Sequence[int]) -> Iterator[list[list[int]]]:
    """Every partition of ``items`` into non-empty blocks, each exactly once."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in set_partitions(rest):
        yield [[first], *partition]
        for i in range(len(partition)):
            yield [*partition[:i], [first, *partition[i]], *partition[i + 1 :]]


def valid(values: Sequence[float], k: int, e: float) -> bool:
    return len(set(values)) >= k and max(values) - min(values) >= e


def static_optimum(values: Sequence[float], k: int, e: float) -> float | None:
    """Minimum sum of (max - min) over partitions into (k,e)-valid groups; None if none."""
    best = math.inf
    for partition in set_partitions(list(range(len(values)))):
        blocks = [[values[i] for i in block] for block in partition]
        if all(valid(block, k, e) for block in blocks):
            best = min(best, sum(max(b) - min(b) for b in blocks))
    return None if best == math.inf else best


def atoms(cells: Sequence[Sequence[float]]) -> list[int]:
    """Atom label per cell: connected components of cells whose intervals overlap or touch."""
    label = list(range(len(cells)))

    def root(i: int) -> int:
        while label[i] != i:
            i = label[i]
        return i

    for a in range(len(cells)):
        for b in range(a + 1, len(cells)):
            low = max(min(cells[a]), min(cells[b]))
            high = min(max(cells[a]), max(cells[b]))
            if low <= high:
                label[root(a)] = root(b)
    return [root(i) for i in range(len(cells))]


def release_options(
    cells: Sequence[Sequence[float]], new: Sequence[float], k: int, e: float, one_atom: bool
) -> Iterator[tuple[int, float]]:
    """(held back, sum of errors) of every safe release that keeps old cells whole.

    Each old cell goes whole into one group; each new value, with every new record of that
    value, joins a group or is held back (the engine path plans a value's new records as
    one entry, so they share their fate); the new values of a group must be (k,e)-valid
    among themselves (they form one new cell). With ``one_atom`` (the ``defer`` policy),
    no group holds cells of two atoms, a new value inside an atom's interval may only join
    that atom's group, and the value ranges of the groups do not overlap (they may touch).
    """
    copies = {x: list(new).count(x) for x in new}
    new = sorted(copies)
    atom = atoms(cells)
    span: dict[int, tuple[float, float]] = {}
    for c, label in enumerate(atom):
        low, high = span.get(label, (math.inf, -math.inf))
        span[label] = (min(low, *cells[c]), max(high, *cells[c]))
    home = [next((a for a, (lo, hi) in span.items() if lo <= x <= hi), None) for x in new]
    units = list(range(len(cells) + len(new) + 1))  # last unit marks "held back"
    hold = units[-1]
    for partition in set_partitions(units):
        held = 0
        cost = 0.0
        ok = True
        ranges = []
        for block in partition:
            old_cells = [u for u in block if u < len(cells)]
            fresh = [new[u - len(cells)] for u in block if len(cells) <= u < hold]
            if hold in block:
                if old_cells:
                    ok = False
                    break
                held = sum(copies[x] for x in fresh)
                continue
            if fresh and not valid(fresh, k, e):
                ok = False
                break
            if one_atom:
                block_atoms = {atom[c] for c in old_cells}
                homes = {home[u - len(cells)] for u in block if len(cells) <= u < hold}
                if len(block_atoms) > 1 or not homes <= block_atoms | {None}:
                    ok = False
                    break
            members = fresh + [x for c in old_cells for x in cells[c]]
            cost += max(members) - min(members)
            ranges.append((min(members), max(members)))
        if ok and one_atom:
            ranges.sort()
            ok = all(high <= low for (_, high), (low, _) in pairwise(ranges))
        if ok:
            yield held, cost
