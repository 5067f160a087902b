"""Quantiles of S over a (k,e) release without a condition on S, from the bounds table.

Without a condition on S, a cell (output group x release group) holds exactly m of its
group's n values, any m of them. Over one output group the selection is N = sum of m
values, and a quantile (quantile_cont / MEDIAN, quantile_disc) of it is nondecreasing in
every value. The *low pool* L (each cell's m smallest values of its group) is an
attainable selection (cells of one output group lie in distinct release groups, so they
choose independently) whose k-th smallest value is at most the k-th smallest of any
other selection: the quantile of L is the least the answer can be, and that of the
*high pool* H (each cell's m largest) the greatest. Both are exact.

The pools are read from the bounds table's runs (:mod:`sqlanon.models.ke_bounds`): in
each direction, the runs starting at a rank up to m, each counted up to rank m. Per
output group, a running sum of the run counts in value order locates the order
statistics the engine reads: quantile_cont interpolates between ranks floor(h) + 1 and
ceil(h) + 1 with h = q(N - 1), quantile_disc reads rank max(1, ceil(qN)). DuckDB computes
q*N in DECIMAL and PostgreSQL in DOUBLE, which differ when it is a whole number (0.7 *
10): the low side reads the lesser of the two ranks, the high side the greater.

The cost is one join of the cells to their groups' runs, a sort of those (not of the
release) and one aggregate, however many records the release holds.
"""

from __future__ import annotations

from decimal import Decimal

from sqlglot import exp

from sqlanon.models.ke_bounds import BLOCK
from sqlanon.rewriter.analyze import AggregateItem
from sqlanon.rewriter.ke_cells import CellPlan
from sqlanon.rewriter.sqlbuild import alias as _alias
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import fragment as _f
from sqlanon.rewriter.sqlbuild import select as _select

QUANTILES = ("quantile_cont", "quantile_disc")


def quantile_items(plan: CellPlan) -> list[tuple[int, AggregateItem]]:
    """The quantile aggregates of ``plan``, numbered as their columns ``q<j>_*``."""
    found = [a for a in plan.query.aggregates if a.func in QUANTILES]
    return list(enumerate(found))


def quantile_ctes(plan: CellPlan, cells: str) -> list[tuple[str, exp.Query]]:
    """``qpool``, ``qpos``, ``quant`` (per output group ``q<j>_low``/``q<j>_high``) and
    ``cellq``: the CTE ``cells`` with every cell carrying its output group's bounds."""
    groups = plan.groups
    first_block = f"CAST(FLOOR((x.lo_rank - 1) / {float(BLOCK)}) AS INTEGER)"
    pool = (
        _select(
            *plan.g("s"),
            _f('x."descending" AS side'),
            _f('x."value" AS v'),
            _f("LEAST(x.hi_rank, s.m) - x.lo_rank + 1 AS cnt"),
        )
        .from_(_alias(_cte("sel"), "s", table=True), copy=False)
        .join(
            plan.bounds("x"),
            on=_f(f'x.group_id = s.gid AND x."block" = {first_block} AND x.lo_rank <= s.m'),
            copy=False,
        )
    )
    part = ", ".join([*(f"p.{g}" for g in groups), "p.side"])
    running = f"OVER (PARTITION BY {part} ORDER BY p.v ROWS UNBOUNDED PRECEDING)"
    running_pos = _select(
        *plan.g("p"),
        _f("p.side"),
        _f("p.v"),
        _f("p.cnt"),
        _f(f"SUM(p.cnt) {running} AS upto"),
        _f(f"SUM(p.cnt) OVER (PARTITION BY {part}) AS total"),
    ).from_(_alias(_cte("qpool"), "p", table=True), copy=False)
    items = quantile_items(plan)
    ranks = [f"{sql} AS {name}" for j, item in items for name, sql in _ranks(item, j)]
    pos = _select(_f("p.*"), *[_f(r) for r in ranks]).from_(
        exp.Subquery(this=running_pos, alias=exp.TableAlias(this=exp.to_identifier("p"))),
        copy=False,
    )
    bounds: list[exp.Expr] = []
    for j, item in quantile_items(plan):
        low, high = _bounds(item, j)
        bounds += [_alias(_f(low), f"q{j}_low"), _alias(_f(high), f"q{j}_high")]
    quant = _select(*plan.g("p"), *bounds).from_(_alias(_cte("qpos"), "p", table=True), copy=False)
    if groups:
        quant = quant.group_by(*plan.g("p"), copy=False)
    same = [exp.NullSafeEQ(this=_f(f"q.{g}"), expression=_f(f"c.{g}")) for g in groups]
    on = exp.and_(*same) if same else exp.true()
    names = [f"q.q{j}_{side}" for j, _ in quantile_items(plan) for side in ("low", "high")]
    cellq = (
        _select(_f("c.*"), *[_f(n) for n in names])
        .from_(_alias(_cte(cells), "c", table=True), copy=False)
        .join(
            _alias(_cte("quant"), "q", table=True),
            on=on,
            join_type="LEFT",
            copy=False,
        )
    )
    return [("qpool", pool), ("qpos", pos), ("quant", quant), ("cellq", cellq)]


