"""The row path's stages that both models share: every row of the source read into numpy
(one entry per record, the ghosts after them), the changes applied from the rows, and
the private state written from arrays (members, kept values, cells).

The row path takes what the engine path declines: the seeds' ``paper`` policy, chains
of changed values where the engine path cannot follow them, lHD releases on Spark
(:mod:`~sqlanon.release.ke_rows`, :mod:`~sqlanon.release.lhd_rows`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.models import ke_shuffle
from sqlanon.release.pipeline import Job, Planned, Read, with_ghosts
from sqlanon.session import Session
from sqlanon.state import domains, live, spans
from sqlanon.state.source import INTEGER, JOINABLE


@dataclass(frozen=True)
class RowsRead(Read):
    """The entries of the row path: the source's records as read (``rows``, the first
    ``live`` entries), then the ghosts; ``keys``: each record's key, then each ghost's id."""

    rows: dict[str, np.ndarray]
    keys: np.ndarray
    live: int


def entries(
    session: Session,
    job: Job,
    rows: dict[str, np.ndarray],
    values: dict[str, np.ndarray],
    numbers: tuple[str, ...] = (),
) -> RowsRead:
    """The records read (``rows``, with ``values`` of the attributes the planner
    compares; ``numbers`` among them as float64) as the planner's entries: the changes
    since the family's last version applied, the domain's ghosts after the records,
    each entry's cell before, the chains."""
    scope, keys = job.scope, rows["record_key"]
    if scope.last is None:
        rows["domain_cell"] = np.full(keys.size, -1, dtype=np.int64)
    changes = live.apply_changes(
        session, scope.name, scope.last, job.last, job.src, job.key, keys, rows
    )
    ghosts = live.read_ghosts(
        session, scope.name, scope.last, job.family, job.last, job.src, scope.attributes
    )
    live_rows = keys.size
    if ghosts.count:  # keys as text beside the ghosts' ids
        text = keys.astype(object) if keys.dtype == object else keys.astype(str).astype(object)
        keys = np.concatenate([text, ghosts.ids])
    raw_cell = np.concatenate([rows["domain_cell"].astype(np.int64), ghosts.cell])
    return RowsRead(
        prior=domains.read_cells(session, scope.last, raw_cell),
        values=with_ghosts(values, ghosts, numbers),
        weight=None,
        chains=live.chains(session, scope.name, keys),
        changes=changes,
        ghosts=ghosts,
        rows=rows,
        keys=keys,
        live=live_rows,
    )


def count_ghost_rows(session: Session, job: Job, read: RowsRead, planned: Planned) -> Planned:
    """The row path loads no plan before its writes: the plan, with the ghost rows the
    release shows."""
    return replace(planned, ghost_rows=int(planned.chosen[read.live :].sum()))


def newly_published(session: Session, job: Job, read: RowsRead, planned: Planned) -> bool:
    """Whether the plan publishes a record (live, then ghosts) that the family's last
    version did not publish."""
    before = np.concatenate(
        [read.rows["published_before"].astype(bool), read.ghosts.published_before]
    )
    return bool((planned.chosen & ~before).any())


def write_state(session: Session, job: Job, read: RowsRead, planned: Planned) -> None:
    """Keep the values of records new to a cell, then store the loaded members (ghosts
    too: :func:`load_members`) and every cell's requirement as this version."""
    scope, n, cells = job.scope, read.live, planned.cells
    celled = cells.cell[:n] >= 0
    join_keys, key_type = joinable_keys(read.keys[:n], job.src.columns[job.key])
    live.keep_values(
        session, scope.name, job.src, job.key, join_keys, key_type, celled,
        celled & (planned.prior.cell[:n] < 0), scope.before, scope.attributes,
    )  # fmt: skip
    last = None if scope.last is None else (scope.last.family, scope.last.version)
    write_members(session, job.family, job.version, last, ghosts=read.ghosts.count > 0)
    domains.write_cells(session, job.family, job.version, cells)


