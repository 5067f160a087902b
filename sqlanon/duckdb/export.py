"""The analyst hand-off file: ``export`` writes the releases of a family or a domain,
with only what :mod:`sqlanon.state.exports` allows, into a DuckDB file (or a folder of
Parquet files); ``attach_export`` opens such a folder in a DuckDB connection.

An export's DuckDB file is laid out as an owner's database is, so the same query
functions answer from it: release tables and family views in ``main``, bounds tables
and the public catalog (``releases``, ``hierarchies``, ``query_limits``,
``export_info``) in ``sqlanon``. A Parquet folder holds one file per table,
``<schema>/<name>.parquet``; the family views are made again when it is attached.

The owner's database may be of any engine: a DuckDB owner's tables are copied in SQL,
a PostgreSQL or Spark owner's are read through its :class:`~sqlanon.session.Session`
(each table passes through Python once) and written with DuckDB.

Nothing is written in place: the export is built in a file (or folder) beside ``path``
and renamed onto it at the end, so an error leaves ``path`` as it was. Exporting again
to the same path keeps the versions already there and adds the new ones.
"""

from __future__ import annotations

import datetime
import os
import re
import secrets
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from sqlanon import sqltext
from sqlanon.duckdb.session import DuckDBSession
from sqlanon.errors import ConfigError, ExportError
from sqlanon.session import ListsCatalog, Session
from sqlanon.state import exports
from sqlanon.state.source import relation_exists
from sqlanon.version import __version__

FORMATS = ("duckdb", "parquet")
#: The export's layout version (``sqlanon.export_info``).
LAYOUT = "1"
_MARKER = ("sqlanon", "export_info")
# PostgreSQL types as information_schema names them, and DuckDB's for their copy.
_TYPES = {
    "smallint": "SMALLINT",
    "integer": "INTEGER",
    "bigint": "BIGINT",
    "real": "FLOAT",
    "double precision": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp without time zone": "TIMESTAMP",
    "timestamp with time zone": "TIMESTAMPTZ",
}
# Spark types as its catalog names them (``spark.catalog.listColumns``), and DuckDB's.
_SPARK_TYPES = {
    "tinyint": "TINYINT",
    "smallint": "SMALLINT",
    "int": "INTEGER",
    "bigint": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP",
}
_SPARK_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
# Spark's session hands a DECIMAL over as a float: exact up to 15 significant digits.
_FLOAT_DIGITS = 15


def export(
    owner: Session,
    name: str,
    path: str | os.PathLike[str],
    fmt: str = "duckdb",
    con: duckdb.DuckDBPyConnection | None = None,
) -> dict[str, Any]:
    """Export every release of family or domain ``name`` from ``owner``'s database to
    ``path``. ``con``: the DuckDB connection ``owner`` is a session on (its tables are
    copied in SQL); None: another engine, whose rows are read through ``owner``."""
    if fmt not in FORMATS:
        raise ConfigError(f"export format {fmt!r} is not one of {', '.join(FORMATS)}")
    target = Path(path)
    if con is not None and is_export(con.cursor()):  # a cursor: this may run in a UDF
        raise ExportError("this database is an analyst export: export from the owner's database")
    releases = exports.releases_to_export(owner, name)
    existing = _existing(target, fmt)
    work = target.with_name(f".{target.name}.sqlanon-{secrets.token_hex(6)}")
    database = work if fmt == "duckdb" else work.with_name(work.name + ".duckdb")
    try:
        if fmt == "duckdb" and existing:
            shutil.copyfile(target, database)
        elif existing:
            _load_parquet(target, database)
        added = _write(owner, con, releases, database)
        if fmt == "parquet":
            _dump_parquet(database, work)
            _swap_folder(work, target)
        else:
            os.replace(database, target)
    finally:
        for leftover in (database, database.with_name(database.name + ".wal")):
            leftover.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    return {
        "path": str(target),
        "format": fmt,
        "families": sorted({r.family for r in releases}),
        "added": added,
    }


def _existing(target: Path, fmt: str) -> bool:
    """Whether ``target`` is an export to add to (False: nothing there yet); refuse
    anything else there, and a folder that does not exist."""
    if not target.parent.is_dir():
        raise ExportError(
            f"cannot export to {str(target)!r}: folder {str(target.parent)!r} does not exist"
        )
    if not target.exists() and not target.is_symlink():
        return False
    if fmt == "parquet":
        if target.is_dir() and (target / "sqlanon" / "export_info.parquet").is_file():
            return True
    elif target.is_file() and _is_export_file(target):
        return True
    raise ExportError(
        f"{str(target)!r} exists and is not a sqlanon {fmt} export: export to a new path "
        "(or to an earlier export of the same format, to add versions)"
    )


