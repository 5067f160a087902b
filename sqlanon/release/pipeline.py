"""One release, of either model, on either path: read -> plan -> write.

A model's verb (:mod:`~sqlanon.release.ke_release`, :mod:`~sqlanon.release.lhd_release`)
checks its arguments and the source, decides the version and the domain, and hands
:func:`release` a :class:`Job`. The job runs on the **engine path** (the model's
``*_engine`` module: the source read into a temporary table, the planner fed one entry
per group of records it may treat alike, the plan joined back to the rows in SQL) or,
when that path declines before writing anything, on the **row path** (``*_rows``: every
row read into numpy). On either path :func:`run` takes the same stages in the same order:

1. **read**: the source joined with the state of earlier releases; the changes since
   the family's last version applied (deleted records and the old incarnations of
   changed ones become ghosts); the planner's entries, live then ghosts, each with its
   cell before (:class:`Read`).
2. **plan**: the model's planner (:mod:`sqlanon.models`) under the cell rule and the
   chain rule (:func:`sqlanon.release.plan.plan_live`), then the cell check on what it
   planned (:func:`refuse_unsafe`), the last check before anything is written.
3. **write**: unless nothing would be new (MODELS.md, "Nothing new"): the release table,
   then the private state (members, kept values, cells).

:func:`release` then records the catalog row and points the family's view at the table
(:func:`sqlanon.release.publish.publish`), and, on PostgreSQL with change capture on, the
capture mark taken before the read (:mod:`sqlanon.state.capture`). A **dry run**
(``Job.dry_run``) takes the same read and plan, the same refusals, then stops before the
write and returns the summary the release would return, marked ``dry_run`` and with
what the owner needs to choose parameters (:func:`preview_of`); the verb runs it in
:func:`transaction`, which rolls back whatever the read touched (the changes it applies,
the temporary tables), so that nothing at all is written. A model on a path contributes
its :class:`Steps`; the two paths of one model share the model's planner and catalog row,
the two models on one path share that path's reads and writes
(:mod:`~sqlanon.release.engine_path`, :mod:`~sqlanon.release.row_path`).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from sqlanon.errors import UnsafeReleaseError
from sqlanon.models.cells import Cells, failing_cells
from sqlanon.release.domain_scope import DomainScope
from sqlanon.release.publish import publish
from sqlanon.session import Session
from sqlanon.state import capture, catalog, live, release_rows
from sqlanon.state.source import Source, current_schema, relation


@dataclass(frozen=True)
class Job:
    """One release after its verb's checks: what it reads, where it writes, what its
    catalog row records. A model's job adds its parameters, the figures of its catalog
    row and what analysts may read of it."""

    src: Source
    family: str
    key: str
    quasi: list[str]
    scope: DomainScope
    last: catalog.Release | None  # the family's latest release; None: this is version 1
    version: int
    table: str
    parameters: dict[str, Any]
    source_rows: int
    progress: Callable[[str, int], None] | None
    dry_run: bool = field(default=False, kw_only=True)  # plan, refuse, write nothing

    model: ClassVar[str]
    #: The column of the release table naming a row's group (class).
    group_column: ClassVar[str]

    def note(self, stage: str, count: int) -> None:
        """Tell the caller's ``progress`` that a long step is done."""
        if self.progress is not None:
            self.progress(stage, count)

    def check_published(self, planned: Planned, ghosts: int) -> None:
        """Refuse a plan the model would not publish (called once it is known to be new);
        ``ghosts``: how many of the planned records are the domain's ghosts."""

    def figures(self, written: Written) -> tuple[int, float | None, dict[str, Any]]:
        """The catalog row's groups, sum of errors and metrics."""
        raise NotImplementedError

    def utility(self, written: Written) -> dict[str, Any]:
        """What a dry run reports of the plan's utility (the planner's own figures)."""
        raise NotImplementedError

    def readable(self, session: Session) -> list[str]:
        """What analysts may read of the release besides its view."""
        return [relation(session, self.table)]

    def content(self, columns: Sequence[str]) -> tuple[list[str], list[str]]:
        """What a group of the release table (with ``columns``) publishes, as the two
        lists of columns whose multisets are its content
        (:mod:`sqlanon.state.release_rows`)."""
        raise NotImplementedError

    def bounds(self, session: Session) -> str | None:
        """The release's bounds table as SQL, if it has one."""
        return None

    def staged(self, session: Session) -> release_rows.Staged:
        """The release table as written, before it moves into the family's rows."""
        schema = current_schema(session)
        columns = release_rows.columns_of(session, schema, self.table)
        who, what = self.content([c for c in columns if c != self.group_column])
        return release_rows.Staged(
            family=self.family,
            version=self.version,
            table=relation(session, self.table),
            schema=schema,
            name=self.table,
            columns=columns,
            group=self.group_column,
            who=who,
            what=what,
            bounds=self.bounds(session),
            previous=None
            if self.last is None
            else (self.last.schema or schema, self.last.table_name),
        )

    def catalog_row(self, written: Written) -> catalog.Release:
        assert written.planned is not None
        groups, sum_of_errors, metrics = self.figures(written)
        return catalog.Release(
            family=self.family,
            version=self.version,
            table_name=self.table,
            model=self.model,
            source=self.src.label,
            parameters=self.parameters,
            **written.planned.counts(),
            groups=groups,
            sum_of_errors=sum_of_errors,
            source_rows=self.source_rows,
            metrics=metrics,
            domain=self.scope.name,
            seq=self.scope.seq,
        )


