"""Deferring appended records in lHD: the release ``policy`` around the planner.

Under the lHD cell rule (MODELS.md) the records no release has published yet form
their own cell in every class they join, so they must be l-diverse among themselves: a
small append can only form wide classes, and a record's class stays its cell's history
in every later version. Holding such a record back (it was never published, so it is
simply planned again next time, among more records) can pay for its one absent version
with a narrower class in all later ones, as (k,e)'s ``auto`` policy holds rows back
(:mod:`sqlanon.models.ke_incremental`). Policies:

- ``publish`` (default): the planner's plan
  (:func:`~sqlanon.models.lhd_planner.plan_lhd`); new records are held back only when
  no l-diverse piece holds them.
- ``auto``: among the planner's plan and plans that hold back the new records whose
  classes are the widest (in the planner's plan), keep the one with the lowest
  **objective** = sum over published records of their precision loss (mean over QI of
  level / height) + ``hold_penalty`` per held-back record + 1 per suppressed record, all
  within ``max_suppression`` (held back and suppressed together, the records the caller
  left out included). A held-back record costs ``hold_penalty`` instead of the 1 (fully
  generalized) that precision loss charges for an absent record: it is absent once and
  offered again, while a wide class is paid in every later version. ``hold_penalty`` 1
  makes the objective the precision loss itself (records x PREC), so nothing is held
  back that does not lower this version's PREC; 0 is ``defer``.
- ``defer``: ``auto`` with ``hold_penalty`` 0: hold back as many records of the widest
  new classes as lowers the published records' loss, within ``max_suppression``.

Measured on seed 002's append experiment (``bench/lhd_defer.py``, BENCHMARKS.md
``lhd-defer``): within 5% held back, neither ``auto`` nor ``defer`` brings the
precision loss near an independent release of the same rows, since a pool of about two
appends must still be l-diverse among itself; hence ``publish`` stays the default (no
record a user expects is missing without a measured gain worth it).

Only releases with records published before defer (a first release is the static
optimum of its records, as in (k,e)); records published before are never held back
(their absence would split their cells). The candidates hold back half or all of the
room ``max_suppression`` leaves, the widest new records first, and are planned with the
algorithm whose plan the planner kept (``auto`` runs its algorithms once, not per
candidate). Whole entries are held back (a unit of identical records, see
:meth:`sqlanon.models.lhd_problem.LhdProblem.units`, with all its records). The plan
kept is a plan of the planner over the records not held back, so every guarantee of
:func:`~sqlanon.models.lhd_planner.plan_lhd` holds for it; the held-back records are
absent, never published, and form no cell: the next release plans them again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from sqlanon.errors import ConfigError
from sqlanon.hierarchy import Hierarchy
from sqlanon.models.cells import Cells
from sqlanon.models.lhd_planner import SLACK, LhdPlan, plan_lhd

__all__ = [
    "DEFAULT_HOLD_PENALTY",
    "DEFAULT_POLICY",
    "LHD_POLICIES",
    "check_policy",
    "plan_lhd_policy",
]

LHD_POLICIES = ("auto", "publish", "defer")

#: A release's policy when none is given (see ``bench/lhd_defer.py`` for why).
DEFAULT_POLICY = "publish"

#: ``auto``'s cost of holding one new record back, in units of one record's precision
#: loss (1 = fully generalized, as PREC counts an absent record). Chosen with
#: ``bench/lhd_defer.py`` (section ``lhd-defer`` of BENCHMARKS.md).
DEFAULT_HOLD_PENALTY = 0.5

#: The planner's arguments that hold one value per record.
_PER_RECORD = ("changed", "whole")

#: Shares of the room left under ``max_suppression`` that the candidate plans hold back.
_STEPS = (0.5, 1.0)


def plan_lhd_policy(
    quasi: Mapping[str, Sequence[Any] | np.ndarray],
    sensitive: Mapping[str, Sequence[Any] | np.ndarray],
    hierarchies: Mapping[str, Hierarchy],
    l: int,  # noqa: E741
    prior: Cells | None = None,
    algorithm: str = "auto",
    max_suppression: float = 0.05,
    checked: Mapping[str, Sequence[Any] | np.ndarray] | None = None,
    weight: Sequence[int] | np.ndarray | None = None,
    left_out_before: int = 0,
    over_budget: str = "raise",
    policy: str = DEFAULT_POLICY,
    hold_penalty: float | None = None,
    **planner: Any,
) -> LhdPlan:
    """:func:`~sqlanon.models.lhd_planner.plan_lhd` under ``policy`` (module docstring).

    Arguments as ``plan_lhd``'s (``planner``: any further ones it takes, passed on);
    ``hold_penalty`` only with ``auto`` (default :data:`DEFAULT_HOLD_PENALTY`). The plan
    covers every record given; held-back ones have class -1 and count in ``held_back``
    and in ``precision_loss`` (as fully generalized) like the planner's own.
    """
    penalty = check_policy(policy, hold_penalty)

    def plan(keep: np.ndarray | None, left_out: int, budget_rule: str, how: str) -> LhdPlan:
        def part(x: Mapping[str, Any] | None) -> Any:
            if x is None or keep is None:
                return x
            return {c: _array(v)[keep] for c, v in x.items()}

        # per-record arguments of the planner (chain members, cells kept whole) follow
        # the records planned
        given = {
            name: value if keep is None or name not in _PER_RECORD or value is None
            else _array(value)[keep]
            for name, value in planner.items()
        }  # fmt: skip
        return plan_lhd(
            part(quasi),
            part(sensitive),
            hierarchies,
            l,
            prior if keep is None or prior is None else prior.select(keep),
            how,
            max_suppression,
            checked=part(checked),
            weight=weight if weight is None or keep is None else np.asarray(weight)[keep],
            left_out_before=left_out,
            over_budget=budget_rule,
            **given,
        )

    base = plan(None, left_out_before, over_budget, algorithm)
    if policy == "publish" or prior is None or not (prior.cell >= 0).any():
        return base
    w = np.ones(base.class_id.size, np.int64) if weight is None else np.asarray(weight, np.int64)
    records = int(w.sum())
    allowed = math.floor(max_suppression * (records + left_out_before) + SLACK)
    room = allowed - base.absent - left_out_before
    loss = entry_loss(base, w)
    new = (prior.cell < 0) & (loss >= 0)
    if room <= 0 or not new.any():
        return base
    # the widest first; among equals, the later entries (a later arrival waits)
    order = np.lexsort((-np.arange(w.size), -loss))
    order = order[new[order]]
    cum = np.cumsum(w[order])
    best, best_score = base, objective(base, w, penalty)
    tried: set[int] = set()
    for share in _STEPS:
        count = int(np.searchsorted(cum, share * room, side="right"))
        if count == 0 or count in tried:
            continue
        tried.add(count)
        hold = np.zeros(w.size, dtype=bool)
        hold[order[:count]] = True
        keep = np.flatnonzero(~hold)
        held = int(w[hold].sum())
        # the algorithm whose plan was kept (``auto`` tries several: once is enough)
        # (global recoding searches its levels itself: its algorithm stays 'auto')
        how = algorithm if base.algorithm == "global" else base.algorithm
        sub = plan(keep, left_out_before + held, "least", how)
        if sub.absent + held + left_out_before > allowed:
            continue
        candidate = _widen(sub, keep, w, held)
        score = objective(candidate, w, penalty)
        if score < best_score - SLACK:
            best, best_score = candidate, score
    return best


def check_policy(policy: object, hold_penalty: object = None) -> float:
    """``policy``'s hold penalty, or :class:`ConfigError` for a policy or penalty that
    is not one."""
    if policy not in LHD_POLICIES:
        raise ConfigError(f"policy must be one of {', '.join(LHD_POLICIES)}, got {policy!r}")
    if hold_penalty is not None:
        if policy != "auto":
            raise ConfigError(f"hold_penalty only applies to policy 'auto', not {policy!r}")
        if (
            isinstance(hold_penalty, bool)
            or not isinstance(hold_penalty, int | float | np.number)
            or not 0 <= float(hold_penalty) <= 1
        ):
            raise ConfigError(f"hold_penalty must be a number in [0, 1], got {hold_penalty!r}")
        return float(hold_penalty)
    return {"auto": DEFAULT_HOLD_PENALTY, "defer": 0.0, "publish": 1.0}[str(policy)]


def entry_loss(plan: LhdPlan, weight: np.ndarray) -> np.ndarray:
    """Per given entry: its records' mean precision loss (mean over QI of level /
    height), -1 when none of them is published."""
    heights = np.asarray(plan.heights, dtype=np.float64)
    per_class = np.append((plan.class_levels / heights).mean(axis=1), 0.0)
    ranks = plan.rank_class if plan.rank_class is not None else plan.class_id[:, None]
    count = _rank_records(weight, ranks.shape[1])
    published = (ranks >= 0) * count
    total = (per_class[ranks] * published).sum(axis=1)
    some = published.sum(axis=1)
    return np.where(some > 0, total / np.maximum(some, 1), -1.0)


def objective(plan: LhdPlan, weight: np.ndarray, penalty: float) -> float:
    """Sum over published records of their precision loss, plus ``penalty`` per
    held-back record and 1 per suppressed one (module docstring)."""
    loss = entry_loss(plan, weight)
    ranks = plan.rank_class if plan.rank_class is not None else plan.class_id[:, None]
    published = ((ranks >= 0) * _rank_records(weight, ranks.shape[1])).sum(axis=1)
    published_loss = float((np.maximum(loss, 0) * published).sum())
    return published_loss + penalty * plan.held_back + plan.suppressed


def _rank_records(weight: np.ndarray, columns: int) -> np.ndarray:
    """Records per (entry, rank column) of ``LhdPlan.rank_class``: one for each rank
    below the last column, the rest in the last column."""
    if columns == 1:
        return weight[:, None]
    ranks = np.arange(columns)
    return np.where(
        ranks[None, :] < columns - 1,
        (ranks[None, :] < weight[:, None]).astype(np.int64),
        np.maximum(weight - (columns - 1), 0)[:, None],
    )


def _widen(sub: LhdPlan, keep: np.ndarray, weight: np.ndarray, held: int) -> LhdPlan:
    """``sub`` (a plan of the entries ``keep``) as a plan of every entry, the others
    held back: their records count as absent in precision loss and DM."""
    n = weight.size
    class_id = np.full(n, -1, dtype=np.int64)
    class_id[keep] = sub.class_id
    rank_class = None
    if sub.rank_class is not None:
        rank_class = np.full((n, sub.rank_class.shape[1]), -1, dtype=np.int64)
        rank_class[keep] = sub.rank_class
    kept = int(weight[keep].sum())
    total = kept + held
    squares = sub.dm - kept * sub.absent
    return replace(
        sub,
        class_id=class_id,
        rank_class=rank_class,
        held_back=sub.held_back + held,
        precision_loss=(sub.precision_loss * kept + held) / total if total else 0.0,
        dm=int(squares + total * (sub.absent + held)),
    )


def _array(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """``values`` as an array to index (a list as objects: values of mixed types)."""
    return values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
