"""A family's rows, stored once: every version a view of its current rows and history
(issue 27).

A release writes its new version as a table (``<family>_v<N>``, the *staging* table)
the way it always did; then, on DuckDB and PostgreSQL, that table moves into the
family's **current rows** (``sqlanon."<family>__rows"``; PostgreSQL:
``sqlanon_bounds."<family>__rows"``, beside the bounds tables, readable by its owner
only) and ``<family>_v<N>`` becomes a view: the current rows shown since N or before,
then the **history** rows (``"<family>__history"``: rows no longer current, with the
last version that showed them) shown at N. The newest version reads the current rows
alone, as a table would; on DuckDB its view says so (:data:`NEWEST_ALONE`). The (k,e)
bounds tables keep every version in one table
(``"<family>__bounds"``, rows with the first and last version they are valid at; views
``<table>_bounds``): they are small.

**What a version keeps.** A group (an lHD class) whose content equals a current group's
keeps that group's rows, id and bounds rows: nothing of it is written again. Content is
what the release publishes of a group: for (k,e) the multiset of its rows'
quasi-identifiers (and ghost flags) and the multiset of its sensitive values (which row
shows which value is drawn at random, so the pairing is not content); for lHD the
multiset of its rows. Matching is by size and fingerprints, then checked row for row
(``rows_unequal.sql``), so a hash collision can only cost a copy, never a wrong row.
A (k,e) group that changed a little *continues* the current group most of its records
come from: it keeps that group's id and every row it still shows, and only the rows
that changed are written (:mod:`sqlanon.state.continued_rows`). Every other group of
the version keeps the plan's id (a fresh one above every id the family used when a kept
or continued group holds it), its rows join the current ones, and the current rows of
groups the version neither keeps nor continues move to the history. Ids are
renumbered before the private state is written (members, bounds), so the state names
the ids the release shows.

**Why keeping is as safe as drawing again.** A kept group's rows pair its values with
its rows by a permutation drawn, independently of the data, when the group was first
written; a fresh draw would be another such permutation. Either way the release is a
uniformly random assignment of the group's multiset, and the attacker, who holds every
version, sees the same multisets.

**Row order.** A version's view lists the rows kept from earlier versions first (in the
order of the version that wrote them), then its new rows, each batch in the keyed
random order of the release that wrote it. Where a row stands thus tells in which
version its group's content first appeared: the attacker, who holds every earlier
version, knows that already (a group's content is in the version before or it is not),
and which records entered, left or changed between versions is assumed known
(docs/PRIVACY.md, "Row order and shared rows"). Within a batch the order is random
under a secret nobody keeps.

Spark's parquet tables take no UPDATE or DELETE: its rows table is appended to, with a
table of closed rows beside it (:mod:`sqlanon.state.spark_rows`); the decisions above
are the same SQL. :data:`SHARED` names the engines that share rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.session import ListsCatalog, Session
from sqlanon.state import catalog, continued_rows, spark_rows
from sqlanon.state.source import (
    BOUNDS_SCHEMAS,
    current_schema,
    grant_readers,
    relation_exists,
    render_sql,
)

#: Engines whose versions are views of one rows table per family.
SHARED = frozenset({"duckdb", "postgres", "spark"})
#: Engines whose rows table is only appended to (:mod:`sqlanon.state.spark_rows`).
APPEND_ONLY = frozenset({"spark"})
#: Engines whose newest version's view reads the current rows alone
#: (``rows_view_newest.sql``), made again with the history by the next release: a UNION
#: ALL hides the table's statistics from DuckDB's optimizer. Not PostgreSQL: making an
#: earlier version's view again takes an ACCESS EXCLUSIVE lock on it, which waits for
#: every analyst reading it (a release locks only its family's view:
#: ``sqlanon/release/publish.py``), and its planner reads the two branches as one Append.
NEWEST_ALONE = frozenset({"duckdb"})
#: Columns a version may add to its family's rows (its ghosts), and their SQL file.
OPTIONAL_COLUMNS = {"ghost": "rows_add_ghost", "class_ghosts": "rows_add_class_ghosts"}
#: The ghost column of a model's rows, by its group column.
GHOST_COLUMN = {"group_id": "ghost", "class_id": "class_ghosts"}
#: The columns a rows table adds to a version's.
SPAN = ("sqlanon_first", "sqlanon_last")


def shared(session: Session) -> bool:
    return session.dialect in SHARED


def private_schema(session: Session) -> str:
    return BOUNDS_SCHEMAS.get(session.dialect, "sqlanon")


def rows_name(family: str) -> str:
    return f"{family}__rows"


def history_name(family: str) -> str:
    return f"{family}__history"


def bounds_name(family: str) -> str:
    return f"{family}__bounds"


def qualified(session: Session, name: str) -> str:
    """``name`` in the family tables' private schema, as SQL."""
    q = session.quote_ident
    return f"{q(private_schema(session))}.{q(name)}"


