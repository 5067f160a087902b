"""A (k,e) release after its checks (:class:`KeJob`): how it plans on either path
(:func:`plan_ke`) and the catalog row it ends in."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from sqlanon.errors import BrokenCellError, InfeasibleError, UnsafeReleaseError
from sqlanon.metrics import error_ratio
from sqlanon.models import ke_incremental, ke_plan, ke_static
from sqlanon.models.cells import Requirement
from sqlanon.release.domain_scope import DomainScope
from sqlanon.release.pipeline import Job, Planned, Read, Written
from sqlanon.release.plan import plan_live
from sqlanon.session import Session
from sqlanon.state.source import bounds_relation, relation


@dataclass(frozen=True)
class KeJob(Job):
    """A (k,e) release of ``sensitive`` under ``policy``."""

    sensitive: str
    k: int
    e: float
    policy: str

    model: ClassVar[str] = "ke"
    group_column: ClassVar[str] = "group_id"

    def check_published(self, planned: Planned, ghosts: int) -> None:
        """(k,e) publishes no release without a live record. The refusal counts the
        source's records: the domain's ghosts (every one published before) are planned
        too, but are not in the source."""
        if planned.counts()["rows_published"]:
            return
        weight = np.ones(planned.group.size) if planned.weight is None else planned.weight
        records = int(weight.sum()) - ghosts
        before = int(weight[planned.prior.cell >= 0].sum()) - ghosts
        deleted = f" (and {ghosts} deleted or changed ones, now ghosts)" if ghosts else ""
        raise InfeasibleError(
            f"no record of {self.src.label} can be published under k={self.k}, "
            f"e={self.e:g} yet: {before} of its {records} records were published by earlier "
            f"releases of domain {self.scope.name!r}{deleted} in cells that cannot meet it, "
            "and the others cannot form a valid group; lower k or e, or release when more "
            "rows have arrived"
        )

    def figures(self, written: Written) -> tuple[int, float | None, dict[str, Any]]:
        planned = written.planned
        assert planned is not None
        plan = planned.plan
        published = planned.values[self.sensitive][planned.chosen]
        return (
            int(plan.groups),
            float(plan.sum_of_errors),
            {
                "static_optimum": plan.static_optimum,
                # the yardstick of metrics.error_ratio: the same rows, grouped optimally
                "published_optimum": ke_static.static_optimum(published, self.k, self.e),
                **written.changes,
                "ghosts": planned.ghost_rows,
                "chain_held": planned.chain_held,
            },
        )

    def utility(self, written: Written) -> dict[str, Any]:
        """The planner's figures: groups, sum of errors, the static optimum of the
        current table and of the rows published, and their ratio
        (:func:`sqlanon.metrics.error_ratio`)."""
        groups, sum_of_errors, metrics = self.figures(written)
        return {
            "groups": groups,
            "sum_of_errors": sum_of_errors,
            "static_optimum": metrics["static_optimum"],
            "published_optimum": metrics["published_optimum"],
            "error_ratio": error_ratio(sum_of_errors, metrics["published_optimum"]),
        }

    def content(self, columns: Sequence[str]) -> tuple[list[str], list[str]]:
        """Its rows' quasi-identifiers (and ghost flags), and its sensitive values: a
        group pairs them at random."""
        return [c for c in columns if c != self.sensitive], [self.sensitive]

    def bounds(self, session: Session) -> str | None:
        return bounds_relation(session, self.table)

    def readable(self, session: Session) -> list[str]:
        """Its table and its bounds table."""
        return [relation(session, self.table), bounds_relation(session, self.table)]


def plan_ke(
    session: Session, job: KeJob, read: Read, own_group: np.ndarray | None = None
) -> Planned:
    """:func:`sqlanon.models.ke_incremental.plan_in_cells` on the entries read (by their
    weight), under the chain rule; ``own_group``: each entry's group in the family's
    last version, for the seeds' ``paper`` rule (which the cell check would refuse, so
    it is not run)."""
    values, prior, weight = read.values[job.sensitive], read.prior, read.weight

    def planned(keep: np.ndarray, _whole: np.ndarray) -> tuple[np.ndarray, ke_plan.KePlan]:
        idx = np.flatnonzero(keep)
        p = ke_incremental.plan_in_cells(
            values[idx], prior.select(idx), job.sensitive, job.k, job.e, job.policy,
            own_group=None if own_group is None else own_group[idx],
            weight=None if weight is None else weight[idx],
        )  # fmt: skip
        group = np.full(values.size, -1, dtype=np.int64)
        group[idx] = p.group
        return group, p

    with explaining_paper_cells(session, job.scope, job.policy):
        group, plan, cells, chain_held = plan_live(
            planned, prior, Requirement.ke(job.sensitive, job.k, job.e), read.values,
            read.chains, weight,
        )  # fmt: skip
    return Planned(
        plan=plan,
        groups=int(plan.groups),
        group=group,
        prior=prior,
        cells=cells,
        values={job.sensitive: values},
        weight=weight,
        chain_held=chain_held,
        cell_check=job.policy != "paper",
    )


@contextmanager
def explaining_paper_cells(session: Session, scope: DomainScope, policy: str) -> Iterator[None]:
    """Around a (k,e) plan: a cell that an earlier release left below its requirement
    (:class:`BrokenCellError`) comes from the seeds' unsafe ``paper`` rule; say so, and
    what to do, rather than only which cell fell short."""
    try:
        yield
    except BrokenCellError as exc:
        paper = [] if policy == "paper" else scope.paper_releases(session)
        if not paper:
            raise
        raise UnsafeReleaseError(
            f"domain {scope.name!r} was published under the seeds' unsafe 'paper' rule "
            f"({', '.join(paper)}), which exposed records ({exc.shortfall}). The safe rule cannot "
            "continue that domain, as every later release would keep them exposed. Either "
            "keep policy 'paper' for it knowingly (the audit shows whom it exposes), or, if "
            "nobody holds those releases, start a new family in a new domain: release a "
            "copy or view of the source with domain := '<new name>'"
        ) from exc
