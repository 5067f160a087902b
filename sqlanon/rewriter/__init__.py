"""Analyst SQL in, interval SQL out.

    >>> sql = rewrite(
    ...     "SELECT sex, SUM(capital_loss) AS loss FROM adult_ke WHERE age > 30 GROUP BY sex",
    ...     catalog,
    ...     "postgres",
    ... )  # doctest: +SKIP

The output has one row per group with ``<name>_low``, ``<name>_high`` and ``<name>_est``
for each aggregate or expression of aggregates (``<name>`` is the alias, else e.g.
``sum_capital_loss`` or ``count_star``, else ``col<position>``), plus the bare ``<name>``
for a COUNT that is exact, and ``having_surely`` under a HAVING (groups that may pass are
returned). The true answer over the private source always lies in [low, high] (an end
without a bound is -Infinity or Infinity; NULL low and high: the answer is NULL). The
output reads only the releases, their bounds tables and the public
tables the query joins or semi-joins; :func:`rewrite` checks that on the generated tree
before returning.

Queries in the narrow dialect (:mod:`~sqlanon.rewriter.analyze`) go to the narrow
builders exactly as before; everything else goes through the general front end
(:mod:`~sqlanon.rewriter.normalize`), the atoms builders (:mod:`~sqlanon.rewriter.atoms`)
and the post layer (:mod:`~sqlanon.rewriter.post`, :mod:`~sqlanon.rewriter.answer`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from sqlanon.errors import QueryLimitError, SqlanonError, UnsupportedQueryError
from sqlanon.rewriter import ke_intervals, lhd_intervals
from sqlanon.rewriter.analyze import analyze
from sqlanon.rewriter.answer import answer
from sqlanon.rewriter.limits import DEFAULT_LIMITS, QueryLimits, one_line
from sqlanon.rewriter.normalize import normalize
from sqlanon.rewriter.release_info import (
    Catalog,
    LabelDomain,
    ReleaseInfo,
    catalog_from_rows,
)

__all__ = [
    "Catalog",
    "LabelDomain",
    "QueryLimits",
    "ReleaseInfo",
    "catalog_from_rows",
    "rewrite",
]


def rewrite(
    sql: str,
    catalog: Catalog,
    dialect: str = "duckdb",
    limits: QueryLimits = DEFAULT_LIMITS,
    checkpoint: Callable[[], None] | None = None,
) -> str:
    """Rewrite one aggregate query over a release into interval SQL for ``dialect``.

    ``sql`` is parsed in ``dialect`` (any sqlglot dialect) and the answer generated in it.
    Raises :class:`~sqlanon.errors.UnsupportedQueryError` naming the part that cannot be
    answered soundly (window functions, joins of releases, correlated subqueries, tables
    other than releases and public ones...), its
    child :class:`~sqlanon.errors.QueryLimitError` before parsing a query beyond
    ``limits``; every other failure is mapped to one of them too, on one line.
    ``checkpoint``, if given, is called between the steps (PostgreSQL: where a pending
    cancel or statement_timeout stops the rewrite).
    """
    interrupted: list[BaseException] = []

    def step() -> None:
        if checkpoint is not None:
            try:
                checkpoint()
            except BaseException as exc:  # a cancel: it goes to the caller as it is
                interrupted.append(exc)
                raise

    try:
        tree = _narrow(sql, catalog, dialect, limits, step)
        step()
        if tree is None:
            plan = normalize(sql, catalog, dialect, limits, step)
            step()
            tree = answer(plan)
            step()
            releases = [b.shape.release for b in plan.branches]
            _check_reads(tree, releases, plan.public)
        step()
        return tree.sql(dialect=dialect, copy=False)  # the tree is not used again
    except SqlanonError:
        raise
    except RecursionError as exc:
        raise QueryLimitError(
            "the query is nested too deeply to rewrite; simplify it (or the data owner "
            "lowers max_query_depth so such queries are refused before parsing)"
        ) from exc
    except Exception as exc:  # sqlglot's errors and anything unforeseen: never a traceback
        if interrupted:
            raise
        raise UnsupportedQueryError(
            f"cannot rewrite the query ({type(exc).__name__}: {one_line(exc)})"
        ) from exc


def _narrow(
    sql: str, catalog: Catalog, dialect: str, limits: QueryLimits, step: Callable[[], None]
) -> exp.Select | None:
    """The narrow builders' answer, exactly as before the general rewriter, or None
    (then the general path answers the query or says why not); ``step`` between the
    parse and the build, where a pending cancel stops a long rewrite."""
    try:
        query = analyze(sql, catalog, dialect, limits, step)
        step()
        builder = lhd_intervals if query.release.model == "lhd" else ke_intervals
        tree: exp.Select = builder.build(query)
    except QueryLimitError:
        raise
    except UnsupportedQueryError:
        return None
    _check_reads(tree, query.release)
    return tree


def _check_reads(
    tree: exp.Expr,
    releases: ReleaseInfo | Sequence[ReleaseInfo],
    public: frozenset[tuple[str, str]] = frozenset(),
) -> None:
    """Refuse to return SQL reading anything but the releases, their bounds tables and
    the public tables the front end let the query join (``public``)."""
    nodes = list(tree.walk())
    ctes = {node.alias for node in nodes if isinstance(node, exp.CTE)}
    allowed = set(public)
    for release in [releases] if isinstance(releases, ReleaseInfo) else releases:
        allowed.add((release.schema or "", release.table))
        if release.bounds_table is not None:
            allowed.add((release.bounds_schema, release.bounds_table))
        if release.table in ctes:
            raise UnsupportedQueryError(
                f"release table name {release.table!r} clashes with the rewriter's CTEs"
            )
    for node in nodes:
        if isinstance(node, exp.Anonymous | exp.ReadCSV | exp.Command):
            raise _guard(f"calls {node.sql()}")
        if not isinstance(node, exp.Table):
            continue
        if node.args.get("catalog"):
            raise _guard(f"reads {node.sql()}")
        if (node.db, node.name) in allowed or (not node.db and node.name in ctes):
            continue
        raise _guard(f"reads {node.sql()}, which is not the release")


def _guard(what: str) -> UnsupportedQueryError:
    """The output guard tripped: a bug in the rewriter, never the analyst's doing."""
    return UnsupportedQueryError(
        f"refused: the rewritten SQL {one_line(Exception(what))} (a bug in sqlanon's "
        "rewriter; please report the query)"
    )
