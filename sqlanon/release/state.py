"""A release's place in its domain and the private state it reads and writes: members,
kept values, cells, the catalog row's summary, and the grants on what it publishes
(:mod:`sqlanon.release.publish` points the view at it)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import BrokenCellError, ConfigError, UnsafeReleaseError
from sqlanon.models import ke_shuffle
from sqlanon.models.cells import Cells, failing_cells
from sqlanon.session import Session
from sqlanon.state import catalog, domains, live
from sqlanon.state.source import INTEGER, JOINABLE, Source, idents


@dataclass(frozen=True)
class DomainScope:
    """A release's place in its domain (:mod:`sqlanon.state.domains`): the domain's latest
    release ``last`` (None: the first), this release's ``seq``, and the attributes the
    domain's cells constrain before it and after it (``attributes``, source columns)."""

    name: str
    last: catalog.Release | None
    seq: int
    before: list[str]
    attributes: list[str]

    def linked(self, session: Session) -> set[str]:
        """Every incarnation (key or ghost id) of a chain of the domain (changed values)."""
        if self.last is None:
            return set()
        links = session.query(sqltext.load(session.dialect, "live_links"), [self.name])
        return {str(x) for link in links for x in link}

    def paper_releases(self, session: Session) -> list[str]:
        """``family vN`` of each release of the domain made under the seeds' unsafe
        policy ``paper``."""
        return [
            f"{r.family} v{r.version}"
            for r in catalog.domain_releases(session, self.name)
            if r.model == "ke" and r.parameters.get("policy") == "paper"
        ]

    def hashes(self, session: Session, key: str) -> dict[str, str]:
        """The read's fingerprint columns: ``value_hashed`` over the attributes after
        this release, ``old_hashed`` over those before (the key when there are none:
        then no record has a stored fingerprint to compare)."""
        return {
            "value_hashed": idents(session, self.attributes, "src"),
            "old_hashed": idents(session, self.before or [key], "src"),
        }

    def read_parameters(self, family: str, last: catalog.Release | None) -> list[Any]:
        # Version NULL when there is nothing before: the join to sqlanon.members is
        # constant false and never reads it (with version 0 PostgreSQL would scan the
        # BRIN ranges that autovacuum has not summarized yet).
        own = last is not None and self.last is not None and self.last.family == family
        other = None if own else self.last
        return [
            family,
            None if last is None else last.version,
            None if other is None else other.family,
            None if other is None else other.version,
            1 if own else 0,
        ]


def open_domain(
    session: Session,
    src: Source,
    key: str,
    family_last: catalog.Release | None,
    requested: str | None,
    sensitive: Sequence[str],
) -> DomainScope:
    """Decide the release's domain and serialize the domain's releases (each must see
    the one before: on PostgreSQL an advisory lock; DuckDB refuses the second to commit,
    ``sqlanon.releases`` holding one row per (domain, seq))."""
    name = domains.resolve(session, src, key, family_last, requested)
    session.lock_family(f"domain {name}")
    last = domains.latest(session, name)
    before = domains.require_columns(src, name, domains.attributes(last))
    after = sorted(set(before) | set(sensitive))
    return DomainScope(name, last, 1 if last is None else last.seq + 1, before, after)


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


def refuse_unsafe(before: Cells, after: Cells, values: dict[str, np.ndarray]) -> None:
    """The last check before anything is written: every cell meets its requirement."""
    failing = failing_cells(before, after, values)
    if failing.any():
        raise UnsafeReleaseError(
            f"internal error: {int(failing.sum())} cells of the planned release break the "
            "cell rule; nothing was published; please report this with the input"
        )


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


def write_members(session: Session, family: str, version: int, *, ghosts: bool = False) -> None:
    """Store ``_sqlanon_members`` (:func:`load_members`) in ``sqlanon.members`` as this
    version of ``family``, then drop it. Records with a group are 'published', records
    with a cell but no group 'suppressed', the others 'held_back'. With ``ghosts``, the
    ghosts of ``_sqlanon_ghost_members`` too (and ``_sqlanon_ghost_values`` is dropped)."""
    session.execute(sqltext.load(session.dialect, "write_members"), [family, version])
    session.execute("DROP TABLE _sqlanon_members")
    if ghosts:
        session.execute(sqltext.load(session.dialect, "write_ghost_members"), [family, version])
        session.execute("DROP TABLE _sqlanon_ghost_members")
        session.execute("DROP TABLE _sqlanon_ghost_values")


def unchanged(
    last: catalog.Release | None,
    changes: live.Changes,
    ghosts: live.Ghosts,
    rows: dict[str, np.ndarray],
    chosen: np.ndarray,
) -> dict[str, Any] | None:
    """The latest summary marked ``unchanged`` when this release would publish nothing
    new (MODELS.md, "Nothing new"): no insert, delete or change since the family's last
    version, no new ghost, and no record (``chosen``: live rows, then ghosts) published
    that the last version did not publish. None: publish."""
    if last is None or changes.any or ghosts.count != changes.ghosts_before:
        return None
    before = np.concatenate([rows["published_before"].astype(bool), ghosts.published_before])
    if (chosen & ~before).any():
        return None
    return {**summary_of(last), "unchanged": True}


def left_out_counts(chosen: np.ndarray, prior: Cells, live_rows: int) -> dict[str, int]:
    """The summary's row counts: live rows published, rows left out that no release
    published yet (held back) and that one did (suppressed), ghosts included."""
    never = prior.cell < 0
    return {
        "rows_published": int(chosen[:live_rows].sum()),
        "held_back": int((~chosen & never).sum()),
        "suppressed": int((~chosen & ~never).sum()),
    }


def write_state(
    session: Session,
    family: str,
    version: int,
    scope: DomainScope,
    src: Source,
    key: str,
    keys: np.ndarray,
    live_rows: int,
    prior: Cells,
    cells: Cells,
    ghosts: live.Ghosts,
) -> None:
    """Keep the values of records new to a cell, then store the loaded members (ghosts
    too) and every cell's requirement as this version of ``family``."""
    celled = cells.cell[:live_rows] >= 0
    join_keys, key_type = joinable_keys(keys[:live_rows], src.columns[key])
    live.keep_values(
        session, scope.name, src, key, join_keys, key_type, celled,
        celled & (prior.cell[:live_rows] < 0), scope.before, scope.attributes,
    )  # fmt: skip
    write_members(session, family, version, ghosts=ghosts.count > 0)
    domains.write_cells(session, family, version, cells)


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


def summary_of(release: catalog.Release) -> dict[str, Any]:
    return {
        "family": release.family,
        "version": release.version,
        "table": release.table_name,
        "model": release.model,
        "rows_published": release.rows_published,
        "held_back": release.held_back,
        "suppressed": release.suppressed,
        "groups": release.groups,
        "sum_of_errors": release.sum_of_errors,
        "source_rows": release.source_rows,
        "domain": release.domain,
        "seq": release.seq,
        **release.metrics,
    }
