"""Backend-neutral release machinery: validate, diff against state, plan, write.

One release is one transaction on a :class:`Session`: it reads the source and the
state of the family's last version, asks a pure model for the new grouping, and
writes the release table, its view, the catalog row and the new state together.
Any error before the commit leaves nothing behind.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sqlanon import catalog, domain, live, release_engine, sqltext
from sqlanon.backends.base import Session
from sqlanon.errors import (
    AmbiguousNameError,
    ConfigError,
    InfeasibleError,
    UndefinedColumnError,
    UndefinedTableError,
    UnsafeReleaseError,
)
from sqlanon.models import ke, ke_bounds
from sqlanon.models.cells import Cells, Requirement, failing_cells
from sqlanon.release_plan import plan_live

KE_POLICIES = ("auto", "merge", "defer", "paper")
_NUMERIC = re.compile(
    r"^(u?(tiny|small|big|huge)?int(eger)?\d*|decimal.*|numeric.*|double.*|float\d*|real)$"
)
_JOINABLE = re.compile(
    r"^(varchar.*|text|character.*|char.*|uuid|date|timestamp.*|decimal.*|numeric.*)$"
)
# Integer types that fit int64: their keys join natively, their sums are exact in float64.
_INTEGER = re.compile(r"^(tinyint|smallint|integer|int|bigint|int2|int4|int8)$")
_RESERVED = {"group_id", "class_id"}


@dataclass(frozen=True)
class Source:
    """A source table checked against the database's catalog."""

    schema: str
    table: str
    columns: dict[str, str]  # name -> data type, as the database reports them

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.table}"

    def qualified(self, session: Session) -> str:
        return f"{session.quote_ident(self.schema)}.{session.quote_ident(self.table)}"

    def column(self, name: object, role: str) -> str:
        """The column's real name; a clear error when it does not exist.

        ``'"Age"'`` (quoted as in SQL) is the column Age exactly; an unquoted name
        matches ignoring case, and is refused when several columns differ only in case.
        """
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{role} must be a column name of {self.label}, got {name!r}")
        bare, quoted = sqltext.unquote(name)
        found = [c for c in self.columns if (c == bare if quoted else c.lower() == bare.lower())]
        if len(found) == 1:
            return found[0]
        if found:
            raise AmbiguousNameError(
                f"{role} column {name!r} matches columns {', '.join(map(_quoted, found))} of "
                f"{self.label}, which differ only in case: quote the one you mean, e.g. "
                f"{_quoted(found[0])!r}"
            )
        raise UndefinedColumnError(
            f"{role} column {name!r} is not in {self.label}; "
            f"its columns are: {', '.join(self.columns)}"
        )


def _quoted(name: str) -> str:
    """A name as SQL quotes it (for messages)."""
    return '"' + name.replace('"', '""') + '"'


def resolve_source(session: Session, source: object) -> Source:
    """Find ``table`` or ``schema.table`` in information_schema (never trust the text).

    Each part may be quoted as in SQL (``"Clinic"."MixedCase"``: matched exactly); an
    unquoted part matches ignoring case, and a name matching several tables that differ
    only in case is refused. An unqualified table is looked up in current_schema().
    """
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(f"source must be a table name, got {source!r}")
    parts = sqltext.split_name(source, "source")
    if len(parts) > 2:
        raise ConfigError(f"source {source!r}: use table or schema.table")
    if len(parts) == 2:
        (schema, schema_quoted), (table, table_quoted) = parts
    else:
        schema, schema_quoted = session.query("SELECT current_schema()")[0][0], True
        table, table_quoted = parts[0]

    def fits(found: str, name: str, quoted: bool) -> bool:
        return found == name if quoted else found.lower() == name.lower()

    rows = session.query(sqltext.load(session.dialect, "find_tables"), [schema, table])
    matching = [
        (s, t) for s, t in rows if fits(s, schema, schema_quoted) and fits(t, table, table_quoted)
    ]
    found = list(dict.fromkeys(matching))  # DuckDB: once per attached database
    if len(found) > 1:
        names = ", ".join(f"{_quoted(s)}.{_quoted(t)}" for s, t in found)
        raise AmbiguousNameError(
            f"source {source!r} matches tables {names}, which differ only in case: "
            f"quote the one you mean, e.g. '{_quoted(found[0][0])}.{_quoted(found[0][1])}'"
        )
    if not found:
        raise UndefinedTableError(
            f"source table {source!r} does not exist (looked in schema {schema!r}); "
            "give an existing table as table or schema.table (quote mixed-case names: "
            '"Clinic"."MixedCase")'
        )
    schema, table = found[0]
    if schema == "sqlanon":
        raise ConfigError("the sqlanon catalog cannot be a release source")
    columns = dict(session.query(sqltext.load(session.dialect, "table_columns"), [schema, table]))
    return Source(schema, table, columns)


