"""The row path of a (k,e) release, for the seeds' ``paper`` policy (which plans record
by record) and for what the engine path declines (:mod:`~sqlanon.release.ke_engine`):
every row read into numpy, planned by :func:`~sqlanon.release.ke_job.plan_ke` like the
engine path's entries, the release table, its bounds and the members' state written
from arrays."""

from __future__ import annotations

import numpy as np

from sqlanon.errors import ConfigError
from sqlanon.models import ke_shuffle
from sqlanon.release import row_path
from sqlanon.release.ke_job import KeJob, plan_ke
from sqlanon.release.pipeline import Planned, Steps, plan_in
from sqlanon.release.row_path import RowsRead, joinable_keys, load_members, random_order
from sqlanon.session import Session
from sqlanon.state import bounds
from sqlanon.state.source import INTEGER, bounds_relation, idents, relation, render_sql


def _read(session: Session, job: KeJob) -> RowsRead:
    """Every row of the source with its state in the family's and the domain's last
    releases, then :func:`~sqlanon.release.row_path.entries`."""
    src, scope, key, sensitive = job.src, job.scope, job.key, job.sensitive
    if session.dialect == "spark":  # the row path's SQL is DuckDB's and PostgreSQL's
        raise ConfigError(
            f"domain {scope.name!r} has changed sensitive values and constrains a column "
            f"this release publishes as a quasi-identifier ({', '.join(job.quasi)}); on Spark "
            "sqlanon cannot release that yet: release it from DuckDB or PostgreSQL, or "
            "leave the constrained column out of quasi"
        )
    q = session.quote_ident
    others = [a for a in scope.attributes if a != sensitive]
    read = render_sql(
        session,
        "ke_read_source",
        key=q(key),
        sensitive=q(sensitive),
        hashed=idents(session, [*job.quasi, sensitive], "src"),
        **scope.hashes(session, key),
        columns=idents(session, others or [sensitive], "src"),
        source=src.qualified(session),
    )
    # Read only what this release needs (each column of 10^6 rows costs PostgreSQL
    # ~0.1 s): a first version has no earlier state to compare against, and integer
    # keys come as they are (as text they cost 0.4 s more, read and converted back).
    wanted = [
        "record_value AS record_key" if INTEGER.search(src.columns[key].lower()) else "record_key",
        "s",
        "row_hash",
        "value_hash",
    ]
    if job.last is not None:
        wanted += ["prev_group", "published_before", "known", "changed"]
    if scope.last is not None:
        wanted += ["domain_cell", "value_changed", *(q(a) for a in others)]
    read = f"SELECT {', '.join(wanted)} FROM ({read}\n) AS r"  # noqa: S608
    rows = session.query_arrays(read, scope.read_parameters(job.family, job.last))
    keys, values = rows["record_key"], rows["s"].astype(np.float64)
    job.note("rows read", int(keys.size))
    bad = ~np.isfinite(values)
    if bad.any():
        shown = ", ".join(str(x) for x in keys[bad][:10])
        raise ConfigError(
            f"sensitive column {sensitive!r} has {int(bad.sum())} NaN or infinite values "
            f"(keys {shown}); fix or filter them"
        )
    attributes = {sensitive: values, **{a: rows[a] for a in others}}
    return row_path.entries(session, job, rows, attributes, numbers=(sensitive,))


def _plan(session: Session, job: KeJob, read: RowsRead) -> Planned:
    """:func:`~sqlanon.release.ke_job.plan_ke` on the records, each with its group in
    the family's last version (the seeds' ``paper`` rule plans with it)."""
    rows, ghosts = read.rows, read.ghosts
    own_group = np.full(read.live, -1, dtype=np.int64)
    if job.last is not None:
        own_group = np.where(rows["published_before"], rows["prev_group"], -1).astype(np.int64)
    if ghosts.count:
        own_group = np.concatenate(
            [own_group, np.where(ghosts.published_before, ghosts.prev_group, -1)]
        )
    return plan_ke(session, job, read, own_group)


def _write_table(session: Session, job: KeJob, read: RowsRead, planned: Planned) -> int:
    """Write the release table and load the records' state for :func:`_write_state`;
    returns the rows published, ghosts too."""
    chosen = planned.chosen
    donor = ke_shuffle.permute_within_groups(planned.group, ke_shuffle.secure_rng())
    published = np.flatnonzero(chosen)
    order = random_order(published.size)
    # The rows go into the temporary table in the release's order, held-back ones
    # last: the join streams them so and the sort by ord finds them sorted (10^6
    # rows: 0.3 s less). The ORDER BY alone decides the published order.
    layout = np.empty(published.size, dtype=np.int64)
    layout[order] = published
    layout = np.concatenate([layout, np.flatnonzero(~chosen)])
    ord_ = np.full(len(chosen), -1, dtype=np.int64)
    ord_[published] = order
    if read.ghosts.count:
        _write_with_ghosts(session, job, read, planned, donor, layout, ord_)
    else:
        _write_live(session, job, read, planned, donor, layout, ord_)
    return int(chosen.sum())


