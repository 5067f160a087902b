"""An lHD release after its checks (:class:`LhdJob`), the catalog row it ends in, and
what its two paths plan with alike: ``max_suppression`` as a contract
(:func:`plan_within_max_suppression`), the quasi-identifiers a ghost plans with
(:func:`stand_ins`), the quasi columns published NULL (:func:`published_nulls`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from sqlanon.errors import SuppressionLimitError
from sqlanon.hierarchy import missing_mask
from sqlanon.models.lhd_defer import DEFAULT_POLICY
from sqlanon.models.lhd_planner import SLACK, LhdPlan
from sqlanon.release.pipeline import Job, Planned, Written
from sqlanon.session import Session
from sqlanon.state import catalog


@dataclass(frozen=True)
class LhdJob(Job):
    """An lHD release of ``sensitive`` (each l-diverse). ``checked``: the attributes
    earlier releases of the domain constrain that this one does not publish;
    ``read_sql``: the source read (``lhd_read_source.sql``, rendered) both paths wrap;
    ``policy``: whether appended records may be held back for narrower classes later
    (:mod:`sqlanon.models.lhd_defer`)."""

    sensitive: list[str]
    checked: list[str]
    l: int  # noqa: E741
    algorithm: str
    max_suppression: float
    read_sql: str
    recoding: str = field(default="local", kw_only=True)  # or "global": one level per QI
    # what other families of the domain ask of a cell: attribute -> (distinct, spread)
    anticipate: dict[str, tuple[int, float]] = field(default_factory=dict, kw_only=True)
    policy: str = field(
        default=DEFAULT_POLICY, kw_only=True
    )  # whether appended records may wait (lhd_defer)

    model: ClassVar[str] = "lhd"
    group_column: ClassVar[str] = "class_id"

    def content(self, columns: Sequence[str]) -> tuple[list[str], list[str]]:
        """Its rows as they are (labels, sensitive values, ghosts' count)."""
        return list(columns), list(columns)

    def figures(self, written: Written) -> tuple[int, float | None, dict[str, Any]]:
        planned = written.planned
        assert planned is not None
        plan = planned.plan
        return (
            int(plan.n_classes),
            None,
            {
                "precision_loss": float(plan.precision_loss),
                "dm": int(plan.dm),
                "algorithm_used": plan.algorithm,
                **self._levels(plan),
                **written.changes,
                "ghosts": planned.ghost_rows,
                "chain_held": planned.chain_held,
                # left_out (held_back + suppressed) <= max_suppression * records
                "records": records_of(planned),
                # The rewriter reads '*' in these columns as possibly NULL.
                **({"null_quasi": planned.null_quasi} if planned.null_quasi else {}),
            },
        )

    def _levels(self, plan: LhdPlan) -> dict[str, Any]:
        """Global recoding: the one level each quasi-identifier is published at."""
        if self.recoding != "global" or not plan.n_classes:
            return {}
        return {"levels": dict(zip(plan.quasi, plan.class_levels[0].tolist(), strict=True))}

    def utility(self, written: Written) -> dict[str, Any]:
        """The planner's figures: classes, precision loss, discernibility (DM), and the
        share of the source's records left out against ``max_suppression``."""
        planned = written.planned
        assert planned is not None
        counts = planned.counts()
        left_out = counts["held_back"] + counts["suppressed"]
        considered = left_out + counts["rows_published"] + planned.ghost_rows
        return {
            "classes": int(planned.plan.n_classes),
            "precision_loss": float(planned.plan.precision_loss),
            "dm": int(planned.plan.dm),
            "left_out_fraction": left_out / considered if considered else 0.0,
            "max_suppression": self.max_suppression,
            "recoding": self.recoding,
            **self._levels(planned.plan),
        }


def plan_within_max_suppression(
    session: Session, job: LhdJob, plan: Callable[[float, bool], Planned]
) -> Planned:
    """The release's plan, leaving out at most ``job.max_suppression`` of its records
    (README, "lHD"): ``plan(budget, ahead)`` plans on one path under the chain rule, its
    planner keeping within ``budget`` what the chain rule leaves it (else leaving out
    the fewest it can), new pieces meeting the domain's other families when ``ahead``
    (``job.anticipate``). The planner's best plan within the contract, with them, else
    without them (they are a courtesy to later releases, not a rule), else the plan
    leaving out the fewest records, else :class:`SuppressionLimitError`, before anything
    is written."""
    planned = plan(job.max_suppression, True)
    if _within(planned, job.max_suppression):
        return planned
    if job.anticipate:
        planned = plan(job.max_suppression, False)
        if _within(planned, job.max_suppression):
            return planned
    least = plan(0.0, False)
    if _within(least, job.max_suppression):
        return least
    raise SuppressionLimitError(_refusal(session, job, least))


def _within(planned: Planned, max_suppression: float) -> bool:
    counts = planned.counts()
    return (
        counts["held_back"] + counts["suppressed"] <= max_suppression * records_of(planned) + SLACK
    )


def records_of(planned: Planned) -> int:
    """The records a release covers, the denominator of ``max_suppression``: the
    source's rows and the domain's ghosts, whether published now or left out."""
    return int(planned.group.size if planned.weight is None else planned.weight.sum())


def _refusal(session: Session, job: LhdJob, planned: Planned) -> str:
    """One line: what the release would leave out, per rule, and the options."""
    counts, plan, total = planned.counts(), planned.plan, records_of(planned)
    left = counts["held_back"] + counts["suppressed"]
    chain_old = counts["suppressed"] - int(plan.suppressed)
    chain_new = counts["held_back"] - int(plan.held_back)
    needed = math.ceil(left / total * 10_000) / 10_000
    others = list(
        dict.fromkeys(
            f"{r.family!r} ({'(k,e)' if r.model == 'ke' else 'lHD'})"
            for r in catalog.domain_releases(session, job.scope.name)
            if r.family != job.family
        )
    )
    by = f", made by famil{'y' if len(others) == 1 else 'ies'} {', '.join(others)}"
    chain = (
        f"the chain rule leaves out {planned.chain_held:,} ({chain_old:,} in whole cells of "
        f"earlier releases of domain {job.scope.name!r}{by if others else ''} that hold a "
        f"changed record, {chain_new:,} new values of changed records)"
    )
    return (
        f"lHD release {job.family} v{job.version} would leave out {left:,} of {total:,} "
        f"records ({left / total:.1%}) > max_suppression={job.max_suppression:g}: "
        f"{chain}, l-diversity suppresses {int(plan.suppressed):,} published before, "
        f"{int(plan.held_back):,} new records are held back (no l-diverse piece yet); "
        f"nothing was published; raise max_suppression to {needed:.4f}, try another l, "
        "or release a copy of the source into a domain of its own (domain := '<new name>')"
    )


def published_nulls(quasi: dict[str, np.ndarray], published: np.ndarray) -> list[str]:
    """The quasi columns (values per planner entry) with a missing value (NULL) among the
    ``published`` entries: the rewriter must then read each of their ``*`` labels as
    possibly NULL (a NULL joins other values only at the top of its hierarchy)."""
    return [c for c, values in quasi.items() if missing_mask(values[published]).any()]


def stand_ins(cell: np.ndarray, weight: np.ndarray, ghosts: int) -> np.ndarray:
    """For each ghost (entries ``weight.size`` and after of ``cell``), the live entry
    whose quasi-identifiers it plans with: the entry of a random live record of its cell
    (entry i holds ``weight[i]`` records: a unit, or one row on the row path), else of one
    random live record for every ghost of that cell. A ghost has no QI of its own; the
    release shows it with its class's labels only."""
    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    units = weight.size
    live_cell, ghost_cell = cell[:units], cell[units : units + ghosts]
    order = np.lexsort((np.arange(units), live_cell))
    ordered, cum = live_cell[order], np.cumsum(weight[order])
    start = np.searchsorted(ordered, ghost_cell, "left")
    stop = np.searchsorted(ordered, ghost_cell, "right")
    before = np.where(start > 0, cum[np.maximum(start - 1, 0)], 0)
    span = np.where(stop > start, cum[np.maximum(stop - 1, 0)] - before, 0)
    pick = before + np.floor(rng.random(ghosts) * np.maximum(span, 1)).astype(np.int64)
    at = order[np.minimum(np.searchsorted(cum, pick, "right"), units - 1)]
    orphan = span == 0
    if orphan.any():
        ids, inverse = np.unique(ghost_cell[orphan], return_inverse=True)
        anyone = np.searchsorted(
            np.cumsum(weight), rng.integers(0, weight.sum(), ids.size), "right"
        )
        at[orphan] = anyone[inverse.reshape(-1)]
    return np.asarray(at, dtype=np.int64)
