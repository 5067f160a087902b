"""Seed 002's greedy (Algorithm 1) under the cell rule: the ``greedy`` algorithm.

Pure numpy. Seed a class with the first unassigned record and add the record that raises
its precision loss least until the class is valid; leftovers join the nearest class that
stays valid with them (see :mod:`sqlanon.models.lhd_planner`). O(n^2): for small tables
and small parts of large ones.
"""

from __future__ import annotations

import numpy as np

from sqlanon.models.lhd_problem import LhdProblem, lca_levels

__all__ = ["GREEDY_MAX_ROWS", "greedy"]

#: ``auto`` (and ``refine`` on each part) runs the greedy up to this many entries.
GREEDY_MAX_ROWS = 2000


class _GreedyClass:
    """A class under construction: its members and the level of each QI."""

    def __init__(self, problem: LhdProblem, seed: int) -> None:
        self.problem = problem
        self.members = [seed]
        self.levels = np.zeros(len(problem.codes), dtype=np.int64)

    def add(self, r: int, levels: np.ndarray) -> None:
        self.members.append(r)
        self.levels = levels

    def failing(self) -> np.ndarray:
        """Old-cell ids (``piece_cell``) whose piece in this class is not yet valid."""
        members = np.asarray(self.members, dtype=np.int64)
        piece, ok = self.problem.piece_ok(members, np.zeros(members.size, dtype=np.int64), 1)
        return np.unique(self.problem.piece_cell[members[~ok[piece]]])

    def lacks(self, r: int) -> bool:
        """Whether record r brings a sensitive value its piece lacks."""
        cells = self.problem.piece_cell
        same = [m for m in self.members if cells[m] == cells[r]]
        return any(
            int(codes[r]) not in set(codes[same].tolist()) for codes in self.problem.sa_codes
        )

    def accepts(self, r: int) -> bool:
        """Whether adding record r keeps this (valid) class valid: r joins a valid piece
        of its own cell (values only add), never starts one of a single record."""
        cells = self.problem.piece_cell
        return bool((cells[np.asarray(self.members)] == cells[r]).any())


def greedy(problem: LhdProblem, idx: np.ndarray) -> list[np.ndarray]:
    """Seed 002's greedy over the records ``idx``; returns the classes (global record
    indices). Records in no class are left out (suppressed or held back).

    Under the cell rule a class is valid when each of its pieces (its records of one old
    cell, or its new records) is; while a piece is not, the next record is the cheapest
    of those that can mend it (of that piece's cell). With no earlier release every
    record is new and this is the paper's greedy."""
    heights = problem.heights[:, None]
    block = problem.flat_codes[idx]
    remaining = np.ones(idx.size, dtype=bool)
    counts = [
        np.bincount(c[idx], minlength=len(v))
        for c, v in zip(problem.sa_codes, problem.sa_values, strict=True)
    ]
    distinct_left = [int((c > 0).sum()) for c in counts]
    cell_of = problem.piece_cell[idx]

    def take(i: int) -> None:
        remaining[i] = False
        for s, sa in enumerate(problem.sa_codes):
            v = sa[idx[i]]
            counts[s][v] -= 1
            if counts[s][v] == 0:
                distinct_left[s] -= 1

    done: list[_GreedyClass] = []
    leftovers: list[int] = []
    for seed in range(idx.size):
        if not remaining[seed]:
            continue
        if min(distinct_left) < problem.l:
            leftovers.extend(idx[remaining].tolist())
            break
        take(seed)
        current = _GreedyClass(problem, int(idx[seed]))
        lca = lca_levels(problem, block, block[seed]).T
        cost = (lca / heights).sum(axis=0)
        cost[~remaining] = np.inf
        failing = current.failing()
        while failing.size:
            usable = np.where(np.isin(cell_of, failing), cost, np.inf)
            best = usable.min()
            if best == np.inf:
                break
            ties = np.flatnonzero(usable == best)
            if ties.size > 1:
                helpful = [current.lacks(int(idx[t])) for t in ties[:64].tolist()]
                i = int(ties[int(np.argmax(helpful))])
            else:
                i = int(ties[0])
            take(i)
            levels = np.maximum(current.levels, lca[:, i])
            if (levels != current.levels).any():
                cost = (np.maximum(lca, levels[:, None]) / heights).sum(axis=0)
                cost[~remaining] = np.inf
            else:
                cost[i] = np.inf
            current.add(int(idx[i]), levels)
            failing = current.failing()
        if failing.size:
            leftovers.extend(current.members)
            continue
        done.append(current)
    _merge_leftovers(problem, done, leftovers)
    return [np.array(sorted(c.members), dtype=np.int64) for c in done]


def _merge_leftovers(problem: LhdProblem, done: list[_GreedyClass], leftovers: list[int]) -> None:
    """Put each leftover record into the class whose precision loss grows least among
    those that stay valid with it; records no class accepts stay out."""
    if not done:
        return
    seeds = np.array([c.members[0] for c in done], dtype=np.int64)
    for r in sorted(leftovers):
        levels = np.stack([c.levels for c in done])
        sizes = np.array([problem.size(np.asarray(c.members)) for c in done], dtype=np.float64)
        lca = lca_levels(problem, problem.flat_codes[seeds], problem.flat_codes[r])
        grown = np.maximum(levels, lca)
        before = sizes * (levels / problem.heights).sum(axis=1)
        after = (sizes + problem.weight[r]) * (grown / problem.heights).sum(axis=1)
        for k in np.argsort(after - before, kind="stable").tolist():
            if done[k].accepts(r):
                done[k].add(r, grown[k])
                break