def random_order(n: int) -> np.ndarray:
    """A uniformly random rank per row, from the OS CSPRNG (never seeded: the physical
    order of a release must not be reproducible by anyone)."""
    keys = np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
    order = np.empty(n, dtype=np.int64)
    order[ke_shuffle.argsort_random_keys(keys, 63, stable=True)] = np.arange(n, dtype=np.int64)
    return order


def load_members(
    session: Session,
    keys: np.ndarray,
    key_type: str,
    group: np.ndarray,
    cell: np.ndarray,
    row_hash: np.ndarray,
    value_hash: np.ndarray,
    extra: dict[str, tuple[np.ndarray, str]] | None = None,
) -> None:
    """Load every record's state for this version into the temporary table
    ``_sqlanon_members`` (private), for :func:`write_members`.

    ``keys`` are the records' keys as read (text), or as :func:`joinable_keys` made them, of
    SQL type ``key_type``; ``group`` is the record's group (class) in this version, -1
    when it is not published, and ``cell`` its cell over every release of the domain
    (-1: none has published it); ``row_hash`` the fingerprints of the published columns
    (quasi + sensitive) and ``value_hash`` of the attributes the domain's cells
    constrain, both as the source read computed them in SQL, the expressions the next
    release compares against: stored as read, they fingerprint exactly the values the
    model saw. ``extra`` columns (name ->
    values, SQL type) ride along: a (k,e) release writes its table from this one
    temporary table too (in PostgreSQL each loaded column of 10^6 values costs ~0.2 s).
    """
    extra = extra or {}
    session.load_temp(
        "_sqlanon_members",
        {
            "record_key": keys,
            "group_id": group.astype(np.int64),
            "cell_id": cell.astype(np.int64),
            "row_hash": row_hash,
            "value_hash": value_hash,
            **{name: values for name, (values, _) in extra.items()},
        },
        {
            "record_key": key_type,
            "group_id": "INTEGER",
            "cell_id": "BIGINT",
            # DuckDB's hash() is unsigned; PostgreSQL's fingerprints are signed.
            "row_hash": "UBIGINT" if row_hash.dtype == np.uint64 else "BIGINT",
            "value_hash": "UBIGINT" if value_hash.dtype == np.uint64 else "BIGINT",
            **{name: type_name for name, (_, type_name) in extra.items()},
        },
    )


def write_members(
    session: Session,
    family: str,
    version: int,
    last: tuple[str, int] | None,
    *,
    ghosts: bool = False,
) -> None:
    """Store ``_sqlanon_members`` (:func:`load_members`) in ``sqlanon.members`` as this
    version of ``family`` (as changes: :mod:`sqlanon.state.spans`; cells keep their ids
    in ``last``, the domain's latest release), then drop it. Records with a group are
    'published', records with a cell but no group 'suppressed', the others 'held_back'.
    With ``ghosts``, the ghosts of ``_sqlanon_ghost_members`` too (and
    ``_sqlanon_ghost_values`` is dropped)."""
    session.execute(sqltext.load(session.dialect, "write_members"))
    session.execute("DROP TABLE _sqlanon_members")
    if ghosts:
        session.execute(sqltext.load(session.dialect, "write_ghost_members"))
        session.execute("DROP TABLE _sqlanon_ghost_members")
        session.execute("DROP TABLE _sqlanon_ghost_values")
    spans.stable_cell_ids(session, last)
    spans.store_members(session, family, version)


def joinable_keys(keys: np.ndarray, key_type: str) -> tuple[np.ndarray, str]:
    """Keys to join sqlanon's temporary tables back to the source by, and their SQL type.

    Integer keys travel as int64 and join natively (a join on text costs about twice as
    much); other keys travel as text and are cast to the key column's own type.
    """
    if INTEGER.search(key_type.lower()):
        return keys.astype(np.int64), "BIGINT"
    if not JOINABLE.search(key_type.lower()):
        raise ConfigError(
            f"the key column is of type {key_type}; use an integer, text, uuid, date or "
            "timestamp column as key"
        )
    return keys, key_type
