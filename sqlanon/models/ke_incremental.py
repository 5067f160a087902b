"""The incremental (k,e) planner: the next version of a release, every cell kept valid.

Pure numpy; no database import. The specification is Model 1 of ``shared/docs/MODELS.md``.
A group satisfies (k,e) when it holds at least ``k`` distinct values of the sensitive
attribute S and ``max(S) - min(S) >= e``; both conditions only get easier when records
are added, so the planner keeps old cells whole and groups "elements" (clusters of
overlapping cells, and new values outside them) into runs with the same kind of DP as
the static optimum (:mod:`sqlanon.models.ke_static`; the runs: :mod:`sqlanon.models.ke_runs`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from sqlanon.errors import BrokenCellError, ConfigError
from sqlanon.models.cells import Cells
from sqlanon.models.ke_paper import plan_paper
from sqlanon.models.ke_plan import KePlan, as_ids, check_parameters
from sqlanon.models.ke_runs import Elements, best_runs, make_plan, plan_from_runs, runs_held_back
from sqlanon.models.ke_static import (
    SortedValues,
    as_values,
    optimal_partition,
    static_optimum_sorted,
    unique_ids,
)

__all__ = ["DEFAULT_HOLD_FACTOR", "HELD_BACK_CAP", "POLICIES", "plan_in_cells", "plan_release"]


POLICIES = ("auto", "merge", "defer", "paper")

#: ``auto``'s default penalty per held-back row, as a multiple of the per-row error of the
#: static optimum of all candidate records. Chosen with ``bench/ke_policies_pure.py`` (Adult,
#: k=2..10, e=20/100): factors 0.25-4 all end within 1.25x of the static optimum; 0.25-0.5
#: lean on the 5% cap (up to 4.9% held back), 2-4 cost 3-10% more error; 1.0 holds back at
#: most 3.5% per version and ends at 1.05-1.14x.
DEFAULT_HOLD_FACTOR = 1.0

#: ``auto`` never holds back more than this fraction of the candidate records when merging
#: can avoid it: it raises the penalty until the plan fits.
HELD_BACK_CAP = 0.05


def plan_release(
    values: np.ndarray,
    prev_cell: np.ndarray,
    prev_group: np.ndarray,
    k: int,
    e: float,
    policy: str = "auto",
    hold_penalty: float | None = None,
    weight: np.ndarray | None = None,
) -> KePlan:
    """Plan the next version of a (k,e) release so that every cell stays (k,e)-valid.

    ``values`` holds S of every candidate record: published before, held back before, or
    new. ``prev_cell``/``prev_group`` give each record's cell and group in the last version,
    -1 when it was never published. When no record was published before, this is a first
    version: the static optimum of everything, or ``InfeasibleError``.

    Every published record is published again and old cells are kept whole, so each old
    cell's new cell is (old cell, new group), still valid. The records never published
    before that join a group form one new cell, so they must be (k,e)-valid among
    themselves; the others are held back (offered again next version). The optimal
    grouping for fixed cells is a sequence of runs over "elements": atoms (maximal sets of
    cells whose value intervals overlap or touch, with the new values inside them) and new
    values outside every atom, in ascending order. A run costs (right end of its last element -
    left end of its first); it is allowed when its new values are (k,e)-valid, or when it
    is one atom whose new values are all held back. A new value outside atoms may be held
    back alone. The DP over runs is O(M) after sorting. Policies:

    - ``merge``: minimise (held-back rows, sum of errors) lexicographically: rows are held
      back only when the new rows together are not (k,e)-valid.
    - ``defer``: never put two atoms in one group, let a new value inside an atom's
      interval join only that atom, and keep the value ranges of groups disjoint (old
      groups are not merged, though one may be split along its cells, which are valid on
      their own); minimise (held-back rows, sum of errors) lexicographically.
    - ``auto`` (default): minimise ``sum of errors + hold_penalty * held-back rows``
      (ties: fewer held back). Default ``hold_penalty``: ``DEFAULT_HOLD_FACTOR`` times the
      per-row error of the static optimum of all candidate values (sum of errors of
      ``optimal_partition(values)`` / n). If the plan holds back more than
      ``HELD_BACK_CAP`` (5%) of the candidates, the penalty is multiplied by 4 until it
      does not (at most 8 times, then the ``merge`` plan is used).
    - ``paper``: the seeds' published rule (``sqlanon.models.ke_paper``), unsafe, for
      reproducing their figures only.

    ``weight`` (default 1 each): how many records each entry stands for, so a plan can
    be made on counts (:func:`plan_in_cells` with ``weight``): an entry is then every
    record of one old cell, or every new record, with one value. Only the held-back
    counts, the penalty and the cap read it; with weights 1 the plan is the record
    planner's.
    """
    k, e = check_parameters(k, e)
    _check_policy(policy, hold_penalty)
    v = as_values(values)
    cell = as_ids(prev_cell, len(v), "prev_cell")
    group = as_ids(prev_group, len(v), "prev_group")
    w = _as_weights(weight, len(v))
    old = cell >= 0
    if not np.array_equal(old, group >= 0):
        raise ConfigError(
            "prev_cell and prev_group must both be -1 exactly for unpublished records"
        )
    if not old.any():
        return _first_version(v, k, e, w)
    data = SortedValues.of(v)
    static = static_optimum_sorted(data, k, e)
    if policy == "paper":
        if weight is not None:
            raise ConfigError("policy 'paper' plans records, not counts")
        return dataclasses.replace(plan_paper(v, cell, group, k, e), static_optimum=static)
    cell_dense = _check_old_cells(v, cell, group, k, e, data.order)
    elements = Elements.build(v, cell_dense, k, e, data.order, w)
    runs = _policy_runs(policy, elements, float(w.sum()), static, hold_penalty)
    plan = plan_from_runs(v, cell_dense, elements, runs, w)
    return dataclasses.replace(plan, static_optimum=static)


def _check_policy(policy: str, hold_penalty: float | None) -> None:
    if policy not in POLICIES:
        raise ConfigError(f"unknown policy {policy!r}; use one of {', '.join(POLICIES)}")
    if hold_penalty is not None:
        if policy != "auto":
            raise ConfigError(f"hold_penalty only applies to policy 'auto', not {policy!r}")
        if not math.isfinite(float(hold_penalty)) or float(hold_penalty) < 0:
            raise ConfigError(f"hold_penalty must be a finite number >= 0; got {hold_penalty!r}")


def _first_version(v: np.ndarray, k: int, e: float, weight: np.ndarray) -> KePlan:
    """No record published before: the static optimum of everything (its own yardstick)."""
    first = optimal_partition(v, k, e)
    plan = make_plan(v, first, first.copy(), weight)
    return dataclasses.replace(plan, static_optimum=plan.sum_of_errors)


def _policy_runs(
    policy: str,
    elements: Elements,
    records: float,
    static: float | None,
    hold_penalty: float | None,
) -> list[tuple[int, int, bool]]:
    """The runs over ``elements`` that ``policy`` (merge, defer or auto) chooses."""
    if policy == "merge":
        return best_runs(elements, lexicographic=True, one_atom=False, penalty=0.0)
    if policy == "defer":
        return best_runs(elements, lexicographic=True, one_atom=True, penalty=0.0)
    return _auto_runs(records, elements, static, hold_penalty)


def plan_in_cells(
    values: np.ndarray,
    prior: Cells,
    sensitive: str,
    k: int,
    e: float,
    policy: str = "auto",
    hold_penalty: float | None = None,
    own_group: np.ndarray | None = None,
    weight: np.ndarray | None = None,
) -> KePlan:
    """Plan a (k,e) release of S = ``sensitive`` over records whose earlier releases of
    the domain (any family, either model) left them in the cells ``prior``.

    An old cell is published whole in one group or stays absent whole, so it keeps
    every requirement it had; it may join a group only if its own values meet (k,e)
    (its history then holds this release too). A cell that cannot (e.g. a class of an
    lHD release with fewer than ``k`` distinct values) stays absent: held back, like new
    records that cannot form a valid piece yet. ``plan_release`` does the rest with the
    eligible cells as its old cells. ``paper`` ignores the cells and plans with the
    family's own last groups ``own_group`` (the seeds' rule, unsafe). ``weight``: as in
    ``plan_release`` (an entry may stand for every record of one cell with one value).

    >>> prior = Cells(np.array([0, 0, -1, -1]), ("v",), np.array([[2]]), np.array([[0.0]]))
    >>> plan_in_cells(np.array([100, 900, 110, 910]), prior, "v", 2, 5).group.tolist()
    [0, 0, 0, 0]
    """
    v = as_values(values)
    if prior.cell.shape != v.shape:
        raise ConfigError(f"prior must describe every record ({v.size})")
    w = _as_weights(weight, v.size)
    if policy == "paper":
        own = np.full(v.size, -1, dtype=np.int64) if own_group is None else own_group
        return plan_release(v, own, own, k, e, "paper")
    k, e = check_parameters(k, e)
    old = prior.cell >= 0
    eligible = _eligible(v, prior, sensitive, k, e)
    cell = np.where(eligible, prior.cell, -1)
    group = np.full(v.size, -1, dtype=np.int64)
    if not eligible.any():
        return KePlan(group, group.copy(), 0.0, 0, int(w[~old].sum()), None, int(w[old].sum()))
    chosen = np.flatnonzero(eligible)
    plan = plan_release(
        v[chosen],
        cell[chosen],
        cell[chosen],
        k,
        e,
        policy,
        hold_penalty=hold_penalty,
        weight=None if weight is None else w[chosen],
    )
    group[chosen] = plan.group
    planned = np.full(v.size, -1, dtype=np.int64)
    planned[chosen] = plan.cell
    return dataclasses.replace(
        plan,
        group=group,
        cell=planned,
        held_back=int(w[(group < 0) & ~old].sum()),
        suppressed=int(w[(group < 0) & old].sum()),
    )


def _eligible(v: np.ndarray, prior: Cells, sensitive: str, k: int, e: float) -> np.ndarray:
    """Per record: new, or of an old cell whose own values meet (k,e) on ``sensitive``."""
    old = prior.cell >= 0
    eligible = ~old
    if old.any():
        # A cell whose requirement already holds (k,e) on S met it when it was made (and
        # its values have not changed): only the others are counted here. (A cell the
        # seeds' unsafe rule left short is refused by plan_release's own check.)
        j = prior.attributes.index(sensitive) if sensitive in prior.attributes else -1
        implied = np.zeros(prior.count, dtype=bool)
        if j >= 0:
            implied = (prior.distinct[:, j] >= k) & (prior.spread[:, j] >= e)
        eligible[old] = implied[prior.cell[old]]
        unsure = old & ~eligible
        if unsure.any():
            ids, dense = unique_ids(prior.cell[unsure])
            x = v[unsure]
            rank = np.unique(x, return_inverse=True)[1].reshape(-1)
            width = int(rank.max()) + 1
            distinct = np.bincount(np.unique(dense * width + rank) // width, minlength=len(ids))
            low = np.full(len(ids), np.inf)
            high = np.full(len(ids), -np.inf)
            np.minimum.at(low, dense, x)
            np.maximum.at(high, dense, x)
            ok = (distinct >= k) & (high - low >= e)
            eligible[unsure] = ok[dense]
    return eligible


def _check_old_cells(
    v: np.ndarray, cell: np.ndarray, group: np.ndarray, k: int, e: float, order: np.ndarray
) -> np.ndarray:
    """Dense cell ids (0..c-1, -1 for unpublished); refuses inconsistent or invalid cells.

    ``order`` sorts ``v`` stably (``SortedValues.order``).
    """
    old = cell >= 0
    ids, inverse = unique_ids(cell[old])
    old_group = group[old]
    group_low = np.full(len(ids), np.iinfo(np.int64).max)
    group_high = np.full(len(ids), -1)
    np.minimum.at(group_low, inverse, old_group)
    np.maximum.at(group_high, inverse, old_group)
    if (group_low != group_high).any():
        raise ConfigError(
            "every record of a cell must have the same prev_group; the state is corrupt"
        )
    dense = np.full(len(v), -1, dtype=np.int64)
    dense[old] = inverse
    by_value = order[old[order]]
    distinct, low, high = _cell_stats(v[by_value], dense[by_value], len(ids))
    bad = np.flatnonzero((distinct < k) | (high - low < e))
    if len(bad):
        c = bad[0]
        raise BrokenCellError(
            f"published cell {int(ids[c])} has {int(distinct[c])} distinct values and range "
            f"{float(high[c] - low[c]):g}, below k={k}, e={e:g}"
        )
    return dense


def _cell_stats(
    s: np.ndarray, cell: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cell 0..count-1: (distinct values, min, max) of values ``s`` sorted ascending."""
    # A stable sort by cell keeps each cell's values ascending; 16-bit keys sort in O(n).
    key = cell.astype(np.int16) if count <= np.iinfo(np.int16).max else cell
    order = np.argsort(key, kind="stable")
    c, s = cell[order], s[order]
    first = np.ones(len(s), dtype=bool)
    first[1:] = (c[1:] != c[:-1]) | (s[1:] != s[:-1])
    distinct = np.bincount(c[first], minlength=count)
    low = np.full(count, np.inf)
    high = np.full(count, -np.inf)
    np.minimum.at(low, c, s)
    np.maximum.at(high, c, s)
    return distinct, low, high


def _auto_runs(
    records: float, elements: Elements, static: float | None, hold_penalty: float | None
) -> list[tuple[int, int, bool]]:
    if hold_penalty is not None:
        return best_runs(elements, lexicographic=False, one_atom=False, penalty=hold_penalty)
    if static is None:  # no valid single release: publish what merging can
        return best_runs(elements, lexicographic=True, one_atom=False, penalty=0.0)
    penalty = DEFAULT_HOLD_FACTOR * static / records
    cap = HELD_BACK_CAP * records
    for _ in range(9):
        runs = best_runs(elements, lexicographic=False, one_atom=False, penalty=penalty)
        if runs_held_back(elements, runs) <= cap:
            return runs
        penalty *= 4.0
    return best_runs(elements, lexicographic=True, one_atom=False, penalty=0.0)


def _as_weights(weight: np.ndarray | None, n: int) -> np.ndarray:
    if weight is None:
        return np.ones(n, dtype=np.float64)
    w = np.asarray(weight, dtype=np.float64)
    if w.shape != (n,) or not np.isfinite(w).all() or (w < 1).any():
        raise ConfigError(f"weight must hold one count >= 1 per value ({n})")
    return w
