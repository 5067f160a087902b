"""Global (full-domain) recoding for lHD: one generalization level per quasi-identifier
for the whole release, as ARX's full-domain algorithms (Incognito, Flash) choose it.

Pure numpy. A **node** of the generalization lattice gives every QI one level. At a node,
the records (entries of an :class:`~sqlanon.models.lhd_problem.LhdProblem`) are grouped by
their labels at those levels, and every group is a would-be class. The cell rule is the
one every plan keeps (:mod:`sqlanon.models.lhd_planner`): a class is a union of pieces
(its records of one old cell, or its never-published records); a piece that fails
(fewer than ``l`` distinct values of a published sensitive attribute, or below its old
cell's own requirement) is left out as a whole. The left-out part of an old cell that
keeps a published piece must still meet the cell's requirement; when it does not, the
cell is left out whole (its records could join no other class: their labels at the node
are those of the group their piece failed in). What is left is published at the node's
levels, every class at the same levels, so every label of a column is of one level.

The node chosen is the one of lowest precision loss among those leaving out at most
``budget`` records. Precision loss at a node with level sum ``s = sum(level / height)``
over ``|Gamma|`` QI is at least ``s / |Gamma|`` (a left-out record costs ``|Gamma|``,
more than any published one), so the nodes are visited in order of that bound and the
search stops at the first bound above the best loss found: exact, and it visits only the
bottom of the lattice when a low node is good enough.

Without old cells, leaving out is monotone (ARX's predictive tagging): a node's groups
are unions of the groups of any node below it, and a union holding a valid group is
valid, so a node leaves out no more than any node below it, and the top node (every QI
``*``) leaves out the fewest. With old cells the left-out part of a cell can shrink below
the cell's requirement as groups merge, so no such order holds; then, when no node is
within ``budget``, every node is visited for the one leaving out the fewest.

>>> from sqlanon.hierarchy import Hierarchy
>>> from sqlanon.models.lhd_problem import LhdProblem
>>> age = Hierarchy.from_widths("age", [10], range(20, 40))
>>> problem = LhdProblem.build(
...     {"age": [21, 22, 25, 33, 34, 35]}, {"s": list("ababab")}, {"age": age}, 2, None, {}
... )
>>> found = full_domain(problem, np.arange(6), budget=0)
>>> found.levels.tolist(), [c.tolist() for c in found.classes]
([1], [[0, 1, 2], [3, 4, 5]])
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from sqlanon.metrics import discernibility
from sqlanon.models.cells import piece_meets
from sqlanon.models.lhd_problem import LhdProblem

__all__ = ["Node", "evaluate", "full_domain", "lattice"]

#: Loss compared to a bound may fall short of it by float rounding.
_EPS = 1e-12


@dataclass(frozen=True)
class Node:
    """One node evaluated: ``levels`` per QI; for the records ``idx`` given, the group
    (by labels) of each and whether it is published; the records left out, the
    precision loss and DM."""

    levels: np.ndarray
    idx: np.ndarray
    group: np.ndarray
    shown: np.ndarray
    absent: int
    loss: float
    dm: int

    @property
    def classes(self) -> list[np.ndarray]:
        """The published records of each group that keeps some, in group order."""
        kept, kept_group = self.idx[self.shown], self.group[self.shown]
        order = np.argsort(kept_group, kind="stable")
        kept, kept_group = kept[order], kept_group[order]
        return np.split(kept, np.flatnonzero(np.diff(kept_group)) + 1) if kept.size else []


def lattice(heights: np.ndarray) -> np.ndarray:
    """Every node (one level per QI, 0..height), ordered by the precision-loss bound
    ``sum(level / height)``, then by level sum, then lexicographically."""
    ranges = [range(int(h) + 1) for h in heights]
    nodes = np.array(list(itertools.product(*ranges)), dtype=np.int64).reshape(-1, len(ranges))
    bound = np.round((nodes / heights).sum(axis=1), 12)
    order = np.lexsort((*nodes.T[::-1], nodes.sum(axis=1), bound))
    ordered: np.ndarray = nodes[order]
    return ordered


def _groups(problem: LhdProblem, idx: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Group (dense, in order of the labels' codes) of each record ``idx`` by its codes
    at ``levels``: codes packed into one int64, made dense again before they overflow."""
    key = np.zeros(idx.size, dtype=np.int64)
    span = 1
    for q, lv in enumerate(levels.tolist()):
        codes = problem.codes[q][idx, lv]
        radix = int(codes.max()) + 1 if codes.size else 1
        if span * radix >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            key = key.reshape(-1).astype(np.int64)
            span = int(key.max()) + 1 if key.size else 1
        key = key * radix + codes
        span *= radix
    _, group = np.unique(key, return_inverse=True)
    dense: np.ndarray = group.reshape(-1)
    return dense


