"""The source of a release, checked against the database's catalog: its table and
columns, the roles a call gives them, the counts that decide whether it can be
released, and the helpers that put checked names into SQL."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlanon import sqltext
from sqlanon.errors import (
    AmbiguousNameError,
    ConfigError,
    InfeasibleError,
    PermissionDeniedError,
    UndefinedColumnError,
    UndefinedTableError,
)
from sqlanon.session import ListsCatalog, Session
from sqlanon.state import catalog

NUMERIC = re.compile(
    r"^(u?(tiny|small|big|huge)?int(eger)?\d*|decimal.*|numeric.*|double.*|float\d*|real)$"
)


JOINABLE = re.compile(
    r"^(varchar.*|text|character.*|char.*|uuid|date|timestamp.*|decimal.*|numeric.*)$"
)


# Integer types that fit int64: their keys join natively, their sums are exact in float64.
INTEGER = re.compile(r"^(tinyint|smallint|integer|int|bigint|int2|int4|int8)$")


RESERVED = {"group_id", "class_id"}


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
                f"{role} column {name!r} matches columns {', '.join(map(quoted_name, found))} of "
                f"{self.label}, which differ only in case: quote the one you mean, e.g. "
                f"{quoted_name(found[0])!r}"
            )
        raise UndefinedColumnError(
            f"{role} column {name!r} is not in {self.label}; "
            f"its columns are: {', '.join(self.columns)}"
        )


def quoted_name(name: str) -> str:
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
        schema, schema_quoted = current_schema(session), True
        table, table_quoted = parts[0]

    # Spark's catalog keeps database and table names in lower case: a quoted name
    # matches there ignoring case too.
    exact = not isinstance(session, ListsCatalog)

    def fits(found: str, name: str, quoted: bool) -> bool:
        return found == name if quoted and exact else found.lower() == name.lower()

    rows = (
        session.find_tables(schema, table)
        if isinstance(session, ListsCatalog)
        else session.query(sqltext.load(session.dialect, "find_tables"), [schema, table])
    )
    matching = [
        (s, t) for s, t in rows if fits(s, schema, schema_quoted) and fits(t, table, table_quoted)
    ]
    found = list(dict.fromkeys(matching))
    if len(found) > 1:
        names = ", ".join(f"{quoted_name(s)}.{quoted_name(t)}" for s, t in found)
        raise AmbiguousNameError(
            f"source {source!r} matches tables {names}, which differ only in case: "
            f"quote the one you mean, e.g. '{quoted_name(found[0][0])}.{quoted_name(found[0][1])}'"
        )
    if not found:
        if session.dialect == "postgres":
            _refuse_unreadable(session, source, schema, table, fits, schema_quoted, table_quoted)
        raise UndefinedTableError(
            f"source table {source!r} does not exist (looked in schema {schema!r}); "
            "give an existing table as table or schema.table (quote mixed-case names: "
            '"Clinic"."MixedCase")'
        )
    schema, table = found[0]
    if schema == "sqlanon":
        raise ConfigError("the sqlanon catalog cannot be a release source")
    columns = dict(
        session.table_columns(schema, table)
        if isinstance(session, ListsCatalog)
        else session.query(sqltext.load(session.dialect, "table_columns"), [schema, table])
    )
    return Source(schema, table, columns)


def _refuse_unreadable(
    session: Session,
    source: str,
    schema: str,
    table: str,
    fits: Callable[[str, str, bool], bool],
    schema_quoted: bool,
    table_quoted: bool,
) -> None:
    """PostgreSQL: raise :class:`PermissionDeniedError` (42501) when ``source`` exists
    but the caller may not read it, as PostgreSQL would: a schema it may not use is
    refused whatever it holds, a table in a usable schema is refused by name. Only the
    caller's own spelling of the name is shown."""
    rows = session.query(sqltext.load(session.dialect, "denied_source"), [schema, table])
    schemas = [r for r in rows if fits(r[0], schema, schema_quoted)]
    if any(not usable for _s, _t, usable, _c in schemas):
        caller = schemas[0][3]
        raise PermissionDeniedError(
            f"permission denied for the schema of source {source!r}: role {caller!r} may "
            "not use it; its owner may GRANT USAGE ON SCHEMA ... to the releasing role"
        )
    tables = [r for r in schemas if r[1] is not None and fits(r[1], table, table_quoted)]
    if tables:
        caller = tables[0][3]
        raise PermissionDeniedError(
            f"permission denied for source table {source!r}: role {caller!r} may not read "
            "it; its owner may GRANT SELECT ON it to the releasing role"
        )