def _write_state(session: Session, job: KeJob, read: RowsRead, planned: Planned) -> None:
    """The bounds table (in the ids the release shows), then the records' state."""
    values, group = planned.values[job.sensitive], planned.group
    by_group = _by_group_and_value(values, group)
    bounds.write_bounds_rows(
        session,
        bounds_relation(session, job.table),
        relation(session, job.table),
        session.quote_ident(job.sensitive),
        job.src.columns[job.sensitive],
        values[by_group],
        group[by_group],
    )
    row_path.write_state(session, job, read, planned)


def _write_with_ghosts(
    session: Session,
    job: KeJob,
    read: RowsRead,
    planned: Planned,
    donor: np.ndarray,
    layout: np.ndarray,
    ord_: np.ndarray,
) -> None:
    """Ghost slots take part in the shuffle; every value is looked up by record (key as
    text or ghost id) among the source's and the ghosts' kept values."""
    q, keys, group, cell = session.quote_ident, read.keys, planned.group, planned.cells.cell
    live_layout = layout[layout < read.live]
    ghost_layout = layout[layout >= read.live]
    load_members(
        session,
        keys[live_layout],
        "VARCHAR",
        group[live_layout],
        cell[live_layout],
        read.rows["row_hash"][live_layout],
        read.rows["value_hash"][live_layout],
        extra={
            "s_key": (keys[donor][live_layout], "VARCHAR"),
            "ord": (ord_[live_layout], "BIGINT"),
        },
    )
    session.load_temp(
        "_sqlanon_ghost_members",
        {
            "record_key": keys[ghost_layout],
            "group_id": group[ghost_layout],
            "cell_id": cell[ghost_layout],
            "s_key": keys[donor][ghost_layout],
            "ord": ord_[ghost_layout],
        },
        {
            "record_key": "VARCHAR",
            "group_id": "INTEGER",
            "cell_id": "BIGINT",
            "s_key": "VARCHAR",
            "ord": "BIGINT",
        },
    )
    session.execute("DROP TABLE IF EXISTS _sqlanon_values")
    session.execute(
        render_sql(
            session,
            "ke_ghost_values",
            key=q(job.key),
            sensitive=q(job.sensitive),
            source=job.src.qualified(session),
        )
    )
    session.execute(
        render_sql(
            session,
            "ke_write_release_ghosts",
            release=relation(session, job.table),
            quasi_q=idents(session, job.quasi, "q"),
            sensitive=q(job.sensitive),
            source=job.src.qualified(session),
            key=q(job.key),
        )
    )
    session.execute("DROP TABLE _sqlanon_values")


def _write_live(
    session: Session,
    job: KeJob,
    read: RowsRead,
    planned: Planned,
    donor: np.ndarray,
    layout: np.ndarray,
    ord_: np.ndarray,
) -> None:
    """Without ghosts: each record's value comes from its donor, joined by key."""
    src, sensitive, group, chosen = job.src, job.sensitive, planned.group, planned.chosen
    values = planned.values[sensitive]
    join_keys, key_type = joinable_keys(read.keys, src.columns[job.key])
    # Exact integer values travel with the assignment; others are read back from the
    # source record they belong to, in the column's own type. Held-back records
    # (group -1) carry their own key, no value and no place in the release.
    exact = bounds.exact_integers(src.columns[sensitive], values)
    if exact:
        donor_values = np.where(chosen, values[donor], 0).astype(np.int64)
        donated = {"s": (donor_values[layout], src.columns[sensitive])}
    else:
        donated = {"s_key": (join_keys[donor][layout], key_type)}
    load_members(
        session,
        join_keys[layout],
        key_type,
        group[layout],
        planned.cells.cell[layout],
        read.rows["row_hash"][layout],
        read.rows["value_hash"][layout],
        extra={**donated, "ord": (ord_[layout], "BIGINT")},
    )
    session.execute(
        render_sql(
            session,
            "ke_write_release_values" if exact else "ke_write_release",
            release=relation(session, job.table),
            quasi_q=idents(session, job.quasi, "q"),
            sensitive=session.quote_ident(sensitive),
            source=src.qualified(session),
            key=session.quote_ident(job.key),
        )
    )


def _by_group_and_value(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Indices of the published records (group >= 0) sorted by (group, value).

    The bounds table depends only on each group's multiset of values and sorts its input
    by (group, value): handed over in that order, its sort is one pass over sorted data
    (an unstable sort by value and a 16-bit radix sort by group cost about half of a
    lexsort; the order of equal values of a group does not matter).
    """
    published = np.flatnonzero(group >= 0)
    by_value = published[np.argsort(values[published])]
    g = group[by_value]
    small = len(g) == 0 or int(g.max()) <= np.iinfo(np.int16).max
    return by_value[np.argsort(g.astype(np.int16) if small else g, kind="stable")]


STEPS: Steps[KeJob, RowsRead] = Steps(
    read=_read,
    plan=_plan,
    load_plan=row_path.count_ghost_rows,
    newly_published=row_path.newly_published,
    write_table=_write_table,
    write_state=_write_state,
    plan_tables=plan_in("_sqlanon_members"),
)