def _sql(session: Session, name: str, **idents: str) -> str:
    return sqltext.render(sqltext.load(session.dialect, name), **idents)


def _idents(session: Session, names: Sequence[str], alias: str | None = None) -> str:
    prefix = f"{session.quote_ident(alias)}." if alias else ""
    return ", ".join(prefix + session.quote_ident(n) for n in names)


def _check_names(family: object, quasi: object, sensitive: list[str], key: str) -> list[str]:
    sqltext.check_family(family)
    if isinstance(quasi, str) or not isinstance(quasi, Sequence):
        raise ConfigError(f"quasi must be a list of column names, got {quasi!r}")
    quasi = list(quasi)
    if len(set(quasi)) != len(quasi):
        raise ConfigError(f"quasi lists a column twice: {quasi}")
    clash = (set(quasi) & set(sensitive)) | ({key} & (set(quasi) | set(sensitive)))
    if clash:
        raise ConfigError(
            f"columns {sorted(clash)} are given more than one role (key, quasi, sensitive); "
            "each column has one role"
        )
    reserved = _RESERVED & (set(quasi) | set(sensitive))
    if reserved:
        raise ConfigError(f"columns named {sorted(reserved)} clash with sqlanon's own; rename them")
    return quasi


def _check_target(session: Session, family: str, version: int) -> str:
    """The new table's name; refuse to overwrite anything sqlanon did not create."""
    table = f"{family}_v{version}"
    schema = session.query("SELECT current_schema()")[0][0]
    exists = sqltext.load(session.dialect, "relation_exists")
    names = [table] if version > 1 else [family, table]
    for name in names:
        if session.query(exists, [schema, name]):
            raise ConfigError(
                f"a table or view named {name!r} already exists in schema {schema!r}; "
                "choose another family name or drop it"
            )
    return table


def _check_unchanged(
    family: str, last: catalog.Release | None, parameters: dict[str, Any], fixed: Sequence[str]
) -> None:
    if last is None:
        return
    changed = [p for p in fixed if last.parameters.get(p) != parameters[p]]
    if changed:
        was = {p: last.parameters.get(p) for p in changed}
        now = {p: parameters[p] for p in changed}
        raise ConfigError(
            f"family {family!r} was released with {was}; this call asks for {now}. "
            "A family keeps its source, columns and privacy parameters: start a new family"
        )


def _profile_source(session: Session, source: Source, key: str, sensitive: str | None) -> int:
    """Row count, after refusing NULL or duplicate keys and NULL sensitive values."""
    q = session.quote_ident
    n, keys_present, keys_distinct, values_present = session.query(
        _sql(
            session,
            "source_profile",
            key=q(key),
            sensitive=q(sensitive or key),
            source=source.qualified(session),
        )
    )[0]
    if n == 0:
        raise InfeasibleError(f"source {source.label} is empty: there is nothing to release")
    if keys_present < n:
        raise ConfigError(
            f"key column {key!r} has {n - keys_present} NULL values; every record needs a key"
        )
    if keys_distinct < n:
        dupes = [
            r[0]
            for r in session.query(
                _sql(session, "duplicate_keys", key=q(key), source=source.qualified(session))
            )
        ]
        raise ConfigError(
            f"key column {key!r} is not unique ({n - keys_distinct} duplicates, e.g. "
            f"{', '.join(dupes)}); give a column that identifies each record"
        )
    if sensitive is not None and values_present < n:
        raise ConfigError(
            f"sensitive column {sensitive!r} has {n - values_present} NULL values; "
            "fill or filter them (e.g. release from a view WHERE it IS NOT NULL)"
        )
    return int(n)