@dataclass(frozen=True)
class Read:
    """What the read leaves the planner: its entries, live records (or groups of records
    the planner may treat alike) first, then the domain's ghosts (on the engine path of
    (k,e), ghosts and records may share an entry). Per entry: its cell over the domain's
    releases before this one (``prior``), its values of the attributes the planner and
    the chain rule compare (``values``), and how many records it stands for
    (``weight``; None: one each). ``chains``: the domain's chains of incarnations, as
    entry indices."""

    prior: Cells
    values: dict[str, np.ndarray]
    weight: np.ndarray | None
    chains: list[tuple[int, ...]]
    changes: live.Changes
    ghosts: live.Ghosts


@dataclass(frozen=True)
class Planned:
    """A release's plan, per planned row (an entry; on the lHD engine path a rank segment
    of one): its group ((k,e)) or class (lHD), -1 when left out; its cell before and
    after; the values the cell check reads; the records it stands for. Also: the
    model's own plan, how many groups it publishes, the records the chain rule left out,
    whether the cell check applies (not to the seeds' ``paper`` rule), the ghost rows
    the release table shows, and (lHD) the quasi columns it publishes NULL in."""

    plan: Any
    groups: int
    group: np.ndarray
    prior: Cells
    cells: Cells
    values: dict[str, np.ndarray]
    weight: np.ndarray | None = None
    chain_held: int = 0
    cell_check: bool = True
    ghost_rows: int = 0
    null_quasi: list[str] = field(default_factory=list)

    @property
    def chosen(self) -> np.ndarray:
        return self.group >= 0

    def counts(self) -> dict[str, int]:
        """The catalog row's counts: live records published, records left out that no
        release published yet (held back) and that one did (suppressed), ghosts
        included."""
        chosen, never = self.chosen, self.prior.cell < 0
        weight = np.ones(chosen.size, dtype=np.int64) if self.weight is None else self.weight
        return {
            "rows_published": int(weight[chosen].sum()) - self.ghost_rows,
            "held_back": int(weight[~chosen & never].sum()),
            "suppressed": int(weight[~chosen & ~never].sum()),
        }


@dataclass(frozen=True)
class Written:
    """What a release wrote, for its catalog row; ``planned`` None: nothing, as it would
    publish nothing new."""

    planned: Planned | None = None
    changes: dict[str, int] = field(default_factory=dict)


J = TypeVar("J", bound=Job)
R = TypeVar("R", bound=Read)