def check_free(session: Session, family: str) -> None:
    """A family's first version: refuse when its rows or bounds table's name is taken."""
    if not shared(session):
        return
    if session.dialect in APPEND_ONLY:
        spark_rows.check_free(session, family)
        return
    for name in (rows_name(family), history_name(family), bounds_name(family)):
        if relation_exists(session, private_schema(session), name):
            raise ConfigError(
                f"a table named {private_schema(session)}.{name} already exists, where "
                f"family {family!r} would keep its rows; choose another family name"
            )


@dataclass(frozen=True)
class Staged:
    """A version written as a table, about to move into its family's rows table."""

    family: str
    version: int
    table: str  # the staging table as SQL (it becomes the version's view)
    schema: str
    name: str
    columns: list[str]  # the columns it publishes, in order
    group: str  # "group_id" ((k,e)) or "class_id" (lHD)
    who: list[str]  # columns of one multiset of a group's content
    what: list[str]  # columns of the other (lHD: the same)
    bounds: str | None  # the staging bounds table as SQL ((k,e))
    previous: tuple[str, str] | None = None  # the version before's view (schema, name)


def columns_of(session: Session, schema: str, name: str) -> list[str]:
    """The columns of table ``schema.name``, in order."""
    if isinstance(session, ListsCatalog):  # Spark: no information_schema
        return [c for c, _ in session.table_columns(schema, name)]
    return [
        r[0] for r in session.query(sqltext.load(session.dialect, "table_columns"), [schema, name])
    ]


def keep(
    session: Session,
    staged: Staged,
    temp: Sequence[str],
    group: np.ndarray,
    overlap: bool = False,
) -> np.ndarray:
    """Match the staging table's groups with the family's current ones and give each
    its published id (kept or continued: the current group's; else the plan's or a
    fresh one); renumber the staging table and the temporary tables ``temp`` (plan ids
    in column ``group_id``). ``overlap``: the path counted where its groups' records
    come from (``_sqlanon_overlap``), so a group may continue one
    (:mod:`sqlanon.state.continued_rows`). Returns ``group`` (plan ids per planned row,
    -1: left out) in published ids."""
    if staged.version == 1:
        return group
    q = session.quote_ident
    appending = session.dialect in APPEND_ONLY
    if appending and not spark_rows.started(session, staged.family):
        return group  # a family released before its rows were shared: they start here
    who = ", ".join(f"{q('t')}.{q(c)}" for c in staged.who)
    what = ", ".join(f"{q('t')}.{q(c)}" for c in staged.what)
    names = {
        "staging": staged.table,
        "rows": qualified(session, rows_name(staged.family)),
        "history": qualified(session, history_name(staged.family)),
        "group": q(staged.group),
    }
    if appending:
        spark_rows.check_columns(session, staged.family, staged.version, staged.columns)
        names.update(spark_rows.current(session, staged.family))
    else:
        _align_columns(session, staged)
    for statement in sqltext.statements(
        render_sql(session, "rows_groups", who_t=who, what_t=what, **names)
    ):
        session.execute(statement)
    session.execute(sqltext.load(session.dialect, "rows_pairs"))
    for cols in dict.fromkeys([who, what]):  # lHD: one multiset
        session.execute(render_sql(session, "rows_unequal", cols=cols, **names))
    continued_rows.choose(session, overlap)
    ceiling = sqltext.number(group_ceiling(session, staged.family))
    session.execute(render_sql(session, "rows_ids", ceiling=ceiling, **names))
    if appending:
        spark_rows.remap(session, temp, "group_id")
        _stage_spark(session, staged, renumbered=True)
    else:
        session.execute(
            render_sql(session, "rows_remap", table=staged.table, group=q(staged.group))
        )
        for table in temp:
            session.execute(render_sql(session, "rows_remap", table=q(table), group=q("group_id")))
    ids = session.query_arrays("SELECT new_id, final_id FROM _sqlanon_group_ids")
    lookup = np.full(int(max(ids["new_id"].max(initial=-1), group.max(initial=-1))) + 2, -1)
    lookup[ids["new_id"].astype(np.int64)] = ids["final_id"].astype(np.int64)
    return np.where(group >= 0, lookup[np.maximum(group, 0)], -1)