@dataclass(frozen=True)
class DomainScope:
    """A release's place in its domain (:mod:`sqlanon.domain`): the domain's latest
    release ``last`` (None: the first), this release's ``seq``, and the attributes the
    domain's cells constrain before it and after it (``attributes``, source columns)."""

    name: str
    last: catalog.Release | None
    seq: int
    before: list[str]
    attributes: list[str]

    def hashes(self, session: Session, key: str) -> dict[str, str]:
        """The read's fingerprint columns: ``value_hashed`` over the attributes after
        this release, ``old_hashed`` over those before (the key when there are none:
        then no record has a stored fingerprint to compare)."""
        return {
            "value_hashed": _idents(session, self.attributes, "src"),
            "old_hashed": _idents(session, self.before or [key], "src"),
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
    name = domain.resolve(session, src, key, family_last, requested)
    session.lock_family(f"domain {name}")
    last = domain.latest(session, name)
    before = domain.require_columns(src, name, domain.attributes(last))
    after = sorted(set(before) | set(sensitive))
    return DomainScope(name, last, 1 if last is None else last.seq + 1, before, after)


def _refuse_unsafe(before: Cells, after: Cells, values: dict[str, np.ndarray]) -> None:
    """The last check before anything is written: every cell meets its requirement."""
    failing = failing_cells(before, after, values)
    if failing.any():
        raise UnsafeReleaseError(
            f"internal error: {int(failing.sum())} cells of the planned release break the "
            "cell rule; nothing was published; please report this with the input"
        )


def random_order(n: int, seed: int | None) -> np.ndarray:
    """A uniformly random rank per row (CSPRNG unless a test seed is given)."""
    if seed is None:
        keys = np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
    else:
        keys = np.random.default_rng([seed, 1]).integers(0, 2**63, n, dtype=np.uint64)
    order = np.empty(n, dtype=np.int64)
    order[ke.argsort_random_keys(keys, 63, stable=True)] = np.arange(n, dtype=np.int64)
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

    ``keys`` are the records' keys as read (text), or as :func:`_join_keys` made them, of
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
    return {**_summary(last), "unchanged": True}


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
    join_keys, key_type = _join_keys(keys[:live_rows], src.columns[key])
    live.keep_values(
        session, scope.name, src, key, join_keys, key_type, celled,
        celled & (prior.cell[:live_rows] < 0), scope.before, scope.attributes,
    )  # fmt: skip
    write_members(session, family, version, ghosts=ghosts.count > 0)
    domain.write_cells(session, family, version, cells)


def publish_view(session: Session, family: str, table: str) -> None:
    q = session.quote_ident
    session.execute(_sql(session, "point_view", family=q(family), release=q(table)))


def grant_readers(session: Session, relations: Sequence[str]) -> None:
    """PostgreSQL: let role ``sqlanon_analyst`` read what a release published (quoted
    names: its table, the family view, its bounds table) and nothing else. DuckDB has
    no roles."""
    if session.dialect == "postgres":
        session.execute(_sql(session, "grant_readers", relations=", ".join(relations)))


def release_ke(
    session: Session,
    source: str,
    family: str,
    *,
    key: str,
    sensitive: str,
    quasi: Sequence[str],
    k: int,
    e: float,
    policy: str = "auto",
    seed: int | None = None,
    progress: Callable[[str, int], None] | None = None,
    domain_name: str | None = None,
) -> dict[str, Any]:
    """Publish the next (k,e)-anonymous version of ``family`` from ``source``.

    The release composes with every earlier release of its domain (``domain_name``, or
    decided as :mod:`sqlanon.domain` says): old cells stay whole or absent whole, and a
    cell that cannot meet (k,e) is held back. Returns a summary: version, table, rows
    published, groups, rows held back (never published yet) and suppressed (published
    before), sum of errors, and the static optimum of the current table. ``progress``,
    if given, is called as ``progress(stage, count)`` after each long step: "rows read",
    "groups built", "rows written".
    """
    k, e = _check_ke_parameters(k, e, policy, seed)
    if not isinstance(key, str) or not isinstance(sensitive, str):
        raise ConfigError("key and sensitive must each name one column")
    family = sqltext.check_family(family)
    quasi = _check_names(family, quasi, [sensitive], key)
    if not quasi:
        raise ConfigError(
            "quasi must list at least one column: the columns analysts filter and group by "
            "(a release without any would show only shuffled values and group ids)"
        )
    domain_name = domain.check_domain(domain_name)
    with session.transaction():
        session.lock_family(family)
        src = resolve_source(session, source)
        key = src.column(key, "key")
        sensitive = src.column(sensitive, "sensitive")
        quasi = [src.column(c, "quasi") for c in quasi]
        _check_names(family, quasi, [sensitive], key)  # '"age"' and 'age' are one column
        if not _NUMERIC.search(src.columns[sensitive].lower()):
            raise ConfigError(
                f"sensitive column {sensitive!r} is {src.columns[sensitive]}; (k,e) needs a "
                "numeric column (cast it in a view, or use the lHD model for categories)"
            )
        last = catalog.latest(session, family)
        if last is not None and last.model != "ke":
            raise ConfigError(f"family {family!r} is an {last.model} family, not (k,e)")
        scope = open_domain(session, src, key, last, domain_name, [sensitive])
        parameters = {
            "source": src.label,
            "key": key,
            "sensitive": sensitive,
            "quasi": quasi,
            "k": k,
            "e": e,
            "policy": policy,
            "seeded": seed is not None,
            "domain_attributes": scope.attributes,
        }
        _check_unchanged(
            family, last, parameters, ("source", "key", "sensitive", "quasi", "k", "e")
        )
        version = 1 if last is None else last.version + 1
        table = _check_target(session, family, version)
        source_rows = _profile_source(session, src, key, sensitive)
        applied = release_engine.release_ke(
            session, src=src, family=family, key=key, sensitive=sensitive, quasi=quasi, k=k,
            e=e, policy=policy, seed=seed, scope=scope, last=last, version=version,
            table=table, progress=progress,
        )  # fmt: skip
        if applied is not None:
            return _record_engine_release(
                session, applied, family, version, table, src, parameters, source_rows, scope,
                last, k, e,
            )  # fmt: skip

        q = session.quote_ident
        others = [a for a in scope.attributes if a != sensitive]
        read = _sql(
            session,
            "ke_read_source",
            key=q(key),
            sensitive=q(sensitive),
            hashed=_idents(session, [*quasi, sensitive], "src"),
            **scope.hashes(session, key),
            columns=_idents(session, others or [sensitive], "src"),
            source=src.qualified(session),
        )
        # Read only what this release needs (each column of 10^6 rows costs PostgreSQL
        # ~0.1 s): a first version has no earlier state to compare against, and integer
        # keys come as they are (as text they cost 0.4 s more, read and converted back).
        wanted = [
            "record_value AS record_key"
            if _INTEGER.search(src.columns[key].lower())
            else "record_key",
            "s",
            "row_hash",
            "value_hash",
        ]
        if last is not None:
            wanted += ["prev_group", "published_before", "known", "changed"]
        if scope.last is not None:
            wanted += ["domain_cell", "value_changed", *(q(a) for a in others)]
        read = f"SELECT {', '.join(wanted)} FROM ({read}\n) AS r"  # noqa: S608
        rows = session.query_arrays(read, scope.read_parameters(family, last))
        keys, values = rows["record_key"], rows["s"].astype(np.float64)
        if progress is not None:
            progress("rows read", int(keys.size))
        bad = ~np.isfinite(values)
        if bad.any():
            shown = ", ".join(str(x) for x in keys[bad][:10])
            raise ConfigError(
                f"sensitive column {sensitive!r} has {int(bad.sum())} NaN or infinite values "
                f"(keys {shown}); fix or filter them"
            )
        if scope.last is None:
            rows["domain_cell"] = np.full(keys.size, -1, dtype=np.int64)
        changes = live.apply_changes(session, scope.name, scope.last, last, src, key, keys, rows)
        ghosts = live.read_ghosts(
            session, scope.name, scope.last, family, last, src, scope.attributes
        )
        live_rows = keys.size
        own_group = np.full(keys.size, -1, dtype=np.int64)
        if last is not None:
            own_group = np.where(rows["published_before"], rows["prev_group"], -1).astype(np.int64)
        if ghosts.count:
            keys = np.concatenate([keys.astype(str).astype(object), ghosts.ids])
            values = np.concatenate([values, ghosts.values[sensitive].astype(np.float64)])
            own_group = np.concatenate(
                [own_group, np.where(ghosts.published_before, ghosts.prev_group, -1)]
            )
        raw_cell = np.concatenate([rows["domain_cell"].astype(np.int64), ghosts.cell])
        prior = domain.read_cells(session, scope.last, raw_cell)
        attribute_values = {sensitive: values}
        for a in others:
            attribute_values[a] = (
                np.concatenate([np.asarray(rows[a], dtype=object), ghosts.values[a]])
                if ghosts.count
                else rows[a]
            )
        chains = live.chains(session, scope.name, keys)

        def planned(keep: np.ndarray) -> tuple[np.ndarray, ke.KePlan]:
            idx = np.flatnonzero(keep)
            p = ke.plan_in_cells(
                values[idx], prior.select(idx), sensitive, k, e, policy, own_group=own_group[idx]
            )
            group = np.full(keys.size, -1, dtype=np.int64)
            group[idx] = p.group
            return group, p

        group, plan, cells, chain_held = plan_live(
            planned, prior, Requirement.ke(sensitive, k, e), attribute_values, chains
        )
        if policy != "paper":
            _refuse_unsafe(prior, cells, {sensitive: values})
        chosen = group >= 0
        same = unchanged(last, changes, ghosts, rows, chosen)
        if same is not None:
            return same
        if not chosen[:live_rows].any():
            raise InfeasibleError(
                f"no record of {src.label} can be published under k={k}, e={e:g} yet: "
                f"{int((prior.cell >= 0).sum())} were published by earlier releases of domain "
                f"{scope.name!r} in cells that cannot meet it, and the others cannot form a "
                "valid group; lower k or e, or release when more rows have arrived"
            )
        if progress is not None:
            progress("groups built", int(plan.groups))
        ghost_rows = int(chosen[live_rows:].sum())
        _write_ke(
            session,
            src,
            key,
            quasi,
            sensitive,
            table,
            keys,
            values,
            group,
            cells,
            rows,
            live_rows,
            seed,
            ghosts,
        )
        if progress is not None:
            progress("rows written", int(chosen.sum()))
        publish_view(session, family, table)
        grant_readers(session, [q(table), q(family), f"{q('sqlanon')}.{q(table + '_bounds')}"])
        write_state(
            session, family, version, scope, src, key, keys, live_rows, prior, cells, ghosts
        )
        summary = catalog.Release(
            family=family,
            version=version,
            table_name=table,
            model="ke",
            source=src.label,
            parameters=parameters,
            **left_out_counts(chosen, prior, live_rows),
            groups=int(plan.groups),
            sum_of_errors=float(plan.sum_of_errors),
            source_rows=source_rows,
            metrics={
                "static_optimum": plan.static_optimum,
                # the yardstick of metrics.error_ratio: the same rows, grouped optimally
                "published_optimum": ke.static_optimum(values[chosen], k, e),
                **changes.as_metrics(),
                "ghosts": ghost_rows,
                "chain_held_back": chain_held,
            },
            domain=scope.name,
            seq=scope.seq,
        )
        catalog.record_release(session, summary)
    return _summary(summary)


def _record_engine_release(
    session: Session,
    applied: release_engine.Applied,
    family: str,
    version: int,
    table: str,
    src: Source,
    parameters: dict[str, Any],
    source_rows: int,
    scope: DomainScope,
    last: catalog.Release | None,
    k: int,
    e: float,
) -> dict[str, Any]:
    """The summary of a release the engine path made: its view, grants and catalog row
    (or the latest summary, ``unchanged``, when it would publish nothing new)."""
    if applied.unchanged:
        assert last is not None
        return {**_summary(last), "unchanged": True}
    plan = applied.plan
    assert plan is not None
    q = session.quote_ident
    publish_view(session, family, table)
    grant_readers(session, [q(table), q(family), f"{q('sqlanon')}.{q(table + '_bounds')}"])
    summary = catalog.Release(
        family=family,
        version=version,
        table_name=table,
        model="ke",
        source=src.label,
        parameters=parameters,
        **applied.counts,
        groups=int(plan.groups),
        sum_of_errors=float(plan.sum_of_errors),
        source_rows=source_rows,
        metrics={
            "static_optimum": plan.static_optimum,
            "published_optimum": applied.published_optimum,
            **applied.changes,
            "ghosts": applied.ghosts,
            "chain_held_back": applied.chain_held,
        },
        domain=scope.name,
        seq=scope.seq,
    )
    catalog.record_release(session, summary)
    return _summary(summary)


def _write_ke(
    session: Session,
    src: Source,
    key: str,
    quasi: Sequence[str],
    sensitive: str,
    table: str,
    keys: np.ndarray,
    values: np.ndarray,
    group: np.ndarray,
    cells: Cells,
    rows: dict[str, np.ndarray],
    live_rows: int,
    seed: int | None,
    ghosts: live.Ghosts,
) -> None:
    """Write the release table and its bounds, and load the records' state for
    :func:`write_members`. Records ``live_rows`` and after are ghosts."""
    q = session.quote_ident
    chosen = group >= 0
    donor = ke.permute_within_groups(group, ke.secure_rng(seed))
    published = np.flatnonzero(chosen)
    order = random_order(published.size, seed)
    # The rows go into the temporary table in the release's order, held-back ones
    # last: the join streams them so and the sort by ord finds them sorted (10^6
    # rows: 0.3 s less). The ORDER BY alone decides the published order.
    layout = np.empty(published.size, dtype=np.int64)
    layout[order] = published
    layout = np.concatenate([layout, np.flatnonzero(~chosen)])
    ord_ = np.full(len(chosen), -1, dtype=np.int64)
    ord_[published] = order
    if ghosts.count:
        # Ghost slots take part in the shuffle; every value is looked up by record
        # (key as text or ghost id) among the source's and the ghosts' kept values.
        live_layout = layout[layout < live_rows]
        ghost_layout = layout[layout >= live_rows]
        load_members(
            session,
            keys[live_layout],
            "VARCHAR",
            group[live_layout],
            cells.cell[live_layout],
            rows["row_hash"][live_layout],
            rows["value_hash"][live_layout],
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
                "cell_id": cells.cell[ghost_layout],
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
            _sql(
                session,
                "ke_ghost_values",
                key=q(key),
                sensitive=q(sensitive),
                source=src.qualified(session),
            )
        )
        session.execute(
            _sql(
                session,
                "ke_write_release_ghosts",
                release=q(table),
                quasi_q=_idents(session, quasi, "q"),
                sensitive=q(sensitive),
                source=src.qualified(session),
                key=q(key),
            )
        )
        session.execute("DROP TABLE _sqlanon_values")
    else:
        join_keys, key_type = _join_keys(keys, src.columns[key])
        # Exact integer values travel with the assignment; others are read back from the
        # source record they belong to, in the column's own type. Held-back records
        # (group -1) carry their own key, no value and no place in the release.
        exact = _exact_integers(src.columns[sensitive], values)
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
            cells.cell[layout],
            rows["row_hash"][layout],
            rows["value_hash"][layout],
            extra={**donated, "ord": (ord_[layout], "BIGINT")},
        )
        session.execute(
            _sql(
                session,
                "ke_write_release_values" if exact else "ke_write_release",
                release=q(table),
                quasi_q=_idents(session, quasi, "q"),
                sensitive=q(sensitive),
                source=src.qualified(session),
                key=q(key),
            )
        )
    by_group = _by_group_and_value(values, group)
    _write_bounds(
        session,
        f"{q('sqlanon')}.{q(table + '_bounds')}",
        q(table),
        q(sensitive),
        src.columns[sensitive],
        values[by_group],
        group[by_group],
    )


