"""Planning under the chain rule, shared by both models and both release paths
(MODELS.md, "Changing tables"). No database here: the planner is handed in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sqlanon.errors import UnsafeReleaseError
from sqlanon.models.cells import Cells, Requirement
from sqlanon.models.chain import chain_check
from sqlanon.state import live


def _left_out(keep: np.ndarray, weight: np.ndarray | None) -> int:
    return int((~keep).sum()) if weight is None else int(weight[~keep].sum())


def plan_live(
    planned: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, Any]],
    prior: Cells,
    requirement: Requirement,
    values: dict[str, np.ndarray],
    chains: Sequence[tuple[int, ...]],
    weight: np.ndarray | None = None,
    keeps_whole: bool = False,
) -> tuple[np.ndarray, Any, Cells, int]:
    """Plan a release under the cell rule and the chain rule (MODELS.md, "Changing
    tables"). ``planned(keep, whole)`` plans the records ``keep``, not splitting the old
    cells of the records ``whole``, and returns every record's group (-1: absent) and
    the model's plan. A new incarnation of a changed record whose chain (or a cell its
    chain touches) would break the chain rule is held back and the release planned
    again without it, until nothing breaks; when no new incarnation is involved (a split
    of old cells broke it), those old cells are kept whole (``keeps_whole``: the
    planner can) and, if that breaks it too, left out whole.
    Returns the group, the plan, the cells after, and how many records were left out
    so (``weight``: how many records each entry stands for; 1 each by default)."""
    keep = np.ones(prior.cell.size, dtype=bool)
    whole = np.zeros(prior.cell.size, dtype=bool)
    while True:
        group, plan = planned(keep, whole)
        cells = prior.then(group, requirement)
        published = [tuple(i for i in c if cells.cell[i] >= 0) for c in chains]
        published = [c for c in published if len(c) >= 2]
        if not published:
            return group, plan, cells, _left_out(keep, weight)
        attributes = [a for a in cells.attributes if a in values]
        check = chain_check(
            cells, values, [live.chain_links(c, values, attributes) for c in published]
        )
        new = (prior.cell < 0) & (group >= 0)
        failing_cells = set(np.flatnonzero(check.failing_cells).tolist())
        failing = [
            chain
            for chain, bad in zip(published, check.failing_chains.tolist(), strict=True)
            if bad or failing_cells & {int(cells.cell[i]) for i in chain}
        ]
        if not failing and not failing_cells:
            return group, plan, cells, _left_out(keep, weight)
        hold = {i for chain in failing for i in chain if new[i]}
        if not hold:
            # Only old cells are involved (an lHD release split one so that its
            # never-changed members fall short): leave those old cells out whole, which
            # keeps them as the last release left them, when they met the rule.
            touched = np.isin(cells.cell, list(failing_cells))
            for chain in failing:
                touched[list(chain)] = True
            in_old = np.isin(prior.cell, np.unique(prior.cell[touched & (prior.cell >= 0)]))
            if keeps_whole and not whole[in_old & keep].all():
                whole |= in_old
                continue
            hold = set(np.flatnonzero(in_old & keep).tolist())
        if not hold:
            raise UnsafeReleaseError(
                f"{len(failing)} chains of changed records and {len(failing_cells)} cells "
                "break the chain rule and leaving records out cannot mend them; nothing was "
                "published; please report this"
            )
        keep[list(hold)] = False