def group_ceiling(session: Session, family: str) -> int:
    """The highest group id of the rows retirements of ``family`` deleted (-1: none):
    fresh ids go above it, so that no id a retired version showed is given again."""
    found = session.query(sqltext.load(session.dialect, "retire_ceiling"), [family])
    return int(found[0][0]) if found and found[0][0] is not None else -1


def _align_columns(session: Session, staged: Staged) -> None:
    """Give the staging table its family's ghost column when it has none (for the
    comparison; the version's view leaves it out). The rows table has that column from
    its start, so that no later release alters it (an ALTER TABLE would wait for every
    analyst reading an earlier version)."""
    have = set(columns_of(session, private_schema(session), rows_name(staged.family)))
    new = set(staged.columns)
    ghost = GHOST_COLUMN[staged.group]
    if ghost not in new:
        session.execute(render_sql(session, OPTIONAL_COLUMNS[ghost], table=staged.table))
    unknown = new - have
    if unknown:
        raise ConfigError(
            f"version {staged.version} of family {staged.family!r} has columns its earlier "
            f"versions lack ({sorted(unknown)}); a family keeps its columns"
        )


def _stage_spark(session: Session, staged: Staged, renumbered: bool) -> list[str]:
    """Spark: ``_sqlanon_staged``, the staging table with its family's ghost column (and,
    when ``renumbered``, the published ids); its columns."""
    return spark_rows.stage(
        session, staged.table, staged.columns, staged.group, GHOST_COLUMN[staged.group],
        renumbered,
    )  # fmt: skip


def _store_appending(session: Session, staged: Staged) -> None:
    """Spark: append the staging table to its family's rows (:mod:`spark_rows`); its
    bounds table stays the version's own."""
    first = not spark_rows.started(session, staged.family)
    if first:
        present = _stage_spark(session, staged, renumbered=False)
    else:
        present = spark_rows.columns_of(session, session.quote_ident("_sqlanon_staged"))
    what = staged.what[0] if staged.group == "group_id" else None
    spark_rows.store(
        session, staged.family, staged.version, staged.table, staged.columns, present,
        staged.group, what, first,
    )  # fmt: skip
    session.execute("DROP TABLE _sqlanon_staged")
    if not first:
        for table in ("_sqlanon_new_groups", "_sqlanon_open_groups", "_sqlanon_pairs"):
            session.execute(f"DROP TABLE {table}")
        session.execute("DROP TABLE _sqlanon_group_ids")
        continued_rows.drop(session)