def _is_export_file(path: Path) -> bool:
    try:
        with duckdb.connect(str(path), read_only=True) as con:
            return is_export(con)
    except duckdb.Error:
        return False


def is_export(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con``'s database is an analyst export (or an attached Parquet one)."""
    return bool(
        con.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2",
            list(_MARKER),
        ).fetchall()
    )


@contextmanager
def _attached(
    con: duckdb.DuckDBPyConnection, database: Path
) -> Iterator[tuple[DuckDBSession, str]]:
    """A session on ``con`` with ``database`` attached writable, and its quoted alias."""
    session = DuckDBSession(con)
    alias = session.quote_ident(f"_sqlanon_export_{secrets.token_hex(6)}")
    # ATTACH takes no parameter: the path goes in as a string literal, quotes doubled.
    session.execute(f"ATTACH {_literal(str(database))} AS {alias} (READ_WRITE)")
    try:
        yield session, alias
        session.execute(f"CHECKPOINT {alias}")
    finally:
        session.execute(f"DETACH {alias}")
        session.close()


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _write(
    owner: Session,
    con: duckdb.DuckDBPyConnection | None,
    releases: Sequence[exports.ExportedRelease],
    database: Path,
) -> list[str]:
    """Add ``releases`` to the export database file; the tables added."""
    writer = con if con is not None else duckdb.connect()
    try:
        with _attached(writer, database) as (session, db):
            schema = sqltext.render(sqltext.load("duckdb", "export_schema"), db=db)
            for statement in sqltext.statements(schema):
                session.execute(statement)
            added = _copy_tables(owner, con is not None, session, db, releases)
            _write_catalog(owner, session, db, releases)
            _check_allowed(session, db)
        return added
    finally:
        if con is None:
            writer.close()


def _relations(session: DuckDBSession, db: str) -> set[tuple[str, str]]:
    """``(schema, name)`` of every table and view in database ``db`` (quoted alias)."""
    name = sqltext.unquote(db)[0]
    return {
        (str(s), str(t))
        for s, t in session.query(sqltext.load("duckdb", "export_relations"), [name])
    }


def _copy_tables(
    owner: Session,
    same_engine: bool,
    session: DuckDBSession,
    db: str,
    releases: Sequence[exports.ExportedRelease],
) -> list[str]:
    """Copy each release table and bounds table the export lacks (versions it holds
    stay as they are); the owner may have dropped an old version's: it is skipped."""
    present = _relations(session, db)
    added = []
    for release in releases:
        copies = [(release.table, "main")]
        if release.bounds is not None:
            copies.append((release.bounds, "sqlanon"))
        for (schema, name), into in copies:
            if (into, name) in present or not relation_exists(owner, schema, name):
                continue
            target = f"{session.quote_ident(into)}.{session.quote_ident(name)}"
            if same_engine:
                source = f"{owner.quote_ident(schema)}.{owner.quote_ident(name)}"
                sql = sqltext.render(
                    sqltext.load("duckdb", "export_copy"), db=db, target=target, source=source
                )
                session.execute(sql)
            else:
                _copy_rows(owner, schema, name, session, db, target)
            added.append(name)
    return added


def _copy_rows(
    owner: Session, schema: str, name: str, session: DuckDBSession, db: str, target: str
) -> None:
    """Copy a table of another engine row by row through Python: its values as text,
    cast back to the DuckDB type of each column."""
    q = owner.quote_ident
    types = _owner_columns(owner, schema, name)
    select = sqltext.render(
        sqltext.load(owner.dialect, "export_table_rows"),
        columns=", ".join(q(c) for c in types),
        relation=f"{q(schema)}.{q(name)}",
    )
    rows = owner.query(select)
    arrays = {
        column: np.array([_text(row[i]) for row in rows] or [None], dtype=object)
        for i, column in enumerate(types)
    }
    session.load_temp("_sqlanon_export_rows", arrays, types)
    rows_sql = sqltext.load("duckdb", "export_copy_rows")
    session.execute(sqltext.render(rows_sql, db=db, target=target), [len(rows)])
    session.execute('DROP TABLE "_sqlanon_export_rows"')


