"""Domains: which releases compose, and their cells in the catalog.

Every release belongs to one **domain**: the people behind its source, linked across
releases by the key's value. All releases of a domain (every family, both models) form
one sequence (``seq``), and the cell rule (:mod:`sqlanon.models.cells`) holds over all
of it. How a release's domain is decided (README, "Domains"):

1. a family keeps the domain of its first version;
2. a source already released belongs to the domain it was released in (a source has
   one domain; asking for another is refused);
3. ``domain := 'name'`` names one explicitly (a new source joins it, or starts it);
4. otherwise the source inherits the one domain whose published records share keys
   with it and whose constrained sensitive attributes it has, by column name (a copy, a
   view, a dbt model of a released table); several such domains are refused (name
   one); none starts a new domain named ``schema.dataset`` after the source (its
   ``dataset``: by default its table's name; ``dataset := 'patients'`` for a view or dbt
   model of ``patients``). A table of other people whose
   keys happen to collide lacks those columns or is refused with a message asking for
   ``domain := 'name'``; only a copy whose keys or sensitive columns were renamed
   escapes, and that takes intent. Only domains released from sources in the same
   schema, each of which the caller may read, by roles the caller is (PostgreSQL), are
   considered: two owners' tables in
   their own schemas never meet by accident (a copy in another schema joins with
   ``domain := 'name'``).

A domain released from a source the caller may not read (PostgreSQL: no SELECT on it)
can neither be inferred nor joined by name, and no message shows its keys: another
owner's records stay theirs.

A release must see every record its domain has published (their cells constrain it):
a record missing from the source, or a sensitive value the domain's cells constrain
that changed, is refused, as is a source that lacks an attribute those cells need.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError, UnsafeReleaseError
from sqlanon.models.cells import Cells, Requirement
from sqlanon.session import Session
from sqlanon.state import catalog, spans

if TYPE_CHECKING:
    from sqlanon.state.source import Source

_DOMAIN = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


def check_domain(domain: object) -> str | None:
    """A requested domain name (None: decide as the module says)."""
    if domain is None:
        return None
    if not isinstance(domain, str) or not _DOMAIN.match(domain):
        raise ConfigError(
            f"domain must be a name of letters, digits, '_', '.', '-' (at most 128), got {domain!r}"
        )
    return domain


def resolve(
    session: Session,
    src: Source,
    key: str,
    family_last: catalog.Release | None,
    requested: str | None,
    dataset: str | None = None,
) -> str:
    """The domain of a release of ``src`` (module docstring); a new one is named
    ``<src.schema>.<dataset>`` (``dataset`` None: the source's table name)."""
    if family_last is not None:
        if requested is not None and requested != family_last.domain:
            raise ConfigError(
                f"family {family_last.family!r} belongs to domain {family_last.domain!r}, "
                f"not {requested!r}; a family keeps its domain"
            )
        return family_last.domain
    every = catalog.releases(session)
    same_source = sorted({r.domain for r in every if r.source == src.label})
    if same_source:
        if requested is not None and requested not in same_source:
            raise ConfigError(
                f"source {src.label} is released in domain {same_source[0]!r}; a source "
                f"belongs to one domain (its releases compose): drop domain := "
                f"{requested!r} or give {same_source[0]!r}"
            )
        return same_source[0]
    if requested is not None:
        named = [r for r in every if r.domain == requested]
        if not named and "." in requested and not requested.startswith(f"{src.schema}."):
            raise ConfigError(
                f"domain {requested!r} would be named like a table of another schema (a "
                "new domain is named schema.table after its first source): name a new "
                f"domain without a dot, or {src.schema}.<name>"
            )
        unreadable = unreadable_sources(session, named)
        if unreadable:
            raise ConfigError(
                f"domain {requested!r} is released from {unreadable} source(s) you may not "
                "read, so this release cannot join it; its owner may grant SELECT on them, "
                "or give another domain := name"
            )
        return requested
    q = session.quote_ident
    text = sqltext.render(
        sqltext.load(session.dialect, "domain_overlap"),
        key=q(key),
        source=src.qualified(session),
    )
    columns = {c.lower() for c in src.columns}
    sharing = []
    for domain in sorted({r.domain for r in every}):
        members = [r for r in every if r.domain == domain]
        if any(_schema_of(r.source) != src.schema for r in members):
            continue  # another schema's people: joined only by name
        if unreadable_sources(session, members) or foreign_releases(session, members):
            continue
        last = latest(session, domain)
        if last is None or not {a.lower() for a in attributes(last)} <= columns:
            continue  # the source lacks a value the domain's people have: other people
        if session.query(text, [last.family, last.version])[0][0]:
            sharing.append(domain)
    if len(sharing) > 1:
        raise ConfigError(
            f"source {src.label} shares keys with the published records of domains "
            f"{sharing}; give domain := one of them (the same people) or a new name "
            "(other people whose keys happen to collide)"
        )
    if sharing:
        return sharing[0]
    new = src.label if dataset is None else f"{src.schema}.{dataset}"
    if any(r.domain == new and r.source != src.label for r in every):
        whose = "this source's own name" if dataset is None else f"dataset {dataset!r}"
        raise ConfigError(
            f"a domain named {new!r} ({whose}) was started by releases of other sources; "
            "give domain := a name of your own"
        )
    return new


def _schema_of(label: str) -> str:
    return label.split(".", 1)[0]


def unreadable_sources(session: Session, releases: Sequence[catalog.Release]) -> int:
    """How many of the sources ``releases`` were made from the caller may not read (or
    that are gone): on PostgreSQL, tables without SELECT for the current user; a DuckDB
    or Spark connection reads everything it reaches."""
    if session.dialect != "postgres":
        return 0
    sql = sqltext.load(session.dialect, "source_readable")
    count = 0
    for label in sorted({r.source for r in releases}):
        schema, _, table = label.partition(".")
        found = session.query(sql, [schema, table])
        count += not (found and found[0][0])
    return count


def foreign_releases(session: Session, releases: Sequence[catalog.Release]) -> int:
    """How many of ``releases`` another role made (PostgreSQL: one the current user is
    not a member of): a domain is inferred only from one's own releases, so a bait that
    shares keys and grants SELECT on itself cannot pull an owner's release into it."""
    if session.dialect != "postgres":
        return 0
    sql = sqltext.load(session.dialect, "role_member")
    by = [r.parameters.get("released_by") for r in releases]
    mine = {
        role: bool(session.query(sql, [role])[0][0]) for role in set(by) if isinstance(role, str)
    }
    return sum(1 for role in by if isinstance(role, str) and not mine[role])


def latest(session: Session, domain: str) -> catalog.Release | None:
    found = catalog.domain_releases(session, domain)
    return found[-1] if found else None


def attributes(release: catalog.Release | None) -> list[str]:
    """The attributes the domain's cells constrain after ``release`` (sorted)."""
    if release is None:
        return []
    return list(release.parameters.get("domain_attributes", []))


def require_columns(src: Source, domain: str, names: Sequence[str]) -> list[str]:
    """The source's columns for the attributes ``names``; refuse a missing one."""
    found = []
    for name in names:
        if name in src.columns:
            found.append(name)
            continue
        folded = [c for c in src.columns if c.lower() == name.lower()]
        if len(folded) != 1:
            raise ConfigError(
                f"releases of domain {domain!r} published {name!r}, which {src.label} lacks; "
                "their cells constrain it, so this release cannot be checked against them: "
                "release from a table that has it (or give another domain := if these are "
                "other people)"
            )
        found.append(folded[0])
    return found


def read_cells(session: Session, last: catalog.Release | None, raw_cell: np.ndarray) -> Cells:
    """The cells of the records whose cell after ``last`` is ``raw_cell`` (-1: none),
    with each cell's requirement from ``sqlanon.cells``."""
    if last is None or not (raw_cell >= 0).any():
        return Cells.empty(raw_cell.size)
    rows = session.query_arrays(
        "SELECT cell_id, attribute, min_distinct, min_spread FROM sqlanon.cells "
        "WHERE family = $1 AND version = $2",
        [last.family, last.version],
    )
    ids = np.unique(np.concatenate([rows["cell_id"].astype(np.int64), raw_cell[raw_cell >= 0]]))
    names = tuple(sorted(set(rows["attribute"].tolist())))
    distinct = np.zeros((ids.size, len(names)), dtype=np.int64)
    spread = np.zeros((ids.size, len(names)))
    at = np.searchsorted(ids, rows["cell_id"].astype(np.int64))
    column = np.array([names.index(a) for a in rows["attribute"].tolist()], dtype=np.int64)
    distinct[at, column] = rows["min_distinct"].astype(np.int64)
    spread[at, column] = rows["min_spread"].astype(np.float64)
    cell = np.where(raw_cell >= 0, np.searchsorted(ids, raw_cell), -1)
    return Cells(cell, names, distinct, spread)


def write_cells(
    session: Session, family: str, version: int, cells: Cells, *, before_spans: bool = False
) -> None:
    """Store every cell's requirement (the non-zero entries) as this release's, as
    changes (:mod:`sqlanon.state.spans`). ``before_spans``: into the ``sqlanon.cells``
    table that migration 011 turned into a view (migration 005's data step runs on the
    catalog as it was then)."""
    at, column = np.nonzero((cells.distinct > 0) | (cells.spread > 0))
    if at.size == 0 and before_spans:
        return
    session.load_temp(
        "_sqlanon_cells",
        {
            "cell_id": at.astype(np.int64),
            "attribute": np.array(cells.attributes, dtype=object)[column],
            "min_distinct": cells.distinct[at, column].astype(np.int64),
            "min_spread": cells.spread[at, column].astype(np.float64),
        },
        {
            "cell_id": "BIGINT",
            "attribute": "VARCHAR",
            "min_distinct": "INTEGER",
            "min_spread": "DOUBLE PRECISION",
        },
    )
    if not before_spans:
        spans.store_cells(session, family, version)
        return
    session.execute(
        "INSERT INTO sqlanon.cells (family, version, cell_id, attribute, min_distinct, "
        "min_spread) SELECT $1, $2, cell_id, attribute, min_distinct, min_spread "
        "FROM _sqlanon_cells",
        [family, version],
    )
    session.execute("DROP TABLE _sqlanon_cells")


def refuse_missing(
    session: Session, src: Source, key: str, last: catalog.Release | None, seen: int
) -> None:
    """Refuse when records with a cell after ``last`` are not in the source; ``seen``
    counts the source rows that have one (the anti-join runs only when it falls short)."""
    if last is None:
        return
    q = session.quote_ident
    expected = session.query(
        "SELECT count(*) FROM sqlanon.members WHERE family = $1 AND version = $2 "
        "AND cell_id IS NOT NULL",
        [last.family, last.version],
    )[0][0]
    if seen >= expected:
        return
    shown = ""
    if not unreadable_sources(session, catalog.domain_releases(session, last.domain)):
        missing = session.query(
            sqltext.render(
                sqltext.load(session.dialect, "domain_missing_keys"),
                key=q(key),
                source=src.qualified(session),
            ),
            [last.family, last.version],
        )
        shown = f" (keys {', '.join(str(r[0]) for r in missing)})"
    raise UnsafeReleaseError(
        f"{int(expected - seen)} records that releases of domain {last.domain!r} published "
        f"are not in {src.label}{shown}; their values stay in their "
        "cells, so a release must see them. The domain is released from several sources "
        "(deletions are taken from a domain with one source only): restore them or "
        "release from the full table; if this source holds other people, give another "
        "domain := name"
    )


def refuse_changed(keys: np.ndarray, changed: np.ndarray, where: str, what: str) -> None:
    """Refuse when records published in ``where`` (a family or a domain, as words)
    changed ``what`` (which values); names up to 10 keys."""
    if changed.any():
        shown = ", ".join(str(k) for k in keys[changed][:10])
        raise UnsafeReleaseError(
            f"{int(changed.sum())} records published in {where} changed {what} (keys "
            f"{shown}); republishing them would expose the change. Restore the published "
            "values (the domain is released from several sources: changes are taken from a "
            "domain with one source only)"
        )


def rebuild(session: Session) -> None:
    """Migration 005's data step: put the releases made before domains in the domain of
    their source (in the order they were made) and replay them to give every record its
    cell over the whole domain, and every cell its requirement.

    Cells an older release already left below their requirement stay so (the audit
    reports them); later releases keep them whole or leave them out, never publish a
    piece of them.
    """
    import json

    releases = session.query(
        "SELECT family, version, model, source, CAST(parameters AS VARCHAR) "
        "FROM sqlanon.releases ORDER BY created_at, family, version"
    )
    sources = sorted({r[3] for r in releases})
    for source in sources:
        index: dict[str, int] = {}
        cells = Cells.empty(0)
        seen: set[str] = set()
        history = [r for r in releases if r[3] == source]
        for seq, (family, version, model, _, text) in enumerate(history, start=1):
            parameters = json.loads(text)
            rows = session.query(
                "SELECT record_key, group_id FROM sqlanon.members "
                "WHERE family = $1 AND version = $2",
                [family, version],
            )
            at = np.array([index.setdefault(k, len(index)) for k, _ in rows], dtype=np.int64)
            grown = np.full(len(index) - cells.cell.size, -1, dtype=np.int64)
            cells = Cells(
                np.concatenate([cells.cell, grown]), cells.attributes, cells.distinct, cells.spread
            )
            group = np.full(len(index), -1, dtype=np.int64)
            group[at] = [-1 if g is None else int(g) for _, g in rows]
            sensitive = parameters["sensitive"]
            requirement = (
                Requirement.ke(sensitive, parameters["k"], parameters["e"])
                if model == "ke"
                else Requirement.lhd(sensitive, parameters["l"])
            )
            cells = cells.then(group, requirement)
            seen |= set(requirement.attributes)
            parameters["domain_attributes"] = sorted(seen)
            session.load_temp(
                "_sqlanon_cells_of",
                {
                    "record_key": np.array([k for k, _ in rows], dtype=object),
                    "cell_id": cells.cell[at],
                },
                {"record_key": "VARCHAR", "cell_id": "BIGINT"},
            )
            session.execute(
                sqltext.load(session.dialect, "domain_rebuild_members"), [family, version]
            )
            session.execute("DROP TABLE _sqlanon_cells_of")
            write_cells(session, family, version, cells, before_spans=True)
            session.execute(
                "UPDATE sqlanon.releases SET domain = $1, seq = $2, "
                "parameters = CAST($3 AS JSON) WHERE family = $4 AND version = $5",
                [source, seq, json.dumps(parameters), family, version],
            )