def store(session: Session, staged: Staged) -> None:
    """Move the staging table into the family's current rows (the rows of groups it does
    not keep into the history) and the staging bounds table into the family's bounds
    table; leave views of version N in their places, showing the columns it had."""
    if session.dialect in APPEND_ONLY:
        _store_appending(session, staged)
        return
    q = session.quote_ident
    rows = qualified(session, rows_name(staged.family))
    history = qualified(session, history_name(staged.family))
    present = columns_of(session, staged.schema, staged.name)
    number = sqltext.number(staged.version)
    names = {"rows": rows, "history": history, "staging": staged.table, "version": number}
    alone = session.dialect in NEWEST_ALONE
    if alone and staged.previous is not None:
        _with_history(session, staged.previous, staged.version - 1, rows, history)
    if staged.version == 1:
        session.execute(
            render_sql(session, "rows_current", **_pick(names, "rows", "staging", "version"))
        )
        ghost = GHOST_COLUMN[staged.group]
        if ghost not in present:
            session.execute(render_sql(session, OPTIONAL_COLUMNS[ghost], table=rows))
        session.execute(render_sql(session, "rows_history", rows=rows, history=history))
    else:
        columns = ", ".join(q(c) for c in present)
        if staged.group == "group_id":
            (what,) = staged.what
            continued_rows.write(
                session, rows, history, staged.table, [q(c) for c in present],
                q(staged.group), q(what), staged.version,
            )  # fmt: skip
        for statement in sqltext.statements(
            render_sql(session, "rows_move", columns=columns, group=q(staged.group), **names)
        ):
            session.execute(statement)
    session.execute(f"DROP TABLE {staged.table}")
    shown = ", ".join(q(c) for c in staged.columns)
    session.execute(
        render_sql(
            session, "rows_view_newest" if alone else "rows_view", release=staged.table,
            columns=shown, **_pick(names, "rows", "history", "version"),
        )
    )  # fmt: skip
    analyzed = [rows, history]
    if staged.bounds is not None:
        bounds = qualified(session, bounds_name(staged.family))
        columns_b = columns_of(session, private_schema(session), staged.name + "_bounds")
        _store_spans(session, staged.version, staged.bounds, bounds, columns_b, q("group_id"))
        analyzed.append(bounds)
    if session.dialect == "postgres":
        session.execute(render_sql(session, "analyze_release", relations=", ".join(analyzed)))
    if staged.version > 1:
        for table in ("_sqlanon_new_groups", "_sqlanon_open_groups", "_sqlanon_pairs"):
            session.execute(f"DROP TABLE {table}")
        session.execute("DROP TABLE _sqlanon_group_ids")
        continued_rows.drop(session)


def _pick(names: dict[str, str], *keys: str) -> dict[str, str]:
    return {k: names[k] for k in keys}


def _with_history(
    session: Session, view: tuple[str, str], version: int, rows: str, history: str
) -> None:
    """The view of version ``version`` (``(schema, name)``), until now its family's
    newest and reading the current rows alone, made again to read its history too (the
    release that calls this moves some of its rows there, in the same transaction)."""
    q = session.quote_ident
    schema, name = view
    found = session.query(sqltext.load(session.dialect, "view_columns"), [schema, name])
    columns = ", ".join(q(c) for (c,) in found)
    session.execute(
        render_sql(
            session, "rows_view", release=f"{q(schema)}.{q(name)}", rows=rows,
            history=history, columns=columns, version=sqltext.number(version),
        )
    )  # fmt: skip


def _store_spans(
    session: Session, version: int, staging: str, table: str, columns: Sequence[str], group: str
) -> None:
    """Version ``version`` of the bounds table ``staging`` (``columns``) into the family's
    bounds table ``table`` (rows with the versions they are valid at), and the view of
    it in its place."""
    q = session.quote_ident
    number = sqltext.number(version)
    listed = ", ".join(q(c) for c in columns)
    if version == 1:
        session.execute(
            render_sql(session, "spans_first", rows=table, staging=staging, version=number)
        )
    else:
        for statement in sqltext.statements(
            render_sql(
                session, "spans_store", rows=table, staging=staging, group=group,
                columns=listed, version=number,
            )
        ):  # fmt: skip
            session.execute(statement)
    session.execute(f"DROP TABLE {staging}")
    session.execute(
        render_sql(
            session, "spans_view", release=staging, rows=table, columns=listed, version=number
        )
    )


def share_all(session: Session) -> None:
    """Migration 012's data step: every family whose versions are tables moves them into
    its rows (the newest version's current, the others' history) and (k,e) bounds
    tables, versions and bounds tables becoming views that read as the tables did; the
    family's view is made again over its newest version."""
    if not shared(session):
        return
    q = session.quote_ident
    families: dict[str, list[catalog.Release]] = {}
    for release in catalog.releases(session):
        families.setdefault(release.family, []).append(release)
    for family, versions in families.items():
        schema = versions[-1].schema or current_schema(session)
        present = [r for r in versions if _base_table(session, schema, r.table_name)]
        if not present:
            continue
        owner = _owner(session, f"{q(schema)}.{q(present[-1].table_name)}")
        view = f"{q(schema)}.{q(family)}"
        session.execute(f"DROP VIEW IF EXISTS {view}")
        made = _migrate_rows(session, family, schema, [(r.version, r.table_name) for r in present])
        views = [f"{q(schema)}.{q(r.table_name)}" for r in present]
        if present[-1].model == "ke":
            where = private_schema(session)
            tables = [(r.version, where, r.table_name + "_bounds") for r in present]
            made.append(_migrate_spans(session, tables, bounds_name(family)))
            views += [f"{q(where)}.{q(t)}" for _, _, t in tables]
        session.execute(
            render_sql(session, "point_view", family=view, release=views[len(present) - 1])
        )
        if owner is not None:
            for table in made:
                _give(session, "rows_owner", table, owner)
            for made_view in [*views, view]:
                _give(session, "rows_view_owner", made_view, owner)
        grant_readers(session, [*views, view])


