"""A JOIN of a named public table, each release row matched at most once, checked at run time.

The interval model needs each release row to stand for at most one row of the Shape. A
``JOIN (VALUES ...)`` is checked when rewriting (its keys are literals); a named table's
rows are not known then, so the answer carries the check:

- the table is read through ``(SELECT l.*, COUNT(...) OVER (PARTITION BY <keys>) AS
  sqlanon_copies FROM <table> AS l) AS l``: per lookup row, how many rows of the table
  hold its (non-NULL) join key; a key holding a NULL counts 0 (``=`` never matches it);
- the ON clause, a conjunction of ``l.c = <expression not reading l>``, gets one more
  conjunct, :func:`guard`: TRUE when the row's key is unique, else an error naming the
  table (a failing CAST on DuckDB and PostgreSQL, ``raise_error`` on Spark).

Why this is sound. Two lookup rows matching one release row ``r`` satisfy the same
equalities ``l.c = e(r)``, so they hold the same key and both have ``sqlanon_copies >=
2``. The guard is a conjunct of the join condition, never a filter of the analyst's, so
the join's output (the rows every atom reads) holds only pairs for which it was TRUE:
an engine may evaluate it on the lookup rows before the join (then it may also raise for
a repeated key no release row meets) or on each matched pair, but a pair it did not
evaluate is a pair it did not output. It reads a column, so no optimizer can fold it at
plan time, and it cannot go below the window (it reads the window's output); a filter
pushed below the window from the join (a key's range) keeps or drops whole partitions,
so the counts stay those of the whole table. A LEFT JOIN's unmatched row evaluates no
ON conjunct and is one row with NULL lookup columns.

What the check judges is the lookup columns' own equality: a join comparing them through
an implicit cast to a coarser type (a NUMERIC column against a DOUBLE expression) could
match two rows the window counts apart; join on columns of one type (or cast the release
side to the lookup column's type).
"""

from __future__ import annotations

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError

#: The count column the guarded relation adds to the lookup table's columns.
COPIES = "sqlanon_copies"

#: Dialects whose engines raise on the guard: DuckDB and PostgreSQL through a failing
#: CAST, Spark through raise_error (its CAST answers NULL without ANSI mode).
_CAST_DIALECTS = frozenset({"duckdb", "postgres"})
_SPARK_DIALECTS = frozenset({"spark", "spark2", "databricks"})


class RaiseError(exp.Expression, exp.Func):
    """Spark's ``raise_error(message)`` (sqlglot has no node for it)."""

    arg_types = {"this": True}
    _sql_names = ["RAISE_ERROR"]


def supported(dialect: str) -> bool:
    return dialect in _CAST_DIALECTS or dialect in _SPARK_DIALECTS


def key_columns(on: exp.Expr, alias: str) -> list[exp.Identifier]:
    """The lookup columns ``on`` equates to the release side (each once), or a refusal
    when ``on`` is anything but a conjunction of ``alias.c = <expression not reading
    alias>``."""
    terms = list(on.flatten()) if isinstance(on, exp.And) else [on]
    keys: dict[str, exp.Identifier] = {}
    for term in terms:
        term = term.unnest()
        side = _lookup_side(term, alias) if isinstance(term, exp.EQ) else None
        if side is None:
            raise UnsupportedQueryError(
                f"the join condition {term.sql()} is not supported; a join of table "
                f"{alias!r} is answered when its ON is a conjunction of {alias}.column = "
                "<expression of the release>"
            )
        keys.setdefault(side.name.lower(), side.this.copy())
    return list(keys.values())


def _lookup_side(term: exp.EQ, alias: str) -> exp.Column | None:
    for mine, other in ((term.this, term.expression), (term.expression, term.this)):
        if (
            isinstance(mine, exp.Column)
            and mine.table == alias
            and not any(c.table == alias for c in other.find_all(exp.Column))
        ):
            return mine
    return None


def counted(table: exp.Table, alias: str, keys: list[exp.Identifier]) -> exp.Subquery:
    """``(SELECT alias.*, <copies of the row's key> AS sqlanon_copies FROM table AS alias)``."""
    columns = [exp.column(k.copy(), table=alias) for k in keys]
    all_set = exp.and_(*[exp.Not(this=exp.Is(this=c, expression=exp.Null())) for c in columns])
    counted_rows = exp.Count(this=exp.Case(ifs=[exp.If(this=all_set, true=exp.Literal.number(1))]))
    copies = exp.Window(this=counted_rows, partition_by=[c.copy() for c in columns], over="OVER")
    source = table.copy()
    source.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    select = exp.select(
        exp.Column(this=exp.Star(), table=exp.to_identifier(alias)), exp.alias_(copies, COPIES)
    ).from_(source, copy=False)
    return exp.Subquery(this=select)


def guard(alias: str, table: exp.Table, keys: list[exp.Identifier], dialect: str) -> exp.Expr:
    """The ON conjunct that is TRUE for a lookup row whose key is unique, else raises
    (see the module docstring)."""
    names = ", ".join(k.name for k in keys)
    message = exp.Literal.string(
        f"sqlanon: lookup table {table.name} repeats the join key ({names}); a join must "
        "match each release row at most once"
    )
    repeated = exp.GT(this=exp.column(COPIES, table=alias), expression=exp.Literal.number(1))
    if dialect in _SPARK_DIALECTS:
        failing: exp.Expr = RaiseError(this=message)
    else:
        failing = message
    case: exp.Expr = exp.Case(ifs=[exp.If(this=repeated, true=failing)])
    if dialect not in _SPARK_DIALECTS:
        case = exp.Cast(this=case, to=exp.DataType.build("INT"))
    return exp.Is(this=case, expression=exp.Null())