def _check_ke_parameters(k: object, e: object, policy: object, seed: object) -> tuple[int, float]:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ConfigError(f"k must be a whole number >= 2, got {k!r}")
    if isinstance(e, bool) or not isinstance(e, (int, float, np.number)):
        raise ConfigError(f"e must be a number >= 0, got {e!r}")
    if math.isnan(float(e)) or float(e) < 0 or math.isinf(float(e)):
        raise ConfigError(f"e must be a finite number >= 0, got {e!r}")
    if policy not in KE_POLICIES:
        raise ConfigError(f"policy must be one of {', '.join(KE_POLICIES)}, got {policy!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise ConfigError(f"seed must be a whole number or NULL, got {seed!r}")
    return int(k), float(e)


def _join_keys(keys: np.ndarray, key_type: str) -> tuple[np.ndarray, str]:
    """Keys to join sqlanon's temporary tables back to the source by, and their SQL type.

    Integer keys travel as int64 and join natively (a join on text costs about twice as
    much); other keys travel as text and are cast to the key column's own type.
    """
    if _INTEGER.search(key_type.lower()):
        return keys.astype(np.int64), "BIGINT"
    if not _JOINABLE.search(key_type.lower()):
        raise ConfigError(
            f"the key column is of type {key_type}; use an integer, text, uuid, date or "
            "timestamp column as key"
        )
    return keys, key_type


def _exact_integers(sensitive_type: str, values: np.ndarray) -> bool:
    """Integer values whose sums stay below 2**53: exact in float64 all the way."""
    return bool(_INTEGER.search(sensitive_type.lower())) and float(np.abs(values).sum()) < 2.0**53


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


def _write_bounds(
    session: Session,
    bounds: str,
    release: str,
    sensitive: str,
    sensitive_type: str,
    values: np.ndarray,
    group: np.ndarray,
) -> None:
    """Write the bounds table: each group's sorted values as runs with their sums
    (layout: :mod:`sqlanon.models.ke_bounds`).

    Integer values whose sums stay below 2**53 are exact in float64, so numpy computes
    the table; anything else (DECIMAL, floats, larger integers) goes through SQL in the
    column's own arithmetic so the bounds match the database's SUM exactly. Integers
    whose absolute sum reaches 2**62 are refused: a lookup multiplies a value by a rank
    count in 64-bit arithmetic.
    """
    if not _exact_integers(sensitive_type, values):
        if _INTEGER.search(sensitive_type.lower()) and float(np.abs(values).sum()) >= 2.0**62:
            raise ConfigError(
                f"sensitive column {sensitive}: the sum of its absolute values reaches 2**62, "
                "beyond what interval answers compute exactly; store it in coarser units "
                "(e.g. thousands) or as DECIMAL"
            )
        _write_bounds_sql(session, bounds, release, sensitive)
        return
    columns = ke_bounds.bounds_columns(values.astype(np.int64), group.astype(np.int64))
    types = dict.fromkeys(ke_bounds.COLUMNS, "INTEGER")
    types.update(value=sensitive_type, vmin=sensitive_type, vmax=sensitive_type)
    types.update(descending="BOOLEAN", prior_sum="BIGINT", total="BIGINT")
    session.load_temp("_sqlanon_bounds", columns, types)
    session.execute(_sql(session, "ke_copy_bounds", bounds=bounds))
    session.execute("DROP TABLE _sqlanon_bounds")


def _write_bounds_sql(session: Session, bounds: str, release: str, sensitive: str) -> None:
    session.execute(
        _sql(session, "ke_write_bounds", bounds=bounds, release=release, sensitive=sensitive)
    )


def rebuild_ke_bounds(session: Session) -> None:
    """Rewrite the bounds table of every (k,e) release from its release table, in the
    current layout (migration 003; a release table its owner dropped is skipped)."""
    q = session.quote_ident
    schema = session.query("SELECT current_schema()")[0][0]
    exists = sqltext.load(session.dialect, "relation_exists")
    # The catalog as migration 003 knows it (later migrations add columns).
    for table, parameters in session.query(
        "SELECT table_name, CAST(parameters AS VARCHAR) FROM sqlanon.releases WHERE model = 'ke'"
    ):
        if not session.query(exists, [schema, table]):
            continue
        bounds = f"{q('sqlanon')}.{q(table + '_bounds')}"
        session.execute(f"DROP TABLE IF EXISTS {bounds}")
        _write_bounds_sql(session, bounds, q(table), q(json.loads(parameters)["sensitive"]))
        grant_readers(session, [bounds])


def _summary(release: catalog.Release) -> dict[str, Any]:
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