@dataclass(frozen=True)
class Steps(Generic[J, R]):
    """One model's stages on one path, each given the session, the job and what the
    stages before it returned:

    - ``read``: the entries (None: this path declines the release, having written
      nothing);
    - ``plan``: the model's planner on them, under the cell and chain rules;
    - ``load_plan``: the plan where the writes join it (the engine path's temporary
      tables), with the ghost rows the release will show;
    - ``newly_published``: whether a record the family's last version did not publish
      is published now;
    - ``write_table``: the release table; returns the rows it reports written;
    - ``write_state``: the private state: members, kept values, cells (and the (k,e)
      bounds table);
    - ``plan_tables``: the temporary tables that hold the plan's group ids (column
      ``group_id``) between ``write_table`` and ``write_state``, which
      :func:`sqlanon.state.release_rows.keep` renumbers to the ids the release shows;
    - ``overlap``: counts, per planned group and group of the family's last version,
      the records they share (``_sqlanon_overlap``), so that a group may continue one
      (:mod:`sqlanon.state.continued_rows`); None: no group continues.
    """

    read: Callable[[Session, J], R | None]
    plan: Callable[[Session, J, R], Planned]
    load_plan: Callable[[Session, J, R, Planned], Planned]
    newly_published: Callable[[Session, J, R, Planned], bool]
    write_table: Callable[[Session, J, R, Planned], int]
    write_state: Callable[[Session, J, R, Planned], None]
    plan_tables: Callable[[R], Sequence[str]] = lambda read: ()
    overlap: Callable[[Session, J, R], None] | None = None


def plan_in(*tables: str) -> Callable[[Read], list[str]]:
    """``Steps.plan_tables`` of a path whose plan's group ids are in ``tables`` before
    the write of the state (and, with ghosts, theirs in ``_sqlanon_ghost_members``)."""
    return lambda read: [*tables, *(["_sqlanon_ghost_members"] if read.ghosts.count else [])]


def run(session: Session, job: J, steps: Steps[J, R]) -> Written | None:
    """Read, plan and write ``job`` on one path, inside the caller's transaction; None,
    having written nothing, when the path declines it."""
    read = steps.read(session, job)
    if read is None:
        return None
    planned = steps.plan(session, job, read)
    if planned.cell_check:
        refuse_unsafe(planned.prior, planned.cells, planned.values)
    planned = steps.load_plan(session, job, read, planned)
    changes, ghosts = read.changes, read.ghosts
    if (
        job.last is not None
        and not changes.any
        and ghosts.count == changes.ghosts_before
        and not steps.newly_published(session, job, read, planned)
    ):
        return Written()
    job.check_published(planned, ghosts.count)
    if job.dry_run:
        return Written(planned, changes.as_metrics())
    job.note("groups built", planned.groups)
    job.note("rows written", steps.write_table(session, job, read, planned))
    if not release_rows.shared(session):  # Spark: a table per version
        steps.write_state(session, job, read, planned)
        return Written(planned, changes.as_metrics())
    staged = job.staged(session)
    overlap = steps.overlap is not None and job.last is not None
    if steps.overlap is not None and overlap:
        steps.overlap(session, job, read)
    group = release_rows.keep(
        session, staged, steps.plan_tables(read), planned.group, overlap=overlap
    )
    planned = replace(planned, group=group)
    steps.write_state(session, job, read, planned)
    release_rows.store(session, staged)
    return Written(planned, changes.as_metrics())


def release(
    session: Session,
    job: J,
    engine: Callable[[Session, J], Written | None],
    rows: Steps[J, Any],
) -> dict[str, Any]:
    """``job`` on the ``engine`` path, or on the row path (``rows``) when that declines;
    then its catalog row and view. Returns the summary (the latest one, marked
    ``unchanged``, when the release would publish nothing new)."""
    if job.version == 1 and not job.dry_run:
        release_rows.check_free(session, job.family)
    captured = capture.mark(session, job.src, job.key)  # before the source is read
    written = engine(session, job)
    if written is None:
        written = run(session, job, rows)
    assert written is not None  # the row path takes every release
    if written.planned is None:
        assert job.last is not None
        return {
            **summary_of(job.last),
            "unchanged": True,
            **({"dry_run": True} if job.dry_run else {}),
        }
    row = job.catalog_row(written)
    if job.dry_run:
        return {**summary_of(row), **preview_of(job, written)}
    publish(session, row, job.readable(session))
    capture.record(session, row, captured, job.src)
    return summary_of(row)


