"""Top-down specialization with local recoding: the ``scalable`` algorithm.

Pure numpy. A partition at common levels is split on the QI that specializes the most
records into the hierarchy children one level down, moving the records of one old cell
together and shedding the pieces that break a child; small final partitions are re-cut
by the greedy when that lowers the precision loss (see :mod:`sqlanon.models.lhd_planner`).
"""

from __future__ import annotations

import numpy as np

from sqlanon.models.lhd_greedy import greedy
from sqlanon.models.lhd_problem import (
    LhdProblem,
    class_loss,
    common_levels,
    failing_records,
    group_validity,
    is_valid,
)

__all__ = ["top_down"]

#: Final partitions up to this many entries are re-cut by the greedy.
RECUT_MAX_ROWS = 400


def _split(
    problem: LhdProblem, idx: np.ndarray, q: int, level: int
) -> tuple[list[np.ndarray], int] | None:
    """Split ``idx`` (common level ``level`` on QI q) into valid parts by the children one
    level down; returns the parts and how many records got the finer level.

    Atoms (see ``LhdProblem.atom``) that span several children go to a pool kept at
    ``level``. A child that is not valid on its own sheds the records that break it
    (repeatedly, since shedding removes values) into the pool; the pool is a part of its
    own when valid, else it joins the smallest child it keeps valid.
    """
    children = problem.codes[q][idx, level - 1]
    pool_parts = []
    if problem.atom is not None:
        _, atom = np.unique(problem.atom[idx], return_inverse=True)
        atom = atom.reshape(-1)
        low = np.full(int(atom.max()) + 1, np.iinfo(np.int64).max)
        high = np.full(low.size, -1)
        np.minimum.at(low, atom, children)
        np.maximum.at(high, atom, children)
        cut = (low != high)[atom]
        pool_parts.append(idx[cut])
        idx, children = idx[~cut], children[~cut]
        if idx.size == 0:
            return None
    _, group = np.unique(children, return_inverse=True)
    group = group.reshape(-1)
    k = int(group.max()) + 1
    ok = group_validity(problem, idx, group, k)
    valid = [idx[group == g] for g in np.flatnonzero(ok)]
    for g in np.flatnonzero(~ok).tolist():
        members = idx[group == g]
        while members.size:
            failing = failing_records(problem, members)
            if not failing.any():
                valid.append(members)
                break
            pool_parts.append(members[failing])
            members = members[~failing]
    pool = np.concatenate(pool_parts) if pool_parts else idx[:0]
    if pool.size == 0:
        return (valid, problem.size(idx)) if len(valid) >= 2 else None
    if is_valid(problem, pool):
        return ([*valid, pool], sum(problem.size(v) for v in valid)) if valid else None
    if len(valid) < 2:
        return None
    for j in sorted(range(len(valid)), key=lambda j: problem.size(valid[j])):
        merged = np.concatenate([valid[j], pool])
        if is_valid(problem, merged):
            parts = [v for i, v in enumerate(valid) if i != j] + [merged]
            return parts, sum(problem.size(v) for i, v in enumerate(valid) if i != j)
    return None


def top_down(problem: LhdProblem, idx: np.ndarray) -> list[np.ndarray]:
    """Top-down specialization, then the greedy inside every small final partition
    (kept only when it places every record and lowers the precision loss)."""
    idx = idx[~failing_records(problem, idx)] if idx.size else idx
    if idx.size == 0:
        return []  # no valid piece: everything left out (suppressed or held back)
    final: list[np.ndarray] = []
    stack = [idx]
    while stack:
        part = stack.pop()
        levels = common_levels(problem, part)
        best: list[np.ndarray] | None = None
        best_gain, best_q = 0.0, -1
        # The split of the most records specialized per unit of height wins, the lowest
        # QI on a tie. A QI's gain is at most the part's records over its height: try
        # the highest bounds first and skip the QIs that cannot win (same choice).
        size = problem.size(part)
        for q in sorted(np.flatnonzero(levels > 0).tolist(), key=lambda q: problem.heights[q]):
            bound = size / problem.heights[q]
            if bound < best_gain or (bound == best_gain and q > best_q):
                continue
            split = _split(problem, part, q, int(levels[q]))
            if split is None:
                continue
            gain = split[1] / problem.heights[q]
            if gain > best_gain or (gain == best_gain and best is not None and q < best_q):
                best, best_gain, best_q = split[0], gain, q
        if best is None:
            final.extend(_recut(problem, np.sort(part), levels))
        else:
            stack.extend(best)
    return final


def _recut(problem: LhdProblem, part: np.ndarray, levels: np.ndarray) -> list[np.ndarray]:
    """The greedy's classes of the final partition ``part`` (common ``levels``) when they
    place every record of it at a lower precision loss, else ``part`` whole."""
    if not levels.any() or not 2 * problem.l <= part.size <= RECUT_MAX_ROWS:
        return [part]
    pieces = greedy(problem, part)
    if sum(p.size for p in pieces) != part.size:
        return [part]
    refined = sum(class_loss(problem, p, common_levels(problem, p)) for p in pieces)
    return pieces if refined < class_loss(problem, part, levels) else [part]
