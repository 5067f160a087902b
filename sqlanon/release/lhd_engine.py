"""lHD releases that never pull rows into Python: plan on units, write in the engine.

The stages of :mod:`~sqlanon.release.pipeline` on the engine path, as for (k,e)
(:mod:`~sqlanon.release.ke_engine`):

1. **Read** (SQL): the source joined with the state of the family's and the domain's
   last releases, kept in the temporary table ``_sqlanon_read`` with each row's
   ``unit``, a hash of the values the planner tells records apart by, and ``seg``, its
   rank in its unit by key capped at ``UNIT_SINGLES``; Python reads one entry per unit
   (its values and its number of records, ``lhd_engine_units.sql``).
2. **Plan** (pure): :func:`sqlanon.models.lhd_planner.plan_lhd` (under the release's
   ``policy``, :mod:`sqlanon.models.lhd_defer`) on the units, each weighted by
   its records; it places the first ``UNIT_SINGLES`` records of a unit one by one and
   the rest together, so the plan is a small table: per (unit, seg) its class, its cell
   after this release and its labels.
3. **Write** (SQL): the plan joined to the rows on (``unit``, ``seg``) writes the
   release table (rows in a keyed pseudo-random order), the members' state, the kept
   values.

The planner gets the units the row path (:mod:`~sqlanon.release.lhd_rows`, reading rows
in key order) would make, in the same order, so both publish the same classes
(``tests/test_lhd_engine.py``). Releases this path does not cover go the row path
(:func:`release` returns None before it writes anything): domains with chains or
changed constrained values. Every engine takes it, Spark too (its temporary tables are
parquet tables in ``sqlanon_work``: :mod:`sqlanon.spark.session`), so the driver holds
units, never rows. Deleted records are ghosts here too: read (their
kept values; few) and planned beside the units, each with the QI of a random live
record of its cell, and shown among the rows of their class.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sqlanon import sqltext
from sqlanon.models.cells import Requirement
from sqlanon.models.lhd_defer import plan_lhd_policy
from sqlanon.models.lhd_problem import UNIT_SINGLES
from sqlanon.release import engine_path
from sqlanon.release.engine_path import shuffle_key
from sqlanon.release.lhd_job import (
    LhdJob,
    plan_within_max_suppression,
    published_nulls,
    stand_ins,
)
from sqlanon.release.pipeline import Planned, Read, Steps, Written, plan_in, with_ghosts
from sqlanon.session import Session
from sqlanon.state import domains, live
from sqlanon.state.hierarchies import read_hierarchies
from sqlanon.state.source import relation, render_sql

#: Temporary tables of one engine release, dropped when it ends either way.
_TEMP = ("_sqlanon_read", "_sqlanon_plan", "_sqlanon_ghost_values", "_sqlanon_ghost_members")


@dataclass(frozen=True)
class UnitsRead(Read):
    """The entries of the engine path: the units (``units``, the first ``live``
    entries), then one per ghost (a deleted record the domain keeps)."""

    units: dict[str, np.ndarray]
    live: int


def release(session: Session, job: LhdJob) -> Written | None:
    """Write ``job`` on the engine path inside the caller's transaction; the caller
    records the catalog row. None, having written nothing, when this release needs the
    row path."""
    return engine_path.run_on_engine(session, job, STEPS, temp=_TEMP)


def _read(session: Session, job: LhdJob) -> UnitsRead | None:
    """The source into ``_sqlanon_read``, the units read, the changes applied, the
    ghosts read; None (the row path) with chains or changed constrained values, or when
    two units share a hash."""
    q, scope, src = session.quote_ident, job.scope, job.src
    columns = list(dict.fromkeys([*job.quasi, *job.sensitive, *job.checked]))
    # the unit tells apart what the planner tells apart: text byte by byte, whatever
    # collation the column has (a case-insensitive one would merge 'a' and 'A')
    hashed = sqltext.binary(
        [(f"{q('r')}.{q('domain_cell')}", "BIGINT")]
        + [(f"{q('r')}.{q(c)}", src.columns[c]) for c in columns],
        session.dialect,
    )
    stats = engine_path.read_source(
        session,
        render_sql(session, "lhd_engine_read", entry=hashed) + job.read_sql + "\n) AS r\n) AS u",
        [*scope.read_parameters(job.family, job.last), UNIT_SINGLES],
        "lhd_engine_stats",
    )
    if scope.last is not None and (stats["value_changed"] or scope.linked(session)):
        return None  # changed constrained values, chains: the row path
    units = session.query_arrays(
        render_sql(session, "lhd_engine_units", columns=", ".join(q(c) for c in columns))
    )
    if np.unique(units["unit"]).size != units["unit"].size:
        return None  # two distinct units share a 64-bit hash: the row path tells them apart
    job.note("rows read", int(stats["n"]))
    changes = engine_path.counted_changes(session, job, stats)
    ghosts = live.read_ghosts(
        session, scope.name, scope.last, job.family, job.last, src, scope.attributes
    )
    weight = units["records"].astype(np.int64)
    if scope.last is None:
        units["domain_cell"] = np.full(weight.size, -1, dtype=np.int64)
    raw_cell = np.concatenate([units["domain_cell"].astype(np.int64), ghosts.cell])
    return UnitsRead(
        prior=domains.read_cells(session, scope.last, raw_cell),
        values=with_ghosts({a: units[a] for a in [*job.sensitive, *job.checked]}, ghosts),
        weight=np.concatenate([weight, np.ones(ghosts.count, dtype=np.int64)]),
        chains=[],  # none on this path
        changes=changes,
        ghosts=ghosts,
        units=units,
        live=weight.size,
    )


def _segments(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (entry, rank segment) holding records: the entry, the segment and its
    records. Segment j < UNIT_SINGLES is the record of rank j in its entry (key order),
    segment UNIT_SINGLES all records from that rank on; the planner gives each a class
    (``LhdPlan.rank_class``)."""
    segments = np.arange(UNIT_SINGLES + 1)
    records = np.where(
        segments < UNIT_SINGLES,
        (segments[None, :] < weight[:, None]).astype(np.int64),
        np.maximum(weight - UNIT_SINGLES, 0)[:, None],
    )
    entry, seg = np.nonzero(records)
    return entry, seg, records[entry, seg]


