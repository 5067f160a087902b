"""A family's rows on Spark, stored once and appended to (issue 27).

Spark's parquet tables take no UPDATE or DELETE, so the layout of
:mod:`sqlanon.state.release_rows` (current rows, moved to a history) becomes two
append-only tables in database ``sqlanon``:

- ``<family>__rows``: every row any version showed, each with the version that first
  showed it (``sqlanon_first``) and its row number (``sqlanon_row``, unique in the
  family, drawn from the order of the release table that wrote it, itself random);
- ``<family>__closed``: ``(sqlanon_row, sqlanon_last)``, a row no longer current and the
  last version that showed it.

``<family>_v<N>`` is a view: the rows first shown at N or before and not closed before
N, with the columns version N published (never the row number or the versions). A
release decides what it keeps exactly as on DuckDB and PostgreSQL (which groups are
kept whole, which continue a current group and which of their rows change: the same
``rows_*.sql`` files, reading the current rows as the rows not closed,
``sqlanon/spark/sql/rows_current_view.sql``, and the stored row number where those
engines read a row's place); it then **appends** the rows of its new groups, the changed
rows of continued groups and the closings. ``INSERT INTO`` a parquet table adds files
and leaves the old ones as they were, so every earlier version reads exactly as it did,
and a release that changes little writes little. An undo deletes the files the release
added (:mod:`sqlanon.spark.undo`).

The (k,e) bounds keep a table per version on Spark (they are small). A family released
before this layout keeps its version tables (they read as they did); its rows start at
its next version, as a first version's do. Each version's shown columns are recorded
in ``sqlanon.release_columns`` (Spark's in-memory catalog forgets views when the
application ends; :func:`sqlanon.spark.attach.attach_releases` makes them again).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.session import Session
from sqlanon.state import continued_rows
from sqlanon.state.source import relation_exists, render_sql

#: The database of a family's rows and closed rows.
SCHEMA = "sqlanon"
#: The columns a rows table adds to a version's (never shown by a view).
HIDDEN = ("sqlanon_first", "sqlanon_row")
#: What a version without the family's ghost column shows in its place
#: (``sqlanon/spark/sql/rows_staged.sql``), by ghost column.
NO_GHOST = {"ghost": "sqlanon_no_ghost", "class_ghosts": "sqlanon_no_class_ghosts"}
#: The temporary views of one release, dropped when it is stored.
VIEWS = ("_sqlanon_current", "_sqlanon_no_ids")


def rows_name(family: str) -> str:
    return f"{family}__rows"


def closed_name(family: str) -> str:
    return f"{family}__closed"


def qualified(session: Session, name: str) -> str:
    q = session.quote_ident
    return f"{q(SCHEMA)}.{q(name)}"


def started(session: Session, family: str) -> bool:
    """Whether ``family`` has its rows table (else its rows start at this version)."""
    return relation_exists(session, SCHEMA, rows_name(family))


def check_free(session: Session, family: str) -> None:
    """A family's first version: refuse when its rows tables' names are taken."""
    for name in (rows_name(family), closed_name(family)):
        if relation_exists(session, SCHEMA, name):
            raise ConfigError(
                f"a table named {SCHEMA}.{name} already exists, where family {family!r} "
                "would keep its rows; choose another family name"
            )


def current(session: Session, family: str) -> dict[str, str]:
    """The family's current rows as a temporary view (``_sqlanon_current``); the names
    the common ``rows_*.sql`` files read: ``rows`` the current rows, ``history`` every
    row the family ever showed (for the highest group id, ``rows_ids.sql``)."""
    q = session.quote_ident
    table = qualified(session, rows_name(family))
    closed = qualified(session, closed_name(family))
    session.execute(render_sql(session, "rows_current_view", rows=table, history=closed))
    return {"rows": q("_sqlanon_current"), "history": table}


def columns_of(session: Session, relation: str) -> list[str]:
    """The columns of a table or (temporary) view, in order."""
    return list(session.query_arrays(f"SELECT * FROM {relation} LIMIT 0"))  # noqa: S608


def remap(session: Session, temp: Sequence[str], group: str) -> None:
    """The temporary tables ``temp`` (plan ids in column ``group``) made again with the
    ids the release shows (``_sqlanon_group_ids``)."""
    q = session.quote_ident
    for table in temp:
        columns = [
            f"{q('x')}.{q('sqlanon_final')} AS {q(c)}" if c == group else f"{q('x')}.{q(c)}"
            for c in columns_of(session, q(table))
        ]
        session.execute(
            render_sql(
                session, "rows_remap", table=q(table), group=q(group), columns=", ".join(columns)
            )
        )


def stage(
    session: Session,
    staging: str,
    columns: Sequence[str],
    group: str,
    ghost: str,
    renumbered: bool,
) -> list[str]:
    """``_sqlanon_staged``: the release table ``staging`` (``columns``) with the family's
    ghost column and, when ``renumbered``, the ids the release shows (the release table
    is then written again with them: the private state's writes read it). Returns its
    columns."""
    q = session.quote_ident
    ids = "_sqlanon_group_ids"
    if not renumbered:
        ids = "_sqlanon_no_ids"
        session.execute(sqltext.load(session.dialect, "rows_no_ids"))
    shown = [
        f"{q('x')}.{q('sqlanon_final')} AS {q(c)}" if c == group else f"{q('x')}.{q(c)}"
        for c in columns
    ]
    present = list(columns)
    if ghost not in columns:
        shown.append(f"{q('x')}.{q(NO_GHOST[ghost])} AS {q(ghost)}")
        present.append(ghost)
    session.execute(
        render_sql(
            session, "rows_staged", staging=staging, group=q(group), ids=q(ids),
            columns=", ".join(shown),
        )
    )  # fmt: skip
    if renumbered:
        session.execute(f"DROP TABLE {staging}")
        session.execute(
            render_sql(
                session, "rows_restage", staging=staging, columns=", ".join(q(c) for c in columns)
            )
        )
    return present


def check_columns(session: Session, family: str, version: int, columns: Sequence[str]) -> None:
    """Refuse a version with columns its family's rows lack (a family keeps its columns)."""
    have = set(columns_of(session, qualified(session, rows_name(family))))
    unknown = set(columns) - have
    if unknown:
        raise ConfigError(
            f"version {version} of family {family!r} has columns its earlier versions lack "
            f"({sorted(unknown)}); a family keeps its columns"
        )


def store(
    session: Session,
    family: str,
    version: int,
    release: str,
    shown: Sequence[str],
    present: Sequence[str],
    group: str,
    what: str | None,
    first: bool,
) -> None:
    """Append version ``version`` (``_sqlanon_staged``, columns ``present``) to its
    family's rows: all of it when its rows start here (``first``), else the rows of its
    new groups and the changed rows of continued ones, closing the rows it no longer
    shows; then drop the release table ``release`` and leave a view of version
    ``version`` in its place, showing ``shown``."""
    q = session.quote_ident
    table = qualified(session, rows_name(family))
    closed = qualified(session, closed_name(family))
    number = sqltext.number(version)
    staged = q("_sqlanon_staged")
    if first:
        session.execute(
            render_sql(session, "rows_current", rows=table, staging=staged, version=number)
        )
        session.execute(render_sql(session, "rows_history", rows=table, history=closed))
    else:
        names = {"rows": q("_sqlanon_current"), "history": closed, "table": table}
        if what is not None:  # (k,e): groups may continue
            continued_rows.write(
                session, names["rows"], closed, staged, [q(c) for c in present], q(group),
                q(what), version, table=table, row_base=_next_row(session, table),
            )  # fmt: skip
        for statement in sqltext.statements(
            render_sql(
                session, "rows_move", columns=", ".join(q(c) for c in present),
                group=q(group), staging=staged, version=number,
                row_base=sqltext.number(_next_row(session, table)), **names,
            )
        ):  # fmt: skip
            session.execute(statement)
    session.execute(f"DROP TABLE {release}")
    session.execute(view_sql(session, family, version, release, shown))
    session.execute(
        sqltext.load(session.dialect, "rows_record_columns"),
        [family, version, json.dumps(list(shown))],
    )
    for view in VIEWS:
        session.execute(f"DROP VIEW IF EXISTS {q(view)}")


def _next_row(session: Session, table: str) -> int:
    """The number the next row appended to ``table`` takes."""
    ((found,),) = session.query(render_sql(session, "rows_next", rows=table))
    return int(found)


def shown_columns(session: Session) -> dict[tuple[str, int], list[str]]:
    """``(family, version)`` -> the columns its view shows, for every version stored in
    its family's rows."""
    found = session.query("SELECT family, version, columns FROM sqlanon.release_columns")
    return {(str(f), int(v)): list(json.loads(c)) for f, v, c in found}


def view_sql(
    session: Session, family: str, version: int, release: str, shown: Sequence[str]
) -> str:
    """The statement making the view of version ``version`` (``release``, quoted)."""
    q = session.quote_ident
    return render_sql(
        session, "rows_view", release=release, rows=qualified(session, rows_name(family)),
        history=qualified(session, closed_name(family)),
        columns=", ".join(q(c) for c in shown), version=sqltext.number(version),
    )  # fmt: skip