def _give(session: Session, statement: str, relation: str, owner: str) -> None:
    """PostgreSQL: ``relation`` to role ``owner``."""
    session.execute(
        render_sql(session, statement, table=relation, owner=session.quote_ident(owner))
    )


def _base_table(session: Session, schema: str, name: str) -> bool:
    return bool(session.query(sqltext.load(session.dialect, "base_table_exists"), [schema, name]))


def _owner(session: Session, table: str) -> str | None:
    """PostgreSQL: the role owning ``table``; None elsewhere."""
    if session.dialect != "postgres":
        return None
    found = session.query(sqltext.load(session.dialect, "table_owner"), [table])
    return str(found[0][0]) if found and found[0][0] is not None else None


def _migrate_rows(
    session: Session, family: str, schema: str, versions: list[tuple[int, str]]
) -> list[str]:
    """The version tables ``(version, name)`` of one family, oldest first: the newest's
    rows become the current rows, the others' the history (each shown at its version);
    each table becomes a view. Returns the two tables as SQL."""
    q = session.quote_ident
    rows = qualified(session, rows_name(family))
    history = qualified(session, history_name(family))
    newest, name = versions[-1]
    staging = f"{q(schema)}.{q(name)}"
    _start_rows(session, rows, history, staging, newest, columns_of(session, schema, name))
    for version, table in versions:
        staging = f"{q(schema)}.{q(table)}"
        columns = ", ".join(q(c) for c in columns_of(session, schema, table))
        number = sqltext.number(version)
        if version != newest:
            session.execute(
                render_sql(
                    session, "rows_migrate", history=history, staging=staging,
                    columns=columns, version=number,
                )
            )  # fmt: skip
        session.execute(f"DROP TABLE {staging}")
        alone = version == newest and session.dialect in NEWEST_ALONE
        session.execute(
            render_sql(
                session, "rows_view_newest" if alone else "rows_view", release=staging,
                rows=rows, history=history, columns=columns, version=number,
            )
        )  # fmt: skip
    return [rows, history]


def _start_rows(
    session: Session, rows: str, history: str, staging: str, version: int, present: Sequence[str]
) -> None:
    """A family's current rows from ``staging`` (columns ``present``), shown from
    ``version`` on, with its ghost column; and its empty history."""
    number = sqltext.number(version)
    session.execute(render_sql(session, "rows_current", rows=rows, staging=staging, version=number))
    if not any(c in present for c in OPTIONAL_COLUMNS):
        column = GHOST_COLUMN["class_id" if "class_id" in present else "group_id"]
        session.execute(render_sql(session, OPTIONAL_COLUMNS[column], table=rows))
    session.execute(render_sql(session, "rows_history", rows=rows, history=history))


def _migrate_spans(session: Session, tables: list[tuple[int, str, str]], name: str) -> str:
    """The bounds tables ``(version, schema, name)`` of one family, oldest first, into
    one bounds table ``name`` (each valid at its version, the newest current); each
    table becomes a view. Returns the bounds table as SQL."""
    q = session.quote_ident
    bounds = qualified(session, name)
    newest = tables[-1][0]
    for i, (version, schema, table) in enumerate(tables):
        staging = f"{q(schema)}.{q(table)}"
        columns = ", ".join(q(c) for c in columns_of(session, schema, table))
        number = sqltext.number(version)
        statement = "spans_first" if i == 0 else "spans_migrate"
        session.execute(
            render_sql(
                session, statement, rows=bounds, staging=staging, columns=columns, version=number
            )
            if i
            else render_sql(session, statement, rows=bounds, staging=staging, version=number)
        )
        session.execute(f"DROP TABLE {staging}")
        session.execute(
            render_sql(
                session, "spans_view", release=staging, rows=bounds, columns=columns,
                version=number,
            )
        )  # fmt: skip
    session.execute(
        render_sql(session, "spans_migrated", rows=bounds, version=sqltext.number(newest))
    )
    return bounds
