"""Interval SQL over a (k,e) release.

A (k,e) release publishes the quasi-identifiers exactly and permutes the sensitive column
S uniformly at random within each group, so each group's multiset of S is public. For
one output group G (the analyst's GROUP BY key) and one release group g, a *cell* holds
the m records of g that satisfy the QI part of WHERE and carry key G. Every m-subset of
g's n values can be the one those records hold, which gives (MODELS.md, "Aggregate
answers"):

- COUNT(*) = m exactly; SUM in [sum of m smallest, sum of m largest] (bounds table
  lookup at rank m); MIN of the cell in [rank 1, rank n-m+1]; MAX in [rank m, rank n].
  Cells of one output group hold disjoint records of each group's permutation, but each
  output row is answered on its own, so per-row intervals are the sums/mins over cells.
- With a predicate on S (c of g's values satisfy it) the cell holds j matching values,
  lo = max(0, m+c-n) <= j <= hi = min(m, c), and any j-subset of the c satisfying values
  is possible. SUM low = sum of the lo smallest + the negative values among ranks
  lo+1..hi (prefix sums of sorted values are minimal where the values turn positive);
  high symmetric. AVG low = min over t of (forced lo-smallest of every cell + t smallest
  optional values) / (L + t): the running minimum over the merged pool (exchange
  argument: for a fixed total count the cheapest choice is forced + smallest optional).

Estimates are expectations under the permutation (m*c/n matches, m*mean sums); for
MIN/MAX the value at the expected rank of the minimum of j draws out of c,
floor((c+1)/(E[j]+1)), which lies inside the interval.

A SUM whose count may be 0 is bounded as COALESCE(SUM, 0): the SQL answer is NULL exactly
when no record matches. SUM/AVG/MIN/MAX are NULL where no record can match.

The sensitive column of a (k,e) release is never NULL (the release refuses NULL values),
so COUNT(S) is COUNT(*).

Ghosts (deleted records kept in their group, MODELS.md "Changing tables") are rows with
``ghost`` true and NULL quasi columns; each receives a value of its group's multiset like
every other row. The m records of a cell are real rows (``NOT ghost``), n is the group's
size with its ghost slots (the bounds table is built from the whole multiset), and the
real rows are m of n slots of a uniformly shuffled multiset: every formula above holds
as it is, tight, with the truth taken over real rows only.

Here: :func:`build`, WHERE split into its QI and S parts, and the cells without a
condition on S (bounds-table lookups). The cells and their first CTE are in
:mod:`sqlanon.rewriter.ke_cells`, the cells under a condition on S in
:mod:`sqlanon.rewriter.ke_sensitive_where`.
"""

from __future__ import annotations

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.models.ke_bounds import BLOCK
from sqlanon.rewriter.analyze import AggregateItem, GroupItem, Query
from sqlanon.rewriter.ke_cells import CellPlan, plan_cells, select_cells
from sqlanon.rewriter.ke_quantiles import (
    QUANTILES,
    quantile_columns,
    quantile_ctes,
    quantile_items,
)
from sqlanon.rewriter.ke_sensitive_where import predicate_cells, predicate_columns
from sqlanon.rewriter.sqlbuild import alias as _alias
from sqlanon.rewriter.sqlbuild import conjuncts, finish
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import fragment as _f
from sqlanon.rewriter.sqlbuild import select as _select
from sqlanon.rewriter.sqlbuild import show as _show


def split_predicate(
    predicate: exp.Expr | None, sensitive: str
) -> tuple[exp.Expr | None, exp.Expr | None]:
    """(QI part, S part) of a WHERE tree, or UnsupportedQueryError for a mixed condition.

    Top-level AND terms are sorted by the columns they read; a term that reads both the
    sensitive column and a quasi-identifier (``age > 30 OR loss > 5``) would need a joint
    optimisation per group and is refused.
    """
    if predicate is None:
        return None, None
    qi: list[exp.Expr] = []
    s: list[exp.Expr] = []
    for term in conjuncts(predicate):
        names = {c.name for c in term.find_all(exp.Column)}
        if sensitive in names and len(names) > 1:
            raise UnsupportedQueryError(
                f"a condition mixing the sensitive column with quasi-identifiers is not "
                f"supported: {_show(term)}; combine conditions on {sensitive!r} with the "
                "others by AND only"
            )
        (s if sensitive in names else qi).append(term)
    return _all(qi), _all(s)