def current_schema(session: Session) -> str:
    """The schema (Spark: database) an unqualified name is looked up in, and a release
    goes to."""
    if session.schema is not None:
        return session.schema
    if isinstance(session, ListsCatalog):
        return session.current_schema()
    return str(session.query("SELECT current_schema()")[0][0])


def release_relation(session: Session, release: catalog.Release) -> str:
    """The table of an earlier ``release`` as SQL: in the schema it was published in,
    where the catalog says (PostgreSQL), else as :func:`relation`."""
    if release.schema is None:
        return relation(session, release.table_name)
    q = session.quote_ident
    return f"{q(release.schema)}.{q(release.table_name)}"


def release_schema(session: Session, family: str, last: catalog.Release | None) -> dict[str, str]:
    """What a release records of where it goes and who made it: ``{"schema": ...,
    "released_by": ...}`` where the session names a schema (PostgreSQL), so that analysts
    and later releases find its tables whatever their search path, and a domain is
    inferred only from the caller's own releases (:mod:`sqlanon.state.domains`); a family stays
    in the schema of its first version."""
    if session.schema is None:
        return {}
    if last is not None and last.schema is not None and last.schema != session.schema:
        raise ConfigError(
            f"family {family!r} is published in schema {last.schema!r}, and this release "
            f"would go to {session.schema!r} (the current schema): SET search_path TO "
            f"{quoted_name(last.schema)} first, or start a new family"
        )
    ((role,),) = session.query("SELECT CAST(current_user AS text)")
    return {"schema": session.schema, "released_by": str(role)}


#: The schema of the (k,e) bounds tables, per dialect (PostgreSQL: migration 010).
BOUNDS_SCHEMAS = {"postgres": "sqlanon_bounds"}


def bounds_relation(session: Session, table: str) -> str:
    """The bounds table of release table ``table`` as SQL: ``sqlanon."<table>_bounds"``
    (PostgreSQL: ``sqlanon_bounds."<table>_bounds"``)."""
    q = session.quote_ident
    return f"{q(BOUNDS_SCHEMAS.get(session.dialect, 'sqlanon'))}.{q(table + '_bounds')}"


def relation(session: Session, name: str) -> str:
    """Table or view ``name`` of the release's schema as SQL: qualified where the session
    never resolves names through the connection's search path (PostgreSQL), bare where
    the connection's current schema is the place (DuckDB, Spark).

    A release's own tables are always named so, never by a bare name on PostgreSQL."""
    q = session.quote_ident
    return q(name) if session.schema is None else f"{q(session.schema)}.{q(name)}"


def grant_readers(session: Session, relations: Sequence[str]) -> None:
    """PostgreSQL: let role ``sqlanon_analyst`` read what a release published (quoted
    names: its table, the family view, its bounds table) and nothing else. DuckDB has
    no roles."""
    if session.dialect == "postgres":
        session.execute(render_sql(session, "grant_readers", relations=", ".join(relations)))


def relation_exists(session: Session, schema: str, name: str) -> bool:
    """Whether a table or view ``schema.name`` exists (exact names)."""
    if isinstance(session, ListsCatalog):  # Spark: names ignore case
        return bool(session.find_tables(schema, name))
    return bool(session.query(sqltext.load(session.dialect, "relation_exists"), [schema, name]))


def render_sql(session: Session, name: str, **idents: str) -> str:
    return sqltext.render(sqltext.load(session.dialect, name), **idents)


def idents(session: Session, names: Sequence[str], alias: str | None = None) -> str:
    prefix = f"{session.quote_ident(alias)}." if alias else ""
    return ", ".join(prefix + session.quote_ident(n) for n in names)


def check_names(family: object, quasi: object, sensitive: list[str], key: str) -> list[str]:
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
    reserved = RESERVED & (set(quasi) | set(sensitive))
    if reserved:
        raise ConfigError(f"columns named {sorted(reserved)} clash with sqlanon's own; rename them")
    return quasi


def check_target(session: Session, family: str, version: int) -> str:
    """The new table's name; refuse to overwrite anything sqlanon did not create."""
    table = f"{family}_v{version}"
    schema = current_schema(session)
    names = [table] if version > 1 else [family, table]
    for name in names:
        if relation_exists(session, schema, name):
            raise ConfigError(
                f"a table or view named {name!r} already exists in schema {schema!r}; "
                "choose another family name or drop it"
            )
    return table


def check_unchanged(
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


def profile_source(session: Session, source: Source, key: str, sensitive: str | None) -> int:
    """Row count, after refusing NULL or duplicate keys and NULL sensitive values."""
    q = session.quote_ident
    n, keys_present, keys_distinct, values_present = session.query(
        render_sql(
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
                render_sql(session, "duplicate_keys", key=q(key), source=source.qualified(session))
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