def _text(value: Any) -> str | None:
    """A value as text DuckDB casts back exactly (floats by ``repr``: shortest exact)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Decimal | datetime.date | datetime.datetime):
        return str(value)
    return str(value)


def _owner_columns(owner: Session, schema: str, name: str) -> dict[str, str]:
    """Column -> the DuckDB type its copy takes, in order: from Spark's catalog listing,
    else from the owner's ``information_schema``."""
    if isinstance(owner, ListsCatalog):
        return {str(c): _spark_duckdb_type(str(t)) for c, t in owner.table_columns(schema, name)}
    columns = owner.query(sqltext.load(owner.dialect, "export_columns"), [schema, name])
    return {str(c): _duckdb_type(str(t), p, s) for c, t, p, s in columns}


def _spark_duckdb_type(name: str) -> str:
    decimal = _SPARK_DECIMAL.match(name.lower())
    if decimal:
        precision, scale = (int(g) for g in decimal.groups())
        # wider: the value arrives rounded to a float, DOUBLE holds it as it came
        return f"DECIMAL({precision}, {scale})" if precision <= _FLOAT_DIGITS else "DOUBLE"
    return _SPARK_TYPES.get(name.lower(), "VARCHAR")


def _duckdb_type(name: str, precision: Any, scale: Any) -> str:
    if name == "numeric":
        if precision is not None and int(precision) <= 38:
            return f"DECIMAL({int(precision)}, {int(scale or 0)})"
        return "DOUBLE"  # unconstrained numeric: DuckDB's DECIMAL stops at 38 digits
    return _TYPES.get(name, "VARCHAR")