def _all(terms: list[exp.Expr]) -> exp.Expr | None:
    """The AND of ``terms``; a single term as it is (and_ would copy it)."""
    if len(terms) < 2:
        return terms[0] if terms else None
    return exp.and_(*terms)


def build(query: Query) -> exp.Select:
    """The interval query for a checked (k,e) query."""
    plan = plan_cells(query)
    qi_pred, s_pred = split_predicate(query.where, plan.sensitive)
    if s_pred is None:
        ctes: list[tuple[str, exp.Query]] = [("sel", select_cells(plan, qi_pred))]
        ctes += _exact_cells(plan)
        columns = _exact_columns(plan)
        if quantile_items(plan):
            ctes += quantile_ctes(plan, ctes[-1][0])
            columns |= quantile_columns(plan)
    elif quantile_items(plan):
        raise UnsupportedQueryError("quantiles under a condition on S take the general path")
    else:
        ctes = predicate_cells(plan, select_cells(plan, qi_pred), s_pred)
        columns = predicate_columns(plan)
    source = ctes[-1][0]
    final = _select(*_output(plan, columns)).from_(
        _alias(_cte(source), "c", table=True), copy=False
    )
    if query.group_by:
        final = final.group_by(*plan.g("c"), copy=False)
        if s_pred is not None:
            final = final.having(_f("SUM(c.hi) > 0"), copy=False)
    return finish(final, query, ctes)


# --- no predicate on S: bounds-table lookups ---------------------------------------------


def _lookup(alias: str, rank: str) -> exp.Expr:
    """Join condition finding the bounds rows of ``rank`` in cell ``r``'s group: one per
    direction (ascending and descending)."""
    return _f(
        f"{alias}.group_id = r.gid "
        f'AND {alias}."block" = CAST(FLOOR(({rank} - 1) / {float(BLOCK)}) AS INTEGER) '
        f"AND {rank} BETWEEN {alias}.lo_rank AND {alias}.hi_rank"
    )


def _exact_cells(plan: CellPlan) -> list[tuple[str, exp.Query]]:
    """One row per cell with the bounds table's rows (layout: sqlanon/models/ke_bounds.py)
    looked up at rank m in both directions: the ascending row gives the sum of the m
    smallest values and the m-th smallest, the descending row the sum of the m largest
    and the m-th largest.

    Cells of one release group with the same m read the same bounds: the lookups run
    once per (group, m) (``look``) and reach the cells by an equi-join, so a GROUP BY
    of thousands of keys (a cell of one or two records per key and group) costs a
    hash join, not a range lookup per cell."""
    if not plan.needs_values:
        return []
    minmax = bool(plan.funcs & {"min", "max"})
    pairs = (
        _select(_f("r.gid"), _f("r.m"))
        .distinct()
        .from_(_alias(_cte("sel"), "r", table=True), copy=False)
    )
    looked: list[exp.Expr] = [
        _f("r.gid"),
        _f("r.m"),
        _f('b."descending"'),
        *[_f(f"b.{x}") for x in ("n", "total", "vmin", "vmax")],
        _f('b.prior_sum + (r.m - b.lo_rank + 1) * b."value" AS psum'),
        _f('b."value" AS v'),
    ]
    # LEFT joins although every rank exists: with inner joins DuckDB once inferred
    # equalities between bounds copies and joined them with each other first.
    look = (
        _select(*looked)
        .from_(_alias(_cte("pairs"), "r", table=True), copy=False)
        .join(plan.bounds("b"), on=_lookup("b", "r.m"), join_type="LEFT", copy=False)
    )
    if minmax:
        # The estimates of MIN and MAX: the value at the expected rank of the minimum of
        # m draws out of n (of the maximum, from the top), (n+1)/(m+1), exact in floating
        # point (integers on both sides), in the row's own direction.
        rank = "CAST(FLOOR(CAST(b.n + 1 AS DOUBLE) / (r.m + 1)) AS BIGINT)"
        same_side = exp.and_(_lookup("e", rank), _f('e."descending" = b."descending"'))
        look = look.select(_f('e."value" AS ve'), copy=False).join(
            plan.bounds("e"), on=same_side, join_type="LEFT", copy=False
        )

    def on(side: str, sql: str) -> str:
        test = 'l."descending"' if side == "down" else 'NOT l."descending"'
        return f"MAX(CASE WHEN {test} THEN {sql} END)"

    # one row per (group, m): the ascending row's measures beside the descending row's
    measures = [
        *[_f(f"MAX(l.{x}) AS {x}") for x in ("n", "total", "vmin", "vmax")],
        _alias(_f(on("up", "l.psum")), "low_sum"),
        _alias(_f(on("down", "l.psum")), "high_sum"),
        _alias(_f(on("up", "l.v")), "v_m"),  # the m-th smallest: MAX's low
        _alias(_f(on("down", "l.v")), "v_top"),  # the m-th largest: MIN's high
    ]
    if minmax:
        measures += [
            _alias(_f(on("up", "l.ve")), "v_emin"),
            _alias(_f(on("down", "l.ve")), "v_emax"),
        ]
    both = (
        _select(_f("l.gid"), _f("l.m"), *measures)
        .from_(_alias(_cte("look"), "l", table=True), copy=False)
        .group_by(_f("l.gid"), _f("l.m"), copy=False)
    )
    names = [str(m.alias_or_name) for m in measures]
    cell = (
        _select(
            *plan.g("s"),
            _f("s.gid"),
            *[_f(f"s.{m}") for m in plan.counts.values()],
            *[_f(f"l.{x}") for x in names],
        )
        .from_(_alias(_cte("sel"), "s", table=True), copy=False)
        .join(
            _alias(_cte("both"), "l", table=True),
            on=_f("l.gid = s.gid AND l.m = s.m"),
            copy=False,
        )
    )
    return [("pairs", pairs), ("look", look), ("both", both), ("cell", cell)]