def _plan(session: Session, job: LhdJob, read: UnitsRead) -> Planned:
    """:func:`sqlanon.models.lhd_planner.plan_lhd` on the units and the ghosts (each with the
    QI of a random live record of its cell), then per rank segment its class and its
    cells (no chains on this path: the old cells split by class), within
    ``max_suppression`` (:func:`~sqlanon.release.lhd_job.plan_within_max_suppression`)."""
    assert read.weight is not None
    units, n, weight = read.units, read.live, read.weight
    at = np.concatenate([np.arange(n), stand_ins(read.prior.cell, weight[:n], read.ghosts.count)])
    quasi = {c: units[c][at] for c in job.quasi}
    hierarchies = read_hierarchies(session, job.src, job.parameters["dataset"], job.quasi, units)
    entry, seg, seg_weight = _segments(weight)
    seg_prior = read.prior.select(entry)

    def within(budget: float, ahead: bool) -> Planned:
        plan = plan_lhd_policy(
            quasi,
            {s: read.values[s] for s in job.sensitive},
            hierarchies,
            job.l,
            read.prior,
            job.algorithm,
            budget,
            checked={a: read.values[a] for a in job.checked},
            weight=weight,
            over_budget="least",
            recoding=job.recoding,
            policy=job.policy,
            anticipate=job.anticipate if ahead else None,
        )
        assert plan.rank_class is not None
        class_id = plan.rank_class[entry, seg]
        return Planned(
            plan=plan,
            groups=int(plan.n_classes),
            group=class_id,
            prior=seg_prior,
            cells=seg_prior.then(class_id, Requirement.lhd(list(job.sensitive), job.l)),
            values={a: v[entry] for a, v in read.values.items()},
            weight=seg_weight,
            null_quasi=published_nulls(quasi, entry[class_id >= 0]),
        )

    return plan_within_max_suppression(session, job, within)