def quantile_columns(plan: CellPlan) -> dict[str, dict[str, exp.Expr]]:
    """Per quantile aggregate: low/high/est over the rows of ``cellq``."""
    out: dict[str, dict[str, exp.Expr]] = {}
    for j, item in quantile_items(plan):
        low, high = _f(f"MIN(c.q{j}_low)"), _f(f"MAX(c.q{j}_high)")
        est = exp.Div(
            this=exp.Paren(this=exp.Add(this=low.copy(), expression=high.copy())),
            expression=_f("2.0"),
        )
        out[item.name] = {"low": low, "high": high, "est": est}
    return out


def _at(rank: str, side: str) -> str:
    """The value of the pool ``side`` at ``rank`` (1-based, ascending)."""
    return f"MIN(CASE WHEN {side} AND p.upto - p.cnt < {rank} AND {rank} <= p.upto THEN p.v END)"


def _variants(item: AggregateItem) -> tuple[str, str]:
    """q as DECIMAL (DuckDB's arithmetic) and as DOUBLE (PostgreSQL's)."""
    q = float(item.fraction if item.fraction is not None else 0.5)
    return f"CAST({format(Decimal(repr(q)), 'f')} AS DECIMAL(38, 18))", f"CAST({q!r} AS DOUBLE)"


def _ranks(item: AggregateItem, j: int) -> list[tuple[str, str]]:
    """Per pool row, the ranks quantile ``j`` reads (they depend on the output group's
    pool size only): for quantile_disc the least and greatest of the two engines'
    ceil(qN); for quantile_cont each engine's h = q(N - 1) and its ranks floor(h) + 1
    and ceil(h) + 1. Named ``r<j>_*``; computed once per row here, so the bounds'
    SQL reads short column names."""
    dec, dbl = _variants(item)
    if item.func == "quantile_disc":
        at = [f"CEIL({x} * p.total)" for x in (dec, dbl)]
        return [
            (f"r{j}_lo", f"GREATEST(1, LEAST({at[0]}, {at[1]}))"),
            (f"r{j}_hi", f"GREATEST(1, {at[0]}, {at[1]})"),
        ]
    found = []
    for name, x in (("d", dec), ("f", dbl)):
        h = f"({x} * (p.total - 1))"
        found += [(f"r{j}_{name}h", h), (f"r{j}_{name}1", f"FLOOR({h}) + 1")]
        found.append((f"r{j}_{name}2", f"CEIL({h}) + 1"))
    return found


def _bounds(item: AggregateItem, j: int) -> tuple[str, str]:
    """SQL of the quantile over the low pool (NOT p.side) and over the high pool."""
    if item.func == "quantile_disc":
        return _at(f"p.r{j}_lo", "NOT p.side"), _at(f"p.r{j}_hi", "p.side")
    # quantile_cont as each engine computes it (h in DECIMAL, h in DOUBLE), the least
    # of the two on the low pool and the greatest on the high pool

    def value(name: str, side: str) -> str:
        x = f"CAST({_at(f'p.r{j}_{name}1', side)} AS DOUBLE)"
        y = f"CAST({_at(f'p.r{j}_{name}2', side)} AS DOUBLE)"
        h = f"p.r{j}_{name}h"
        frac = f"CAST(MAX({h}) - FLOOR(MAX({h})) AS DOUBLE)"  # one h per output group
        return f"{x} + ({y} - {x}) * {frac}"

    low = "LEAST(" + ", ".join(value(n, "NOT p.side") for n in ("d", "f")) + ")"
    high = "GREATEST(" + ", ".join(value(n, "p.side") for n in ("d", "f")) + ")"
    return low, high