class _DryRunDone(Exception):
    """Carries a dry run's summary out of its transaction, which rolls back on it."""

    def __init__(self, summary: dict[str, Any]) -> None:
        super().__init__("dry run")
        self.summary = summary


def transaction(
    session: Session, body: Callable[[], dict[str, Any]], *, dry_run: bool
) -> dict[str, Any]:
    """``body()`` (a verb's locks, checks and :func:`release`) in one transaction of
    ``session``; for a dry run that transaction is rolled back, leaving nothing behind
    (not the changes the read applies, nor a temporary table, nor a lock), and the
    summary ``body`` returned is returned all the same."""
    try:
        with session.transaction():
            summary = body()
            if dry_run:
                raise _DryRunDone(summary)
            return summary
    except _DryRunDone as done:
        return done.summary


#: What each figure of a summary that leaves records out counts (README, "Preview").
LEFT_OUT_RULES = {
    "held_back": "records no release of the domain published yet that this one leaves "
    "out (they cannot form a valid group or class now); offered again next time",
    "suppressed": "records an earlier release of the domain published that this one "
    "leaves out: their old cell cannot meet this release's rule whole",
    "chain_held": "of those left out, the records the chain rule holds back: a "
    "changed record's new incarnation, or an old cell a changed record's chain touches",
}


def preview_of(job: Job, written: Written) -> dict[str, Any]:
    """What a dry run adds to the summary: why records are left out (per rule, in the
    summary's own figures), the utility the planner measured, and what the release
    would constrain for later ones (the attributes the domain's cells would fix)."""
    planned = written.planned
    assert planned is not None
    counts = planned.counts()
    figures = {**counts, "chain_held": planned.chain_held}
    scope = job.scope
    return {
        "dry_run": True,
        "why_left_out": {
            name: {"records": figures[name], "rule": rule} for name, rule in LEFT_OUT_RULES.items()
        },
        "utility": job.utility(written),
        "constrains": {
            "domain": scope.name,
            "attributes": scope.attributes,
            "new_attributes": [a for a in scope.attributes if a not in scope.before],
        },
    }


def refuse_unsafe(before: Cells, after: Cells, values: dict[str, np.ndarray]) -> None:
    """The last check before anything is written: every cell meets its requirement."""
    failing = failing_cells(before, after, values)
    if failing.any():
        raise UnsafeReleaseError(
            f"internal error: {int(failing.sum())} cells of the planned release break the "
            "cell rule; nothing was published; please report this with the input"
        )


def with_ghosts(
    values: dict[str, np.ndarray], ghosts: live.Ghosts, numbers: Container[str] = ()
) -> dict[str, np.ndarray]:
    """Each attribute's values of the live entries, then of the ghosts (their kept
    values): as Python objects, but for the attributes in ``numbers`` (float64)."""
    if not ghosts.count:
        return values
    return {
        a: np.concatenate([v, ghosts.values[a].astype(np.float64)])
        if a in numbers
        else np.concatenate([np.asarray(v, dtype=object), ghosts.values[a]])
        for a, v in values.items()
    }


def summary_of(release: catalog.Release) -> dict[str, Any]:
    """What a release returns: its catalog row's figures. ``left_out`` = ``held_back`` +
    ``suppressed``; ``chain_held`` (in the metrics) counts those of them the chain rule
    left out (catalogs before it was named so recorded it as ``chain_held_back``)."""
    metrics = dict(release.metrics)
    if "chain_held_back" in metrics:
        metrics.setdefault("chain_held", metrics.pop("chain_held_back"))
    return {
        "family": release.family,
        "version": release.version,
        "table": release.table_name,
        "model": release.model,
        "rows_published": release.rows_published,
        "held_back": release.held_back,
        "suppressed": release.suppressed,
        "left_out": release.held_back + release.suppressed,
        "groups": release.groups,
        "sum_of_errors": release.sum_of_errors,
        "source_rows": release.source_rows,
        "domain": release.domain,
        "seq": release.seq,
        **metrics,
    }
