"""Pieces both interval builders (``ke_intervals.py``, ``lhd_intervals.py``) assemble
their output from."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import sqlglot
from sqlglot import exp

from sqlanon.rewriter.analyze import Query

#: Prefix of the rewriter's own CTE names (checked not to clash with release tables).
CTE_PREFIX = "sqlanon_"


@cache
def _parsed(fragment: str) -> exp.Expr:
    return sqlglot.parse_one(fragment)


def fragment(text: str) -> exp.Expr:
    """An expression over the rewriter's own internal names (never analyst text).

    Parsed once per distinct text and copied on every use: the builders reuse a few dozen
    fixed fragments, and parsing them anew dominated the cost of a rewrite."""
    return _parsed(text).copy()


def alias(node: exp.Expr, name: str, table: bool = False, quoted: bool | None = None) -> exp.Expr:
    """``node AS name``, ``node`` taken as it is (sqlglot's ``alias_`` copies it first:
    the builders pass fresh trees, and copying them was a third of a rewrite)."""
    return exp.alias_(node, name, table=table, quoted=quoted, copy=False)


def select(*nodes: exp.Expr) -> exp.Select:
    """``SELECT nodes``, the nodes taken as they are (fresh trees; see :func:`alias`)."""
    return exp.select(*nodes, copy=False)


def with_cte(final: exp.Select, name: str, body: exp.Expr) -> exp.Select:
    """``final`` with the CTE ``name AS (body)`` appended (a name given as a string would
    be parsed)."""
    return final.with_(exp.TableAlias(this=exp.to_identifier(name)), as_=body, copy=False)


def cte(name: str) -> exp.Table:
    return exp.table_(CTE_PREFIX + name)


def column(table: str, name: str) -> exp.Column:
    """A quoted reference to a release column (names come from the catalog)."""
    return exp.column(name, table=table, quoted=True)


def qualified(predicate: exp.Expr, table: str) -> exp.Expr:
    """A copy of ``predicate`` reading ``table``'s columns."""

    def qualify(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            return column(table, node.name)
        return node

    return predicate.transform(qualify)  # transform copies the tree once


def show(term: exp.Expr) -> str:
    """A condition as the analyst wrote it (canonical columns without quotes)."""
    return term.transform(lambda n: exp.column(n.name) if isinstance(n, exp.Column) else n).sql()


def finish(final: exp.Select, query: Query, ctes: Sequence[tuple[str, exp.Expr]]) -> exp.Select:
    """Apply the analyst's ORDER BY and LIMIT and attach the CTEs."""
    if query.order:
        final = final.order_by(
            *[
                exp.Ordered(
                    this=exp.column(o.name, quoted=True), desc=o.desc, nulls_first=o.nulls_first
                )
                for o in query.order
            ],
            copy=False,
        )
    if query.limit is not None:
        final = final.limit(query.limit, copy=False)
    for name, body in ctes:
        final = with_cte(final, CTE_PREFIX + name, body)
    return final


def conjuncts(predicate: exp.Expr) -> list[exp.Expr]:
    """The top-level AND terms, left to right (a loop: long chains would recurse)."""
    found, stack = [], [predicate]
    while stack:
        node = stack.pop().unnest()
        if isinstance(node, exp.And):
            stack += [node.right, node.left]
        else:
            found.append(node)
    return found
