"""Analyst SQL in, interval SQL out.

    >>> sql = rewrite(
    ...     "SELECT sex, SUM(capital_loss) AS loss FROM adult_ke WHERE age > 30 GROUP BY sex",
    ...     catalog,
    ...     "postgres",
    ... )  # doctest: +SKIP

The output has one row per group with ``<name>_low``, ``<name>_high`` and ``<name>_est``
for each aggregate (``<name>`` is the alias, else e.g. ``sum_capital_loss`` or
``count_star``), plus the bare ``<name>`` for a COUNT that is exact. The true answer over
the private source always lies in [low, high]. The output reads only the release table
and its bounds table; :func:`rewrite` checks that on the generated tree before returning.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewrite import ke, lhd
from sqlanon.rewrite.analyze import analyze
from sqlanon.rewrite.catalog import (
    BOUNDS_SCHEMA,
    Catalog,
    LabelDomain,
    ReleaseInfo,
    catalog_from_rows,
)

__all__ = ["Catalog", "LabelDomain", "ReleaseInfo", "catalog_from_rows", "rewrite"]


def rewrite(
    sql: str,
    catalog: Catalog,
    dialect: str = "duckdb",
    checkpoint: Callable[[], None] | None = None,
) -> str:
    """Rewrite one aggregate query over a release into interval SQL for ``dialect``.

    ``sql`` is parsed in ``dialect`` (any sqlglot dialect) and the answer generated in it.
    Raises :class:`~sqlanon.errors.UnsupportedQueryError` naming the part that cannot be
    answered soundly (joins, subqueries, HAVING, tables other than releases...).
    ``checkpoint``, if given, is called between the steps (PostgreSQL: where a pending
    cancel or statement_timeout stops the rewrite).
    """
    step = checkpoint or _no_checkpoint
    query = analyze(sql, catalog, dialect)
    step()
    tree = lhd.build(query) if query.release.model == "lhd" else ke.build(query)
    step()
    _check_reads(tree, query.release)
    step()
    return tree.sql(dialect=dialect, copy=False)  # the tree is not used again


def _no_checkpoint() -> None:
    pass


def _check_reads(tree: exp.Expr, release: ReleaseInfo) -> None:
    """Refuse to return SQL reading anything but the release and its bounds table."""
    nodes = list(tree.walk())
    ctes = {node.alias for node in nodes if isinstance(node, exp.CTE)}
    allowed = {("", release.table)}
    if release.bounds_table is not None:
        allowed.add((BOUNDS_SCHEMA, release.bounds_table))
    if release.table in ctes:
        raise UnsupportedQueryError(
            f"release table name {release.table!r} clashes with the rewriter's CTEs"
        )
    for node in nodes:
        if isinstance(node, exp.Anonymous | exp.ReadCSV | exp.Command):
            raise AssertionError(f"rewritten SQL calls {node.sql()}")
        if not isinstance(node, exp.Table):
            continue
        if node.args.get("catalog"):
            raise AssertionError(f"rewritten SQL reads {node.sql()}")
        if (node.db, node.name) in allowed or (not node.db and node.name in ctes):
            continue
        raise AssertionError(f"rewritten SQL reads {node.sql()}, which is not the release")
