"""The ``refine`` algorithm, and the placing of records left over by any plan.

Pure numpy. ``refine`` plans every class of the newest earlier release on its own, and
the records no release has published together, each as ``auto`` would (greedy, scalable,
the lower precision loss kept); the records no piece can hold then join the valid class
holding a piece of their cell whose precision loss grows least
(see :mod:`sqlanon.models.lhd_planner`). :func:`keep_absent_valid` does the same for the
records of an old cell that a plan leaves out while it publishes others of it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sqlanon.models.lhd_greedy import GREEDY_MAX_ROWS, greedy
from sqlanon.models.lhd_problem import (
    LhdProblem,
    class_loss,
    common_levels,
    failing_records,
    lca_levels,
)
from sqlanon.models.lhd_scalable import top_down

__all__ = ["keep_absent_valid", "refine_earlier"]

SMALL_PART_ROWS = 12  # parts up to this size: the greedy alone (scalable costs per call)


def _planned_loss(problem: LhdProblem, idx: np.ndarray, classes: list[np.ndarray]) -> float:
    """Precision loss (unnormalised) of ``classes`` over ``idx``; unplaced records count
    as suppressed (every QI at the top)."""
    placed = sum(problem.size(c) for c in classes)
    loss = sum(class_loss(problem, c, common_levels(problem, c)) for c in classes)
    return loss + (problem.size(idx) - placed) * len(problem.quasi)


def _plan_part(problem: LhdProblem, idx: np.ndarray) -> list[np.ndarray]:
    """Valid classes over (part of) ``idx``: records that break the whole set are shed
    first (a subset need not be valid), then greedy and scalable as ``auto`` runs them.
    Shed or unplaced records are simply missing from the result."""
    while idx.size:
        failing = failing_records(problem, idx)
        if not failing.any():
            break
        idx = idx[~failing]
    if idx.size < 2 * problem.l:
        return [idx] if idx.size else []
    options = [] if idx.size <= SMALL_PART_ROWS else [top_down(problem, idx)]
    if idx.size <= GREEDY_MAX_ROWS:
        options.append(greedy(problem, idx))
    # equal loss (to rounding): the finer partition, as plan_lhd's auto does
    return min(
        options,
        key=lambda cs: (
            round(_planned_loss(problem, idx, cs), 9),
            sum(problem.size(c) ** 2 for c in cs),
        ),
    )


def refine_earlier(problem: LhdProblem, idx: np.ndarray) -> list[np.ndarray]:
    """The ``refine`` algorithm (module docstring): plan every class of the newest earlier
    release sharing a sensitive attribute on its own, the records it did not publish
    together, then place the records left over."""
    if problem.newest is None:
        return _plan_part(problem, idx)
    old = problem.newest[idx]
    classes = _plan_part(problem, idx[old < 0])
    covered = idx[old >= 0]
    covered = covered[np.argsort(old[old >= 0], kind="stable")]
    bounds = np.flatnonzero(np.diff(problem.newest[covered])) + 1
    # inside one class of that release every record has the same atom: no atoms here
    inner = replace(problem, atom=None)
    for members in np.split(covered, bounds) if covered.size else []:
        classes.extend(_plan_part(inner, np.sort(members)))
    placed = np.zeros(problem.n, dtype=bool)
    for c in classes:
        placed[c] = True
    leftovers = idx[~placed[idx]]
    return _place_leftovers(problem, classes, leftovers)


def _place_leftovers(
    problem: LhdProblem, classes: list[np.ndarray], leftovers: np.ndarray
) -> list[np.ndarray]:
    """Put each leftover record into the valid class whose precision loss grows least
    among those it keeps valid; the others stay out. A record keeps a class valid when
    the class holds a piece of the record's own cell: adding a value to a valid piece
    keeps it valid, and no other piece changes."""
    if not classes or leftovers.size == 0:
        return classes
    classes = list(classes)
    levels = np.stack([common_levels(problem, c) for c in classes])
    seeds = problem.flat_codes[np.array([c[0] for c in classes], dtype=np.int64)]
    sizes = np.array([problem.size(c) for c in classes], dtype=np.float64)
    holds = [set(problem.piece_cell[c].tolist()) for c in classes]
    for r in leftovers.tolist():
        cell = int(problem.piece_cell[r])
        options = [k for k, h in enumerate(holds) if cell in h]
        if not options:
            continue
        grown = np.maximum(
            levels[options], lca_levels(problem, seeds[options], problem.flat_codes[r])
        )
        w = problem.weight[r]
        growth = (sizes[options] + w) * (grown / problem.heights).sum(axis=1) - sizes[options] * (
            levels[options] / problem.heights
        ).sum(axis=1)
        best = int(np.argmin(growth))
        k = options[best]
        classes[k] = np.append(classes[k], r)
        levels[k], sizes[k] = grown[best], sizes[k] + w
    return [np.sort(c) for c in classes]


def keep_absent_valid(problem: LhdProblem, classes: list[np.ndarray]) -> list[np.ndarray]:
    """Records of an old cell left out while others of it are published split the cell
    (absence is visible): the left-out piece must still meet the cell's requirement.
    When it does not, its records join the class holding the cell's published piece
    whose precision loss grows least (always valid, see ``_place_leftovers``)."""
    placed = np.zeros(problem.n, dtype=bool)
    for c in classes:
        placed[c] = True
    old = problem.piece_cell < problem.new_cell
    shown = np.unique(problem.piece_cell[placed & old])
    absent = np.flatnonzero(~placed & old)
    absent = absent[np.isin(problem.piece_cell[absent], shown)]
    if absent.size == 0:
        return classes
    keys, piece = np.unique(problem.piece_cell[absent], return_inverse=True)
    ok = problem.pieces_meet(
        piece.reshape(-1), keys.size, absent, problem.keep_distinct[keys], problem.keep_spread[keys]
    )
    return _place_leftovers(problem, classes, absent[~ok[piece.reshape(-1)]])
