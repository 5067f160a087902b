"""Cells of a (k,e) interval query whose WHERE tests the sensitive column S.

With a predicate on S, c of a release group's n values satisfy it, and a cell of m of
the group's records holds j of them, lo = max(0, m+c-n) <= j <= hi = min(m, c); the
bounds come from per-group ranks of the satisfying values (the derivation:
:mod:`sqlanon.rewriter.ke_intervals`). The CTEs, in order: ``grp`` (n, c and the sum of
the satisfying values per release group), ``cell`` (lo, hi and the estimate's rank per
cell), and when an aggregate reads S, ``sat`` (the satisfying values ranked both ways),
``cellv`` (per cell the sums and extremes the ranks allow) and, for AVG, the running
ratios of :func:`_avg_candidates`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from sqlanon.rewriter.ke_cells import CellPlan
from sqlanon.rewriter.sqlbuild import column as _col
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import fragment as _f
from sqlanon.rewriter.sqlbuild import qualified as _qualified

#: Per cell, the sums and extremes of the satisfying values its ranks allow (``x``: the
#: ``sat`` row of one satisfying value, ``c``: the cell).
_MEASURES = {
    "sum_lo": "SUM(CASE WHEN x.r_up <= c.lo THEN x.v "
    "WHEN x.r_up <= c.hi AND x.v < 0 THEN x.v ELSE 0 END)",
    "sum_hi": "SUM(CASE WHEN x.r_down <= c.lo THEN x.v "
    "WHEN x.r_down <= c.hi AND x.v > 0 THEN x.v ELSE 0 END)",
    "min_any": "MIN(CASE WHEN x.r_up = 1 AND c.hi >= 1 THEN x.v END)",
    "min_forced": "MIN(CASE WHEN x.r_down = c.lo THEN x.v END)",
    "max_any": "MAX(CASE WHEN x.r_down = 1 AND c.hi >= 1 THEN x.v END)",
    "max_forced": "MAX(CASE WHEN x.r_up = c.lo THEN x.v END)",
    "min_est": "MIN(CASE WHEN x.r_up = c.er AND c.hi >= 1 THEN x.v END)",
    "max_est": "MAX(CASE WHEN x.r_down = c.er AND c.hi >= 1 THEN x.v END)",
}


def _window(
    func: exp.Expr,
    partition: Sequence[exp.Expr],
    order: Sequence[exp.Ordered] = (),
    running: bool = False,
) -> exp.Window:
    spec = (
        exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING", end="CURRENT ROW")
        if running
        else None
    )
    return exp.Window(
        this=func,
        partition_by=[p.copy() for p in partition] or None,
        order=exp.Order(expressions=[o.copy() for o in order]) if order else None,
        spec=spec,
        over="OVER",
    )


def _double(e: exp.Expr | str) -> exp.Cast:
    return exp.cast(_f(e) if isinstance(e, str) else e, "DOUBLE")


def _clamp0(e: str) -> str:
    return f"CASE WHEN {e} > 0 THEN {e} ELSE 0 END"


def _suffix(m: str) -> str:
    """The suffix of a count's lo/hi columns: none for ``m``, ``1`` for ``m1``..."""
    return "" if m == "m" else m[1:]


def predicate_cells(plan: CellPlan, s_pred: exp.Expr) -> list[tuple[str, exp.Query]]:
    """The CTEs after ``sel`` for the condition ``s_pred`` on S."""
    matches = _qualified(s_pred, "t")
    ctes: list[tuple[str, exp.Query]] = [
        ("grp", _group_matches(plan, matches)),
        ("cell", _cell_ranges(plan)),
    ]
    if not plan.needs_values:
        return ctes
    cellv, carried = _cell_values(plan)
    ctes += [("sat", _satisfying(plan, matches)), ("cellv", cellv)]
    if "avg" in plan.funcs:
        ctes += _avg_candidates(plan, [*carried, *_MEASURES])
    return ctes


def _group_matches(plan: CellPlan, matches: exp.Expr) -> exp.Select:
    """Per release group: n records, c satisfying S's condition, ssum the sum of their
    values (0 when none)."""
    key = plan.query.release.key_column
    return (
        exp.select(
            exp.alias_(_col("t", key), "gid"),
            exp.alias_(_f("COUNT(*)"), "n"),
            exp.alias_(
                exp.Count(
                    this=exp.Case(ifs=[exp.If(this=matches.copy(), true=exp.Literal.number(1))])
                ),
                "c",
            ),
            exp.alias_(
                exp.func(
                    "COALESCE",
                    exp.Sum(
                        this=exp.Case(
                            ifs=[exp.If(this=matches.copy(), true=_col("t", plan.sensitive))]
                        )
                    ),
                    exp.Literal.number(0),
                ),
                "ssum",
            ),
        )
        .from_(plan.release("t"), copy=False)
        .group_by(_col("t", key), copy=False)
    )