_RELEASE_TYPES = dict(
    zip(
        exports.RELEASE_COLUMNS,
        ["VARCHAR", "INTEGER", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR"]
        + ["TIMESTAMP", "BIGINT", "BIGINT", "VARCHAR", "INTEGER"],
        strict=True,
    )
)


def _write_catalog(
    owner: Session, session: DuckDBSession, db: str, releases: Sequence[exports.ExportedRelease]
) -> None:
    """The public catalog rows of the releases the export now holds, the hierarchies of
    their lHD releases, the owner's query limits, the family views, the marker."""
    present = _relations(session, db)
    held = [r for r in releases if ("main", r.table_name) in present]
    hierarchies = exports.hierarchy_rows(owner, held)
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    tables: dict[str, tuple[Sequence[str], Sequence[str], Sequence[Sequence[Any]]]] = {
        "releases": (
            exports.RELEASE_COLUMNS,
            list(_RELEASE_TYPES.values()),
            [_naive(r.row) for r in held],
        ),
        "datasets": (["dataset"], ["VARCHAR"], sorted({(h[0],) for h in hierarchies})),
        "hierarchies": (
            ["dataset", "attribute", "value", "level", "label"],
            ["VARCHAR", "VARCHAR", "VARCHAR", "INTEGER", "VARCHAR"],
            hierarchies,
        ),
        "limits": (["name", "value"], ["VARCHAR", "BIGINT"], exports.query_limit_rows(owner)),
        "info": (
            ["name", "value"],
            ["VARCHAR", "VARCHAR"],
            [
                ("layout", LAYOUT),
                ("sqlanon_version", __version__),
                ("exported_at", now.isoformat()),
            ],
        ),
    }
    for table, (columns, types, rows) in tables.items():
        _load_rows(session, f"_sqlanon_export_{table}", columns, types, rows)
    for statement in sqltext.statements(
        sqltext.render(sqltext.load("duckdb", "export_catalog"), db=db)
    ):
        session.execute(statement)
    q = session.quote_ident
    for family, table in session.query(
        sqltext.render(sqltext.load("duckdb", "export_newest"), db=db)
    ):
        view = f"{q('main')}.{q(str(family))}"
        session.execute(
            sqltext.render(
                sqltext.load("duckdb", "export_view"), db=db, view=view, table=q(str(table))
            )
        )


def _naive(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A catalog row with its timestamp in UTC without a zone (PostgreSQL's may have one)."""
    return tuple(
        v.astimezone(datetime.UTC).replace(tzinfo=None)
        if isinstance(v, datetime.datetime) and v.tzinfo is not None
        else v
        for v in row
    )


def _load_rows(
    session: DuckDBSession,
    name: str,
    columns: Sequence[str],
    types: Sequence[str],
    rows: Sequence[Sequence[Any]],
) -> None:
    """Temporary table ``name`` holding ``rows`` (values as text, cast to ``types``)."""
    arrays = {c: np.array([_text(r[i]) for r in rows], dtype=object) for i, c in enumerate(columns)}
    session.load_temp(name, arrays, dict(zip(columns, types, strict=True)))


def _check_allowed(session: DuckDBSession, db: str) -> None:
    """Refuse to finish an export holding anything its catalog does not account for."""
    rows = session.query(sqltext.render(sqltext.load("duckdb", "export_held"), db=db))
    allowed = exports.allowed_relations(
        tables=[str(r[0]) for r in rows],
        bounds=[str(r[0]) for r in rows if r[1] == "ke"],
        views=[str(r[2]) for r in rows],
    )
    extra = _relations(session, db) - allowed
    if extra:
        names = ", ".join(sorted(f"{s}.{t}" for s, t in extra))
        raise ExportError(f"the export would hold tables it may not ({names}): nothing was written")


# A Parquet export: one file per table of the DuckDB layout, <schema>/<name>.parquet.


def _parquet_files(folder: Path) -> list[tuple[str, str, Path]]:
    """``(schema, table, file)`` of every table file of a Parquet export."""
    found = []
    for schema in ("main", "sqlanon"):
        for file in sorted((folder / schema).glob("*.parquet")):
            if not exports.table_name_ok(file.stem):
                raise ExportError(f"{str(file)!r} is not a file a sqlanon export holds")
            found.append((schema, file.stem, file))
    return found


def _load_parquet(folder: Path, database: Path) -> None:
    """Database file ``database`` holding the tables of Parquet export ``folder``."""
    with duckdb.connect(str(database)) as con:
        session = DuckDBSession(con)
        session.execute("CREATE SCHEMA sqlanon")
        for schema, table, file in _parquet_files(folder):
            target = f"{session.quote_ident(schema)}.{session.quote_ident(table)}"
            session.execute(
                f"CREATE TABLE {target} AS SELECT * FROM read_parquet({_literal(str(file))})"  # noqa: S608
            )
        session.close()


def _dump_parquet(database: Path, folder: Path) -> None:
    """Write every table of export database ``database`` to ``folder`` as Parquet."""
    with duckdb.connect(str(database), read_only=True) as con:
        session = DuckDBSession(con)
        for schema, table in sorted(_relations(session, '"' + _database_name(con) + '"')):
            if (schema, table) in {("main", f) for f in _views(con)}:
                continue
            (folder / schema).mkdir(parents=True, exist_ok=True)
            source = f"{session.quote_ident(schema)}.{session.quote_ident(table)}"
            file = _literal(str(folder / schema / f"{table}.parquet"))
            session.execute(f"COPY {source} TO {file} (FORMAT parquet)")
        session.close()


def _database_name(con: duckdb.DuckDBPyConnection) -> str:
    row = con.execute("SELECT current_database()").fetchone()
    assert row is not None
    return str(row[0])


def _views(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        str(r[0])
        for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    ]


def _swap_folder(work: Path, target: Path) -> None:
    """Put folder ``work`` at ``target``, the export there before moved aside, then removed."""
    if not target.exists():
        work.rename(target)
        return
    old = target.with_name(f".{target.name}.sqlanon-old-{secrets.token_hex(6)}")
    target.rename(old)
    try:
        work.rename(target)
    except OSError:
        old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def attach_export(con: duckdb.DuckDBPyConnection, folder: str | os.PathLike[str]) -> list[str]:
    """Make the Parquet export ``folder`` readable on ``con`` (an in-memory DuckDB
    connection, say) as its DuckDB file would be: views over its files in ``main`` and
    ``sqlanon``, and each family's view of its newest version. Returns the families."""
    path = Path(folder)
    if not (path / "sqlanon" / "export_info.parquet").is_file():
        raise ExportError(
            f"{str(path)!r} is not a sqlanon Parquet export (sqlanon export --format parquet)"
        )
    session = DuckDBSession(con)
    try:
        if session.query("SELECT 1 FROM information_schema.schemata WHERE schema_name = 'sqlanon'"):
            raise ExportError(
                "this connection has a schema sqlanon already: attach an export to a new one"
            )
        session.execute("CREATE SCHEMA sqlanon")
        for schema, table, file in _parquet_files(path.resolve()):
            view = f"{session.quote_ident(schema)}.{session.quote_ident(table)}"
            session.execute(
                f"CREATE VIEW {view} AS SELECT * FROM read_parquet({_literal(str(file))})"  # noqa: S608
            )
        db = session.quote_ident(_database_name(con))
        families = []
        for family, table in session.query(
            sqltext.render(sqltext.load("duckdb", "export_newest"), db=db)
        ):
            view = f"{session.quote_ident('main')}.{session.quote_ident(str(family))}"
            session.execute(
                sqltext.render(
                    sqltext.load("duckdb", "export_view"),
                    db=db,
                    view=view,
                    table=session.quote_ident(str(table)),
                )
            )
            families.append(str(family))
        return families
    finally:
        session.close()