def _absent_cells_failing(problem: LhdProblem, idx: np.ndarray, shown: np.ndarray) -> np.ndarray:
    """Old cells (ids) with a published piece whose records left out (absence is visible)
    fall below the cell's own requirement."""
    cell = problem.piece_cell[idx]
    old = cell < problem.new_cell
    with_shown = np.unique(cell[shown & old])
    out = ~shown & old & np.isin(cell, with_shown)
    if not out.any():
        return np.zeros(0, dtype=np.int64)
    absent = idx[out]
    keys, piece = np.unique(problem.piece_cell[absent], return_inverse=True)
    ok = piece_meets(
        piece.reshape(-1),
        keys.size,
        problem.keep_distinct[keys],
        problem.keep_spread[keys],
        [c[absent] for c in problem.check_codes],
        [None if x is None else x[absent] for x in problem.check_numbers],
    )
    failing: np.ndarray = keys[~ok]
    return failing


def evaluate(problem: LhdProblem, idx: np.ndarray, levels: np.ndarray) -> Node:
    """The release at node ``levels`` of the records ``idx`` (the placeable ones; the
    others are left out): groups by label, failing pieces left out, then the old cells
    whose left-out part breaks their requirement left out whole (module docstring)."""
    levels = np.asarray(levels, dtype=np.int64)
    group = _groups(problem, idx, levels)
    count = int(group.max()) + 1 if group.size else 0
    piece, ok = problem.piece_ok(idx, group, count)
    shown = ok[piece]
    failing = _absent_cells_failing(problem, idx, shown)
    if failing.size:
        shown &= ~np.isin(problem.piece_cell[idx], failing)
    w = problem.weight[idx]
    sizes = np.bincount(group[shown], weights=w[shown], minlength=count).astype(np.int64)
    published = int(sizes.sum())
    absent = problem.records - published
    gamma = len(problem.quasi)
    per_record = float((levels / problem.heights).sum())
    loss = (published * per_record + absent * gamma) / (problem.records * gamma)
    dm = discernibility(sizes[sizes > 0], absent)
    return Node(levels, idx, group, shown, absent, loss, dm)


def full_domain(problem: LhdProblem, idx: np.ndarray, budget: float) -> Node:
    """The node of lowest precision loss (then lowest DM, then first in
    :func:`lattice` order) leaving out at most ``budget`` records; when none does, the
    node leaving out the fewest (then lowest loss). ``idx``: the placeable records."""
    heights = problem.heights
    top = evaluate(problem, idx, heights.astype(np.int64))
    monotone = problem.new_cell == 0
    # Without old cells the top leaves out the fewest: nothing within budget means the
    # fewest is the top's count, and the same search finds its lowest loss.
    limit = budget if top.absent <= budget or not monotone else top.absent + 0.5
    gamma = len(problem.quasi)
    best: Node | None = None
    fewest = top
    for levels in lattice(heights):
        bound = float((levels / heights).sum()) / gamma
        if best is not None and bound > best.loss + _EPS:
            break
        node = top if (levels == heights).all() else evaluate(problem, idx, levels)
        if (node.absent, round(node.loss, 12), node.dm) < (
            fewest.absent,
            round(fewest.loss, 12),
            fewest.dm,
        ):
            fewest = node
        if node.absent <= limit and (
            best is None or (round(node.loss, 12), node.dm) < (round(best.loss, 12), best.dm)
        ):
            best = node
    if best is not None:
        return best
    return fewest  # old cells and nothing within budget: every node was visited