def _cell_ranges(plan: CellPlan) -> exp.Select:
    """Per cell: its counts, its group's n, c, ssum, the range [lo, hi] of matching
    records per count and ``er``, the expected rank of the cell's minimum."""
    columns: list[exp.Expr] = [*plan.g("s"), _f("s.gid")]
    columns += [_f(f"s.{m}") for m in plan.counts.values()]
    columns += [_f("g.n"), _f("g.c"), _f("g.ssum")]
    for m in plan.counts.values():
        suffix = _suffix(m)
        columns.append(exp.alias_(_f(_clamp0(f"s.{m} + g.c - g.n")), f"lo{suffix}"))
        columns.append(
            exp.alias_(_f(f"CASE WHEN s.{m} < g.c THEN s.{m} ELSE g.c END"), f"hi{suffix}")
        )
    # Expected rank of the minimum of E[j] = m*c/n draws out of c: floor((c+1)/(E[j]+1))
    # = floor((c+1)*n / (m*c+n)); integers on both sides keep the floor exact.
    columns.append(
        exp.alias_(
            _f("CAST(FLOOR(CAST((g.c + 1) * g.n AS DOUBLE) / (s.m * g.c + g.n)) AS BIGINT)"), "er"
        )
    )
    return (
        exp.select(*columns)
        .from_(exp.alias_(_cte("sel"), "s", table=True), copy=False)
        .join(exp.alias_(_cte("grp"), "g", table=True), on=_f("g.gid = s.gid"), copy=False)
    )


def _satisfying(plan: CellPlan, matches: exp.Expr) -> exp.Select:
    """Every value satisfying the condition, with its rank in its group both ways."""
    s = plan.sensitive
    key = plan.query.release.key_column
    by_group = [_col("t", key)]
    return (
        exp.select(
            exp.alias_(_col("t", key), "gid"),
            exp.alias_(_col("t", s), "v"),
            exp.alias_(
                _window(exp.RowNumber(), by_group, [exp.Ordered(this=_col("t", s))]), "r_up"
            ),
            exp.alias_(
                _window(exp.RowNumber(), by_group, [exp.Ordered(this=_col("t", s), desc=True)]),
                "r_down",
            ),
        )
        .from_(plan.release("t"), copy=False)
        .where(matches, copy=False)  # its last use: the others are copies
    )


def _cell_values(plan: CellPlan) -> tuple[exp.Select, list[str]]:
    """Per cell: the columns of ``cell`` and :data:`_MEASURES`; with the names of the
    columns carried from ``cell``."""
    carried = [*plan.g("c"), _f("c.gid"), *[_f(f"c.{m}") for m in plan.counts.values()]]
    carried += [_f(x) for x in ("c.n", "c.c", "c.ssum", "c.er")]
    for m in plan.counts.values():
        suffix = _suffix(m)
        carried += [_f(f"c.lo{suffix}"), _f(f"c.hi{suffix}")]
    cellv = (
        exp.select(*carried, *[exp.alias_(_f(sql), name) for name, sql in _MEASURES.items()])
        .from_(exp.alias_(_cte("cell"), "c", table=True), copy=False)
        .join(
            exp.alias_(_cte("sat"), "x", table=True),
            on=_f(
                "x.gid = c.gid AND (x.r_up <= c.hi OR x.r_down <= c.hi "
                "OR x.r_up = c.er OR x.r_down = c.er)"
            ),
            join_type="LEFT",
            copy=False,
        )
        .group_by(*[c.copy() for c in carried], copy=False)
    )
    return cellv, [c.alias_or_name for c in carried]


