"""A (k,e) group that continues: the rows it shares with the group it continues stay, and
only what changed is written (issue 27).

:mod:`sqlanon.state.release_rows` keeps a group whose content is unchanged whole. Most
groups of a later version change a little: a few records enter, leave or change their
quasi-identifiers. Such a group **continues** the current group most of its records come
from (and to which most of that group's records go: each other's largest share, one to
one, ``rows_continued.sql``), and keeps that group's id. Its rows are then written as the
difference between the two, per group (``rows_continue.sql``):

1. a current row stays while the version has as many rows with its quasi-identifiers
   (which rows of one tuple stay is drawn at random; they differ only in value);
2. a value the version shows fewer times must leave: first from the rows that did not
   stay (their values are freed), the rest from staying rows holding it, at random
   (*forced*: the row stays in the group but gives up its value);
3. the rows left without a value (the version's new tuples and the forced rows) take,
   in a random pairing, the freed values not leaving and the values the version shows
   more often.

The version's rows of the group are then exactly its quasi-identifier multiset and its
value multiset, and a change of a few records writes a few rows: at most the
difference between the two quasi-identifier multisets plus the difference between the
two value multisets.

**Why this is as safe as a fresh shuffle.** Nothing above reads which record holds which
value: its inputs are the rows the family showed (which the attacker holds), the group's
new multisets (which the version shows) and random draws. So the rows a version shows
are independent of the true pairing given what every version publishes anyway (the
multisets of each group), as a fresh uniform shuffle is; ``tests/test_continued_rows.py``
checks that the written rows do not depend on how the release paired the group. What a
reader learns from the difference between two versions (which rows were closed, which
appended, which row's value changed) is a function of the two versions, which the
attacker holds. What must never happen, and does not: giving an entering record its own
value (the difference would then show it).

The row path of (k,e) and lHD continue no group: a group they do not keep whole is
written whole, as before.
"""

from __future__ import annotations

from sqlanon import sqltext
from sqlanon.session import Session
from sqlanon.state.source import render_sql

#: The name of a row's place in its table, by engine (Spark: the row number its rows
#: table stores, :mod:`sqlanon.state.spark_rows`).
ROW_ID = {"duckdb": "rowid", "postgres": "ctid", "spark": "sqlanon_row"}

#: The temporary tables of a continued write, dropped when the version is stored.
TEMP = (
    "_sqlanon_overlap",
    "_sqlanon_continued",
    "_sqlanon_tuples",
    "_sqlanon_diff",
    "_sqlanon_leaving",
    "_sqlanon_values",
    "_sqlanon_forced",
    "_sqlanon_unassigned",
)


def choose(session: Session, overlap: bool) -> None:
    """``_sqlanon_continued`` (new plan id, current id): the groups that continue one,
    from ``_sqlanon_overlap`` when the path counted it (``overlap``), else none."""
    name = "rows_continued" if overlap else "rows_continued_none"
    session.execute(sqltext.load(session.dialect, name))


def write(
    session: Session,
    rows: str,
    history: str,
    staging: str,
    columns: list[str],
    group: str,
    what: str,
    version: int,
    table: str | None = None,
    row_base: int = 0,
) -> None:
    """The continued groups' rows of version ``version``: the differences to ``rows``
    (current; unmatched and forced rows to ``history``) from ``staging`` (the release
    table, in published ids). ``columns`` are the staging table's, ``group`` and
    ``what`` (the sensitive column) among them, all quoted. On Spark ``rows`` is a view
    of the current rows, the rows are appended to ``table``, numbered from
    ``row_base``, and ``history`` holds the closed rows' numbers."""
    if not session.query("SELECT 1 FROM _sqlanon_group_ids WHERE continued LIMIT 1"):
        return
    q = session.quote_ident
    who = [c for c in columns if c not in (group, what)]
    fields = {
        "rows": rows,
        "history": history,
        "staging": staging,
        "group": group,
        "what": what,
        "who": ", ".join(who),
        "who_t": ", ".join(f"{q('t')}.{c}" for c in who),
        "who_s": ", ".join(f"{q('s')}.{c}" for c in who),
        "who_u": ", ".join(f"{q('u')}.{c}" for c in who),
        "columns": ", ".join(columns),
        "row_id": q(ROW_ID[session.dialect]),
        "tuple_match": _tuple_match(session, who),
        "version": sqltext.number(version),
        "table": table or rows,
        "row_base": sqltext.number(row_base),
    }
    for statement in sqltext.statements(render_sql(session, "rows_continue", **fields)):
        session.execute(statement)
    if session.query(sqltext.load(session.dialect, "rows_continue_check"))[0][0]:
        # a bug, not the caller's input: the verb reports it as an InternalError
        raise RuntimeError("a continued group's rows and values are out of step")
    for statement in sqltext.statements(render_sql(session, "rows_continue_write", **fields)):
        session.execute(statement)


def _tuple_match(session: Session, who: list[str]) -> sqltext.Match:
    """Row ``t`` shows tuple ``x`` (NULLs alike). PostgreSQL hashes no ``IS NOT DISTINCT
    FROM``: an equal fingerprint of the two tuples' text first lets it join by hash."""
    q = session.quote_ident
    same = sqltext.match(q("x"), q("t"), who, null_safe=True)
    if session.dialect != "postgres":
        return same
    hashes = [
        "pg_catalog.hashtextextended(CAST(ROW("
        + ", ".join(f"{q(side)}.{c}" for c in who)
        + ") AS text), 0)"
        for side in ("x", "t")
    ]
    return sqltext.Match(f"{hashes[0]} = {hashes[1]} AND {same}")


def drop(session: Session) -> None:
    """The temporary tables of :func:`choose` and :func:`write` that exist."""
    for table in TEMP:
        session.execute(f"DROP TABLE IF EXISTS {table}")
