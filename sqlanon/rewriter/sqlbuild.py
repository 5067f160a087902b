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


def cte(name: str) -> exp.Table:
    return exp.table_(CTE_PREFIX + name)


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
        final = final.with_(CTE_PREFIX + name, as_=body, copy=False)
    return final
