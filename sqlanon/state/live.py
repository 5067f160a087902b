"""Live tables: deletes, corrections and changed quasi-identifiers between releases
(MODELS.md, "Changing tables"). Backend-neutral, like :mod:`sqlanon.state.domains`.

Every release compares its source with the state of its domain's latest release:

- a record a release of the domain published (it has a cell) and now gone from the
  source becomes a **ghost**: a random ghost id replaces its key in every release of the
  domain (``sqlanon.members``, ``sqlanon.kept_values``, ``sqlanon.links``), its
  fingerprints are dropped, and it stays in its cell with the values the domain keeps
  for it, in every later release (a ghost row in the release tables);
- a record gone from the source that no release published is forgotten (its held-back
  rows are deleted);
- a published record whose constrained sensitive values changed: its old incarnation
  becomes a ghost, linked to the key (``sqlanon.links``), and the current row enters as
  a new record; the chain rule (:mod:`sqlanon.models.chain`) decides when it may be
  published;
- a changed quasi-identifier keeps the record's cell (cells do not depend on QI).

:func:`apply_changes` does this inside the release's transaction; if the release fails
the transaction takes it back. :func:`sqlanon.state.deletions.erase` applies the
deletions alone, at once and without publishing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.models.chain import Chain
from sqlanon.session import Session
from sqlanon.state import catalog
from sqlanon.state import domains as domains
from sqlanon.state.deletions import apply_deletes
from sqlanon.state.source import (
    current_schema,
    resolve_source,  # release builds on this module
)

if TYPE_CHECKING:
    from sqlanon.state.source import Source


@dataclass(frozen=True)
class Ghosts:
    """The ghosts of the domain, as records of a release: id, raw cell (as stored in the
    domain's latest release), group and status in the family's last version, and their
    kept values (typed like the source's columns)."""

    ids: np.ndarray
    cell: np.ndarray
    prev_group: np.ndarray
    published_before: np.ndarray
    values: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return int(self.ids.size)

    @staticmethod
    def none() -> Ghosts:
        empty = np.zeros(0, dtype=np.int64)
        return Ghosts(np.zeros(0, dtype=object), empty, empty, np.zeros(0, dtype=bool))


@dataclass(frozen=True)
class Changes:
    """What changed in the source since the family's last version (counts of records)."""

    inserted: int = 0
    deleted: int = 0  # published by the domain: now ghosts
    dropped: int = 0  # never published, gone: forgotten
    # records of the family's last version deleted before this release (by erase(), or
    # by a release of another family of the domain): already ghosts or forgotten
    deleted_before: int = 0
    quasi_changed: int = 0
    value_changed: int = 0  # old incarnation a ghost, the new one a new record
    ghosts_before: int = 0  # ghosts in the family's last version

    @property
    def any(self) -> bool:
        return bool(
            self.inserted
            or self.deleted
            or self.dropped
            or self.deleted_before
            or self.quasi_changed
            or self.value_changed
        )

    def as_metrics(self) -> dict[str, int]:
        return {
            "inserted": self.inserted,
            "deleted": self.deleted + self.dropped + self.deleted_before,
            "quasi_changed": self.quasi_changed,
            "value_changed": self.value_changed,
        }


def apply_changes(
    session: Session,
    domain: str,
    domain_last: catalog.Release | None,
    family_last: catalog.Release | None,
    src: Source,
    key: str,
    keys: np.ndarray,
    rows: dict[str, np.ndarray],
) -> Changes:
    """Detect inserts, deletes and changes; make ghosts of deleted and changed published
    records and forget deleted never-published ones, in the catalog. Updates ``rows`` in
    place: a record whose value changed is a new record from now on (no cell, not
    published before)."""
    known = rows["known"].astype(bool) if family_last is not None else np.zeros(keys.size, bool)
    changed_row = rows["changed"].astype(bool) if family_last is not None else known
    if domain_last is None:
        return Changes(inserted=int(keys.size))
    value_changed = (rows["domain_cell"] >= 0) & rows["value_changed"].astype(bool)
    before = 0 if family_last is None else _gone_before(session, family_last)
    sources = {r.source for r in catalog.domain_releases(session, domain)}
    if sources != {src.label}:
        # Several sources (a table and a filtered view, a copy): a record missing from
        # this one may be filtered, not deleted; a value may lag behind. Refused.
        raw = rows["domain_cell"].astype(np.int64)
        domains.refuse_missing(session, src, key, domain_last, int((raw >= 0).sum()))
        domains.refuse_changed(
            keys, value_changed, f"domain {domain!r}", "a sensitive value its releases constrain"
        )
        return Changes(
            inserted=int((~known).sum()),
            deleted_before=before,
            quasi_changed=int((known & changed_row).sum()),
            ghosts_before=0 if family_last is None else _family_ghosts(session, family_last),
        )
    changed_keys = [str(k) for k in keys[value_changed].tolist()]
    deleted, dropped = apply_deletes(
        session, domain, domain_last, src, key, changed_keys, family_last, int(known.sum())
    )
    # The new incarnation of a changed record starts afresh.
    rows["domain_cell"] = np.where(value_changed, -1, rows["domain_cell"]).astype(np.int64)
    for name, empty in (("published_before", False), ("prev_group", -1), ("known", False)):
        if name in rows:
            rows[name] = np.where(value_changed, empty, rows[name])
    ghosts_before = 0 if family_last is None else _family_ghosts(session, family_last)
    return Changes(
        inserted=int((~known).sum()),
        deleted=deleted,
        dropped=dropped,
        deleted_before=before,
        quasi_changed=int((known & changed_row & ~value_changed).sum()),
        value_changed=len(changed_keys),
        ghosts_before=ghosts_before,
    )


def apply_counted_changes(
    session: Session,
    domain: str,
    domain_last: catalog.Release | None,
    family_last: catalog.Release | None,
    src: Source,
    key: str,
    *,
    inserted: int,
    known: int,
    quasi_changed: int,
    celled: int,
    changed_keys: Sequence[str] = (),
) -> Changes:
    """:func:`apply_changes` for a release that reads counts, not rows
    (``release.ke_engine``), when no constrained value changed: ``inserted`` source rows
    new to the family, ``known`` ones its last version knew, ``quasi_changed`` known
    ones whose published columns changed, ``celled`` ones with a cell in the domain,
    ``changed_keys`` those whose constrained value changed (each a ghost, linked to its
    key)."""
    if domain_last is None:
        return Changes(inserted=inserted)
    before = 0 if family_last is None else _gone_before(session, family_last)
    ghosts_before = 0 if family_last is None else _family_ghosts(session, family_last)
    sources = {r.source for r in catalog.domain_releases(session, domain)}
    if sources != {src.label}:
        domains.refuse_missing(session, src, key, domain_last, celled)
        domains.refuse_changed(
            np.array(changed_keys, dtype=object),
            np.ones(len(changed_keys), dtype=bool),
            f"domain {domain!r}",
            "a sensitive value its releases constrain",
        )
        return Changes(
            inserted=inserted,
            deleted_before=before,
            quasi_changed=quasi_changed,
            ghosts_before=ghosts_before,
        )
    deleted, dropped = apply_deletes(
        session, domain, domain_last, src, key, changed_keys, family_last, known
    )
    return Changes(
        inserted=inserted,
        deleted=deleted,
        dropped=dropped,
        deleted_before=before,
        quasi_changed=quasi_changed,
        value_changed=len(changed_keys),
        ghosts_before=ghosts_before,
    )


def _gone_before(session: Session, release: catalog.Release) -> int:
    """Records ``release`` held (its source's rows) that are ghosts or forgotten now."""
    alive = session.query(
        "SELECT count(*) FROM sqlanon.members WHERE family = $1 AND version = $2 "
        "AND NOT coalesce(ghost, false)",
        [release.family, release.version],
    )[0][0]
    return max(0, release.source_rows - int(alive))


def _family_ghosts(session: Session, release: catalog.Release) -> int:
    return int(
        session.query(
            "SELECT count(*) FROM sqlanon.members WHERE family = $1 AND version = $2 AND ghost",
            [release.family, release.version],
        )[0][0]
    )


def read_ghosts(
    session: Session,
    domain: str,
    domain_last: catalog.Release | None,
    family: str,
    family_last: catalog.Release | None,
    src: Source,
    attributes: Sequence[str],
) -> Ghosts:
    """The domain's ghosts with their kept values of ``attributes`` (source columns),
    loaded into the temporary table ``_sqlanon_ghost_values`` (record_key, attributes
    typed like the source) for the release's writes, and returned. A ghost lacking a
    kept value of an attribute is refused (MODELS.md: its value was never published)."""
    if domain_last is None:
        return Ghosts.none()
    own = family_last is not None
    found = session.query_arrays(
        sqltext.load(session.dialect, "live_ghost_rows"),
        [
            domain_last.family,
            domain_last.version,
            family if own else None,
            family_last.version if family_last is not None else None,
        ],
    )
    ids = np.asarray(found["record_key"], dtype=object)
    if ids.size == 0:
        return Ghosts.none()
    session.load_temp("_sqlanon_ghost_ids", {"record_key": ids}, {"record_key": "VARCHAR"})
    kept = session.query(sqltext.load(session.dialect, "live_kept_values"), [domain])
    session.execute("DROP TABLE _sqlanon_ghost_ids")
    at = {g: i for i, g in enumerate(ids.tolist())}
    by_attribute: dict[str, list[Any]] = {}
    folded = {a.lower(): a for a in attributes}
    text: dict[str, list[str | None]] = {a: [None] * ids.size for a in attributes}
    for record, attribute, value in kept:
        name = folded.get(str(attribute).lower())
        if name is not None:
            text[name][at[record]] = value
    for name, column in text.items():
        missing = sum(v is None for v in column)
        if missing:
            raise ConfigError(
                f"{missing} deleted records of domain {domain!r} were never published with "
                f"{name!r} (their values were not kept); a release that publishes it would "
                "single out their other values: publish only the attributes earlier releases "
                "of the domain published, or use another domain := for a new table"
            )
        by_attribute[name] = column
    session.load_temp(
        "_sqlanon_ghost_raw",
        {"record_key": ids, **{a: np.array(v, dtype=object) for a, v in by_attribute.items()}},
        {"record_key": "VARCHAR", **{a: src.columns[a] for a in by_attribute}},
    )
    q = session.quote_ident
    session.execute("DROP TABLE IF EXISTS _sqlanon_ghost_values")
    session.execute(
        sqltext.render(
            sqltext.load(session.dialect, "live_ghost_values"),
            columns=", ".join(f"{q('src')}.{q(a)}" for a in by_attribute),
            source=src.qualified(session),
        )
    )
    session.execute("INSERT INTO _sqlanon_ghost_values SELECT * FROM _sqlanon_ghost_raw")
    session.execute("DROP TABLE _sqlanon_ghost_raw")
    typed = session.query_arrays("SELECT * FROM _sqlanon_ghost_values ORDER BY record_key")
    return Ghosts(
        ids,
        found["cell_id"].astype(np.int64),
        found["prev_group"].astype(np.int64),
        found["published_before"].astype(bool),
        {a: typed[a] for a in by_attribute},
    )


def chains(session: Session, domain: str, records: np.ndarray) -> list[tuple[int, ...]]:
    """The domain's chains of incarnations (oldest first) as indices into ``records``
    (keys and ghost ids); incarnations not among ``records`` are left out."""
    links = session.query(sqltext.load(session.dialect, "live_links"), [domain])
    if not links:
        return []
    index = {str(r): i for i, r in enumerate(records.tolist())}
    after = {str(a): str(b) for a, b in links}
    starts = set(after) - set(after.values())
    found = []
    for start in sorted(starts):
        path = [start]
        while path[-1] in after and len(path) <= len(after):
            path.append(after[path[-1]])
        found.append(tuple(index[p] for p in path if p in index))
    return [c for c in found if len(c) >= 2]


def chain_links(
    chain: tuple[int, ...], values: dict[str, np.ndarray], attributes: Sequence[str]
) -> Chain:
    """``chain`` with, between consecutive incarnations, the attributes whose values
    differ (equality as the models compare values)."""
    changed = []
    for a, b in zip(chain, chain[1:], strict=False):
        changed.append(frozenset(x for x in attributes if not _same(values[x][a], values[x][b])))
    return Chain(tuple(chain), tuple(changed))


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def keep_values(
    session: Session,
    domain: str,
    src: Source,
    key: str,
    keys: np.ndarray,
    key_type: str,
    celled: np.ndarray,
    new: np.ndarray,
    before: Sequence[str],
    attributes: Sequence[str],
) -> None:
    """Keep, for ghosts to come, the values of ``attributes`` of the live records
    ``keys`` (of SQL type ``key_type``) that this release gives a cell: those ``new`` to
    a cell for the attributes kept ``before``, every ``celled`` one for an attribute the
    domain constrains from now on."""
    q = session.quote_ident
    for attribute in attributes:
        chosen = new if attribute in before else celled
        if not chosen.any():
            continue
        session.load_temp("_sqlanon_keep", {"record_key": keys[chosen]}, {"record_key": key_type})
        session.execute(
            sqltext.render(
                sqltext.load(session.dialect, "live_keep_values"),
                column=q(attribute),
                key=q(key),
                source=src.qualified(session),
            ),
            [domain, attribute],
        )
        session.execute("DROP TABLE _sqlanon_keep")


def rebuild(session: Session) -> None:
    """Migration 007's data step: keep the values of the records the domains' releases
    published, from their sources as they are now. A domain released from several
    sources, or whose source or columns are gone, gets none: a deletion from it is then
    refused (its ghost would lack its values)."""
    # release builds on this module

    schema = current_schema(session)
    exists = sqltext.load(session.dialect, "relation_exists")
    q = session.quote_ident
    for name in sorted({r.domain for r in catalog.releases(session)}):
        every = catalog.domain_releases(session, name)
        if not every or len({r.source for r in every}) != 1:
            continue
        last = every[-1]
        source_schema, _, table = last.source.rpartition(".")
        if not session.query(exists, [source_schema or schema, table]):
            continue
        src = resolve_source(session, last.source)
        key = last.parameters.get("key")
        wanted = [key, *domains.attributes(last)]
        if not all(isinstance(c, str) and c in src.columns for c in wanted):
            continue
        for attribute in domains.attributes(last):
            session.execute(
                sqltext.render(
                    sqltext.load(session.dialect, "live_keep_existing"),
                    column=q(attribute),
                    key=q(str(key)),
                    source=src.qualified(session),
                ),
                [name, last.family, last.version, attribute],
            )