def _avg_candidates(plan: CellPlan, cellv_columns: list[str]) -> list[tuple[str, exp.Query]]:
    """AVG bounds: running ratios over each output group's forced + optional values.

    Returns pool/ratio CTEs and a final UNION ALL of the per-cell rows with the candidate
    ratios (other columns NULL), so the output aggregates one relation by the group key
    without a join on possibly NULL keys.
    """
    ctes: list[tuple[str, exp.Query]] = []
    for side, rank, desc in (("lo", "r_up", False), ("hi", "r_down", True)):
        pool = (
            exp.select(
                *plan.g("c"),
                _f("x.v"),
                exp.alias_(_f(f"CASE WHEN x.{rank} <= c.lo THEN 0 ELSE 1 END"), "k"),
            )
            .from_(exp.alias_(_cte("cell"), "c", table=True), copy=False)
            .join(
                exp.alias_(_cte("sat"), "x", table=True),
                on=_f(f"x.gid = c.gid AND x.{rank} <= c.hi"),
                copy=False,
            )
        )
        part = plan.g("p")
        order = [exp.Ordered(this=_f("p.k")), exp.Ordered(this=_f("p.v"), desc=desc)]
        position = _window(exp.RowNumber(), part, order)
        running = _window(_f("SUM(p.v)"), part, order, running=True)
        forced = _window(_f("SUM(1 - p.k)"), part)
        ratio = exp.Case(
            ifs=[
                exp.If(
                    this=exp.GTE(this=position, expression=forced),
                    true=exp.Div(this=_double(running), expression=position.copy()),
                )
            ]
        )
        cum = exp.select(*plan.g("p"), exp.alias_(ratio, f"avg_{side}")).from_(
            exp.alias_(_cte(f"pool_{side}"), "p", table=True), copy=False
        )
        ctes += [(f"pool_{side}", pool), (f"ratio_{side}", cum)]

    measure_names = cellv_columns[len(plan.groups) :]
    null = exp.cast(exp.Null(), "DOUBLE")
    union: exp.Query = exp.select(
        *plan.g("v"),
        *[exp.column(n, table="v") for n in measure_names],
        exp.alias_(null.copy(), "avg_lo"),
        exp.alias_(null.copy(), "avg_hi"),
    ).from_(exp.alias_(_cte("cellv"), "v", table=True), copy=False)
    for side in ("lo", "hi"):
        branch = exp.select(
            *plan.g("r"),
            *[exp.alias_(exp.Null(), n) for n in measure_names],
            _f("r.avg_lo") if side == "lo" else exp.alias_(null.copy(), "avg_lo"),
            _f("r.avg_hi") if side == "hi" else exp.alias_(null.copy(), "avg_hi"),
        ).from_(exp.alias_(_cte(f"ratio_{side}"), "r", table=True), copy=False)
        union = exp.union(union, branch, distinct=False)
    assert isinstance(union, exp.Union)
    return [*ctes, ("parts", union)]


def predicate_columns(plan: CellPlan) -> dict[str, dict[str, exp.Expr]]:
    """Per aggregate: low/high/est over the cells ``c`` of :func:`predicate_cells`."""
    out: dict[str, dict[str, exp.Expr]] = {}
    zero = "" if plan.query.group_by else ", 0"

    def total(sql: str) -> exp.Expr:
        return _f(f"COALESCE({sql}{zero})") if zero else _f(sql)

    possible = "SUM(c.hi) > 0"
    sum_est = "SUM(CAST(c.m AS DOUBLE) * CAST(c.ssum AS DOUBLE) / c.n)"
    count_est = "SUM(CAST(c.m AS DOUBLE) * c.c / c.n)"
    for agg in plan.query.aggregates:
        if agg.func == "count":
            m = plan.counts.get(agg.column, "m")
            suffix = _suffix(m)
            out[agg.name] = {
                "low": total(f"SUM(c.lo{suffix})"),
                "high": total(f"SUM(c.hi{suffix})"),
                "est": total(f"SUM(CAST(c.{m} AS DOUBLE) * c.c / c.n)"),
            }
        elif agg.func == "sum":
            out[agg.name] = {
                side: _f(f"CASE WHEN {possible} THEN {sql} END")
                for side, sql in (
                    ("low", "SUM(c.sum_lo)"),
                    ("high", "SUM(c.sum_hi)"),
                    ("est", sum_est),
                )
            }
        elif agg.func == "avg":
            out[agg.name] = {
                "low": _f("MIN(c.avg_lo)"),
                "high": _f("MAX(c.avg_hi)"),
                "est": _f(f"{sum_est} / NULLIF({count_est}, 0)"),
            }
        elif agg.func == "min":
            out[agg.name] = {
                "low": _f("MIN(c.min_any)"),
                "high": _f("COALESCE(MIN(c.min_forced), MAX(c.max_any))"),
                "est": _f("MIN(c.min_est)"),
            }
        else:
            out[agg.name] = {
                "low": _f("COALESCE(MAX(c.max_forced), MIN(c.min_any))"),
                "high": _f("MAX(c.max_any)"),
                "est": _f("MAX(c.max_est)"),
            }
    return out