def _exact_columns(plan: CellPlan) -> dict[str, dict[str, exp.Expr]]:
    """Per aggregate: low/high/est (and the bare value for COUNT) over cells ``c``."""
    out: dict[str, dict[str, exp.Expr]] = {}
    total = "CAST(c.m AS DOUBLE) * CAST(c.total AS DOUBLE) / c.n"
    for agg in plan.query.aggregates:
        if agg.func in QUANTILES:
            continue  # ke_quantiles.quantile_columns
        if agg.func == "count":
            m = plan.counts.get(agg.column, "m")
            value = _f(f"SUM(c.{m})") if plan.query.group_by else _f(f"COALESCE(SUM(c.{m}), 0)")
            out[agg.name] = {"": value, "low": value, "high": value, "est": value}
        elif agg.func == "sum":
            out[agg.name] = {
                "low": _f("SUM(c.low_sum)"),
                "high": _f("SUM(c.high_sum)"),
                "est": _f(f"SUM({total})"),
            }
        elif agg.func == "avg":
            out[agg.name] = {
                "low": _f("CAST(SUM(c.low_sum) AS DOUBLE) / NULLIF(SUM(c.m), 0)"),
                "high": _f("CAST(SUM(c.high_sum) AS DOUBLE) / NULLIF(SUM(c.m), 0)"),
                "est": _f(f"SUM({total}) / NULLIF(SUM(c.m), 0)"),
            }
        elif agg.func == "min":
            out[agg.name] = {
                "low": _f("MIN(c.vmin)"),
                "high": _f("MIN(c.v_top)"),
                "est": _f("MIN(c.v_emin)"),
            }
        else:
            out[agg.name] = {
                "low": _f("MAX(c.v_m)"),
                "high": _f("MAX(c.vmax)"),
                "est": _f("MAX(c.v_emax)"),
            }
    return out


def _output(plan: CellPlan, columns: dict[str, dict[str, exp.Expr]]) -> list[exp.Expr]:
    result: list[exp.Expr] = []
    for item in plan.query.items:
        if isinstance(item, GroupItem):
            g = plan.groups[plan.query.group_by.index(item.column)]
            result.append(_alias(exp.column(g, table="c"), item.name, quoted=True))
            continue
        assert isinstance(item, AggregateItem)
        for suffix, value in columns[item.name].items():
            name = f"{item.name}_{suffix}" if suffix else item.name
            result.append(exp.alias_(value, name, quoted=True))
    return result