def _load_plan(session: Session, job: LhdJob, read: UnitsRead, planned: Planned) -> Planned:
    """The plan as ``_sqlanon_plan`` ((unit, seg) -> class, cell after, the class's
    ghosts, one label per QI), the ghosts' as ``_sqlanon_ghost_members``."""
    assert read.weight is not None
    entry, seg, _ = _segments(read.weight)
    class_id, plan, cell = planned.group, planned.plan, planned.cells.cell
    chosen = class_id >= 0
    on_ghost = entry >= read.live
    on_live = ~on_ghost
    class_ghosts = np.append(np.bincount(class_id[chosen & on_ghost], minlength=plan.n_classes), 0)
    class_ghosts = class_ghosts[class_id]
    labels = {
        f"label_{j}": np.array([*(lab[j] for lab in plan.class_labels), None], dtype=object)[
            class_id
        ]
        for j in range(len(job.quasi))
    }
    label_types = dict.fromkeys(labels, "VARCHAR")
    session.load_temp(
        "_sqlanon_plan",
        {
            "unit": read.units["unit"][entry[on_live]],
            "seg": seg[on_live],
            "group_id": class_id[on_live],
            "cell_id": cell[on_live],
            "class_ghosts": class_ghosts[on_live],
            **{x: v[on_live] for x, v in labels.items()},
        },
        {
            "unit": "UBIGINT" if session.dialect == "duckdb" else "BIGINT",
            "seg": "BIGINT",
            "group_id": "INTEGER",
            "cell_id": "BIGINT",
            "class_ghosts": "INTEGER",
            **label_types,
        },
    )
    if read.ghosts.count:
        session.load_temp(
            "_sqlanon_ghost_members",
            {
                "record_key": read.ghosts.ids[entry[on_ghost] - read.live],
                "group_id": class_id[on_ghost],
                "cell_id": cell[on_ghost],
                "class_ghosts": class_ghosts[on_ghost],
                **{x: v[on_ghost] for x, v in labels.items()},
            },
            {
                "record_key": "VARCHAR",
                "group_id": "INTEGER",
                "cell_id": "BIGINT",
                "class_ghosts": "INTEGER",
                **label_types,
            },
        )
    return replace(planned, ghost_rows=int(chosen[on_ghost].sum()))


def _matches(session: Session) -> dict[str, str]:
    """The join of the plan to the read's rows: on (unit, seg)."""
    q = session.quote_ident
    return {"plan_match": sqltext.match(q("p"), q("r"), [q("unit"), q("seg")])}


def _newly_published(session: Session, job: LhdJob, read: UnitsRead, planned: Planned) -> bool:
    assert read.weight is not None
    entry, _, _ = _segments(read.weight)
    on_ghost = entry >= read.live
    newly = engine_path.newly_published(session, _matches(session))
    before = read.ghosts.published_before[entry[on_ghost] - read.live]
    newly += int((planned.chosen[on_ghost] & ~before).sum())
    return bool(newly)


def _write_table(session: Session, job: LhdJob, read: UnitsRead, planned: Planned) -> int:
    """The release table: each row with its class's labels, rows in the order of
    ``SHA-256(secret || key)``."""
    q, quasi, sensitive = session.quote_ident, job.quasi, job.sensitive
    labels = [f"label_{j}" for j in range(len(quasi))]
    session.execute(
        render_sql(
            session,
            "lhd_engine_release_ghosts" if read.ghosts.count else "lhd_engine_release",
            release=relation(session, job.table),
            labels=", ".join(
                f"{q('p')}.{q(x)} AS {q(c)}" for x, c in zip(labels, quasi, strict=True)
            ),
            sensitive=", ".join(f"{q('r')}.{q(s)}" for s in sensitive),
            ghost_labels=", ".join(
                f"{q('m')}.{q(x)} AS {q(c)}" for x, c in zip(labels, quasi, strict=True)
            ),
            ghost_sensitive=", ".join(f"{q('g')}.{q(s)}" for s in sensitive),
            shown=", ".join(f"{q('x')}.{q(c)}" for c in [*quasi, *sensitive]),
            order=sqltext.keyed_order(
                f"{q('x')}.{q('k')}" if read.ghosts.count else f"{q('r')}.{q('record_key')}",
                session.dialect,
            ),
            **_matches(session),
        ),
        [shuffle_key()],
    )
    return planned.counts()["rows_published"]


def _write_state(session: Session, job: LhdJob, read: UnitsRead, planned: Planned) -> None:
    columns = {a: a for a in job.scope.attributes}
    engine_path.write_state(
        session, job, _matches(session), columns, planned.cells, read.ghosts.count > 0
    )


STEPS: Steps[LhdJob, UnitsRead] = Steps(
    read=_read,
    plan=_plan,
    load_plan=_load_plan,
    newly_published=_newly_published,
    write_table=_write_table,
    write_state=_write_state,
    plan_tables=plan_in("_sqlanon_plan"),
)
