"""The row path of an lHD release, for what the engine path declines
(:mod:`~sqlanon.release.lhd_engine`: chains, changed constrained values): every
row read into numpy in key order, planned record by record under the chain rule, the
release table and the members' state written from arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from sqlanon import sqltext
from sqlanon.models.cells import Requirement
from sqlanon.models.lhd_defer import plan_lhd_policy
from sqlanon.release import row_path
from sqlanon.release.lhd_job import (
    LhdJob,
    plan_within_max_suppression,
    published_nulls,
    stand_ins,
)
from sqlanon.release.pipeline import Planned, Steps
from sqlanon.release.plan import plan_live
from sqlanon.release.row_path import RowsRead, load_members, random_order
from sqlanon.session import Session
from sqlanon.state.hierarchies import read_hierarchies
from sqlanon.state.source import idents, relation, render_sql


def _read(session: Session, job: LhdJob) -> RowsRead:
    """Every row of the source in key order with its state in the family's and the
    domain's last releases, then :func:`~sqlanon.release.row_path.entries`."""
    rows = session.query_arrays(
        sqltext.load(session.dialect, "lhd_read_rows")
        + job.read_sql
        + "\n) AS r ORDER BY r.record_key",
        job.scope.read_parameters(job.family, job.last),
    )
    job.note("rows read", int(rows["record_key"].size))
    values = {a: rows[a] for a in [*job.sensitive, *job.checked]}
    return row_path.entries(session, job, rows, values)


def _plan(session: Session, job: LhdJob, read: RowsRead) -> Planned:
    """:func:`sqlanon.models.lhd_planner.plan_lhd` on the records and the ghosts (each with the
    QI of a random live record of its cell) under the chain rule, within
    ``max_suppression`` (:func:`~sqlanon.release.lhd_job.plan_within_max_suppression`)."""
    rows, n, ghosts = read.rows, read.live, read.ghosts
    quasi = {c: rows[c] for c in job.quasi}
    if ghosts.count:
        at = stand_ins(read.prior.cell, np.ones(n, np.int64), ghosts.count)
        quasi = {c: np.concatenate([rows[c], rows[c][at]]) for c in job.quasi}
    found = read_hierarchies(session, job.src, job.parameters["dataset"], job.quasi, rows)
    values, size = read.values, read.keys.size
    changed = np.zeros(size, dtype=bool)
    for chain in read.chains:
        changed[list(chain)] = True

    def within(budget: float, ahead: bool) -> Planned:
        def planned(keep: np.ndarray, whole: np.ndarray) -> tuple[np.ndarray, Any]:
            idx = np.flatnonzero(keep)
            p = plan_lhd_policy(
                {c: quasi[c][idx] for c in job.quasi},
                {s: values[s][idx] for s in job.sensitive},
                found,
                job.l,
                read.prior.select(idx),
                job.algorithm,
                budget,
                checked={a: values[a][idx] for a in job.checked},
                left_out_before=size - idx.size,
                over_budget="least",
                changed=changed[idx],
                whole=whole[idx],
                recoding=job.recoding,
                policy=job.policy,
                anticipate=job.anticipate if ahead else None,
            )
            group = np.full(size, -1, dtype=np.int64)
            group[idx] = p.class_id
            return group, p

        class_id, plan, cells, chain_held = plan_live(
            planned,
            read.prior,
            Requirement.lhd(job.sensitive, job.l),
            values,
            read.chains,
            keeps_whole=True,
        )
        return Planned(
            plan=plan,
            groups=int(plan.n_classes),
            group=class_id,
            prior=read.prior,
            cells=cells,
            values=values,
            chain_held=chain_held,
            null_quasi=published_nulls(quasi, np.flatnonzero(class_id >= 0)),
        )

    return plan_within_max_suppression(session, job, within)


def _write_table(session: Session, job: LhdJob, read: RowsRead, planned: Planned) -> int:
    """The release table: each published record (ghosts too) with its class's labels,
    rows in a random order; returns their number."""
    chosen, class_id, plan = planned.chosen, planned.group, planned.plan
    is_ghost = np.arange(read.keys.size) >= read.live
    class_ghosts = np.bincount(class_id[chosen & is_ghost], minlength=max(plan.n_classes, 1))
    labels = {
        c: np.array([lab[j] for lab in plan.class_labels] + [None], dtype=object)
        for j, c in enumerate(job.quasi)
    }
    session.load_temp(
        "_sqlanon_lhd",
        {
            "record_key": read.keys[chosen],
            "class_id": class_id[chosen],
            "class_ghosts": class_ghosts[class_id[chosen]],
            "ord": random_order(int(chosen.sum())),
            **{c: labels[c][class_id[chosen]] for c in job.quasi},
        },
        {
            "record_key": "VARCHAR",
            "class_id": "INTEGER",
            "class_ghosts": "INTEGER",
            "ord": "BIGINT",
            **dict.fromkeys(job.quasi, "VARCHAR"),
        },
    )
    # With ghosts, their kept values join the source's (the class_ghosts column too).
    session.execute(
        render_sql(
            session,
            "lhd_write_release_ghosts" if read.ghosts.count else "lhd_write_release",
            release=relation(session, job.table),
            labels=idents(session, job.quasi, "a"),
            sensitive=idents(session, job.sensitive, "v"),
            source_values=idents(session, job.sensitive, "src"),
            ghost_values=idents(session, job.sensitive, "g"),
            source=job.src.qualified(session),
            key=session.quote_ident(job.key),
        )
    )
    session.execute("DROP TABLE _sqlanon_lhd")
    return int(chosen.sum())


def _write_state(session: Session, job: LhdJob, read: RowsRead, planned: Planned) -> None:
    """The members (ghosts too), then :func:`~sqlanon.release.row_path.write_state`."""
    n, class_id, cell = read.live, planned.group, planned.cells.cell
    load_members(
        session,
        read.keys[:n],
        "VARCHAR",
        class_id[:n],
        cell[:n],
        read.rows["row_hash"],
        read.rows["value_hash"],
    )
    if read.ghosts.count:
        session.load_temp(
            "_sqlanon_ghost_members",
            {"record_key": read.ghosts.ids, "group_id": class_id[n:], "cell_id": cell[n:]},
            {"record_key": "VARCHAR", "group_id": "INTEGER", "cell_id": "BIGINT"},
        )
    row_path.write_state(session, job, read, planned)


STEPS: Steps[LhdJob, RowsRead] = Steps(
    read=_read,
    plan=_plan,
    load_plan=row_path.count_ghost_rows,
    newly_published=row_path.newly_published,
    write_table=_write_table,
    write_state=_write_state,
)
