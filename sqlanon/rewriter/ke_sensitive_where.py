"""Cells of a (k,e) interval query whose WHERE tests the sensitive column S.

With a predicate on S, c of a release group's n values satisfy it, and a cell of m of
the group's records holds j of them, lo = max(0, m+c-n) <= j <= hi = min(m, c); the
bounds come from per-group ranks of the satisfying values (the derivation:
:mod:`sqlanon.rewriter.ke_intervals`).

Everything about the satisfying values is read from the bounds table
(:mod:`sqlanon.models.ke_bounds`), never from the release: its ascending rows are the
group's sorted values as runs of equal values, so the condition is tested once per run
(every value of a run satisfies it or none does) and a run of ``len`` satisfying values
holds the satisfying ranks ``s1..s2`` (a running sum of lengths). Per cell, every
measure is a sum over runs of the value times the run's overlap with a rank range, or
the value of the run holding one rank. The bounds table is a few runs per group where
the release is thousands of rows per group, so a condition on S costs a scan of it and
a join of cells to runs, not a sort of the release.

The CTEs, in order: ``grp`` (n, c and the sum of the satisfying values per release
group), ``cell`` (lo, hi and the estimate's rank per cell), and when an aggregate reads
S, ``sat`` (the satisfying runs with their ranks), ``cellv`` (per cell the sums and
extremes the ranks allow) and, for AVG, the running ratios of :func:`_avg_candidates`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from sqlanon.models.ke_bounds import BLOCK
from sqlanon.rewriter.ke_cells import CellPlan
from sqlanon.rewriter.sqlbuild import alias as _alias
from sqlanon.rewriter.sqlbuild import column as _col
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import fragment as _f
from sqlanon.rewriter.sqlbuild import select as _select

# Per cell ``c`` and satisfying run ``x`` (ascending satisfying ranks x.s1..x.s2, of c.c
# in its group): the run's descending ranks, and how many of its values fall in the
# ranks a cell must hold (1..lo) or may hold (lo+1..hi), counted in either direction.
_D1 = "(c.c - x.s2 + 1)"
_D2 = "(c.c - x.s1 + 1)"


def _overlap(a1: str, a2: str, b1: str, b2: str) -> str:
    return f"GREATEST(0, LEAST({a2}, {b2}) - GREATEST({a1}, {b1}) + 1)"


def _holds(rank: str, first: str, last: str) -> str:
    return f"{first} <= {rank} AND {rank} <= {last}"


_UP_FORCED = _overlap("x.s1", "x.s2", "1", "c.lo")
_UP_OPTIONAL = _overlap("x.s1", "x.s2", "c.lo + 1", "c.hi")
_DOWN_FORCED = _overlap(_D1, _D2, "1", "c.lo")
_DOWN_OPTIONAL = _overlap(_D1, _D2, "c.lo + 1", "c.hi")

#: Per cell, the sums and extremes of the satisfying values its ranks allow: the sum of
#: the lo smallest plus the negative values among ranks lo+1..hi (and symmetric), the
#: value at ascending/descending rank 1, lo and the estimate's rank ``er``.
_MEASURES = {
    "sum_lo": f"SUM(x.v * {_UP_FORCED} + CASE WHEN x.v < 0 THEN x.v * {_UP_OPTIONAL} ELSE 0 END)",
    "sum_hi": f"SUM(x.v * {_DOWN_FORCED} + CASE WHEN x.v > 0 THEN x.v * {_DOWN_OPTIONAL} "
    "ELSE 0 END)",
    "min_any": "MIN(CASE WHEN x.s1 = 1 AND c.hi >= 1 THEN x.v END)",
    "min_forced": f"MIN(CASE WHEN {_holds('c.lo', _D1, _D2)} THEN x.v END)",
    "max_any": "MAX(CASE WHEN x.s2 = c.c AND c.hi >= 1 THEN x.v END)",
    "max_forced": f"MAX(CASE WHEN {_holds('c.lo', 'x.s1', 'x.s2')} THEN x.v END)",
    "min_est": f"MIN(CASE WHEN {_holds('c.er', 'x.s1', 'x.s2')} AND c.hi >= 1 THEN x.v END)",
    "max_est": f"MAX(CASE WHEN {_holds('c.er', _D1, _D2)} AND c.hi >= 1 THEN x.v END)",
}

#: The measures each aggregate reads (AVG reads the pools of :func:`_avg_candidates`).
_READS = {
    "sum": ("sum_lo", "sum_hi"),
    "min": ("min_any", "min_forced", "max_any", "min_est"),
    "max": ("max_any", "max_forced", "min_any", "max_est"),
}

#: The runs a cell's measures read: those holding a rank up to hi, or rank er (MIN and
#: MAX estimates only).
_NEEDED = f"x.gid = c.gid AND (x.s1 <= c.hi OR {_D1} <= c.hi"
_NEEDED_ER = f" OR {_holds('c.er', 'x.s1', 'x.s2')} OR {_holds('c.er', _D1, _D2)}"


def _measures(plan: CellPlan) -> list[str]:
    """The measures of :data:`_MEASURES` the query's aggregates read."""
    read = {m for func in plan.funcs for m in _READS.get(func, ())}
    return [m for m in _MEASURES if m in read]


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


def predicate_cells(
    plan: CellPlan, sel: exp.Select, s_pred: exp.Expr
) -> list[tuple[str, exp.Query]]:
    """The CTEs of the condition ``s_pred`` on S, given the cells ``sel``.

    A cell of a group none of whose values satisfies the condition holds no matching
    record (lo = hi = 0) and adds 0 to every bound and estimate: ``sel`` keeps only the
    groups with a satisfying value, so a selective condition reads few records.
    """
    matches = _on_runs(s_pred, plan.sensitive)
    key = _col("t", plan.query.release.key_column)
    hit = _select(_f("g.gid")).from_(_alias(_cte("grp"), "g", table=True))
    hit = hit.where(_f("g.c > 0"), copy=False)
    ctes: list[tuple[str, exp.Query]] = [
        ("grp", _group_matches(plan, matches)),
        ("sel", sel.where(exp.In(this=key, query=exp.Subquery(this=hit)), copy=False)),
        ("cell", _cell_ranges(plan)),
    ]
    if not plan.needs_values:
        return ctes
    cellv, carried = _cell_values(plan)
    ctes += [("sat", _satisfying(plan, matches)), ("cellv", cellv)]
    if "avg" in plan.funcs:
        ctes += _avg_candidates(plan, [*carried, *_measures(plan)])
    return ctes


def _on_runs(s_pred: exp.Expr, sensitive: str) -> exp.Expr:
    """``s_pred`` (a condition on S alone) tested on the bounds table's run value."""

    def on_value(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            assert node.name == sensitive, node.sql()
            return exp.column("value", table="b", quoted=True)
        return node

    return s_pred.transform(on_value)  # transform copies the tree once


def _runs(plan: CellPlan) -> exp.Select:
    """The bounds table's ascending rows (``b``): the group's sorted values as runs, each
    once (a run spanning several blocks has a row per block, all with the whole run's
    ranks: keep the one of the block of its first rank)."""
    first_block = f"CAST(FLOOR((b.lo_rank - 1) / {float(BLOCK)}) AS INTEGER)"
    return (
        _select()
        .from_(plan.bounds("b"), copy=False)
        .where(_f(f'NOT b."descending" AND b."block" = {first_block}'), copy=False)
    )


def _group_matches(plan: CellPlan, matches: exp.Expr) -> exp.Select:
    """Per release group: n values, c satisfying S's condition, ssum the sum of those
    (0 when none), base the satisfying values of the groups before it (by id); from the
    runs, ghost slots included as in the release."""
    length = _f("b.hi_rank - b.lo_rank + 1")
    hit = exp.Case(ifs=[exp.If(this=matches.copy(), true=length)], default=_f("0"))
    total = exp.Case(
        ifs=[exp.If(this=matches.copy(), true=_f('(b.hi_rank - b.lo_rank + 1) * b."value"'))]
    )
    before = _window(
        exp.Sum(this=exp.Sum(this=hit.copy())),
        [],
        [exp.Ordered(this=_f("b.group_id"))],
        running=True,
    )
    return (
        _runs(plan)
        .select(
            _f("b.group_id AS gid"),
            _f("MAX(b.n) AS n"),
            _alias(exp.Sum(this=hit), "c"),
            _alias(exp.func("COALESCE", exp.Sum(this=total), _f("0")), "ssum"),
            _alias(exp.Sub(this=before, expression=exp.Sum(this=hit.copy())), "base"),
            copy=False,
        )
        .group_by(_f("b.group_id"), copy=False)
    )


def _cell_ranges(plan: CellPlan) -> exp.Select:
    """Per cell: its counts, its group's n, c, ssum, the range [lo, hi] of matching
    records per count and ``er``, the expected rank of the cell's minimum."""
    columns: list[exp.Expr] = [*plan.g("s"), _f("s.gid")]
    columns += [_f(f"s.{m}") for m in plan.counts.values()]
    columns += [_f("g.n"), _f("g.c"), _f("g.ssum")]
    for m in plan.counts.values():
        suffix = _suffix(m)
        columns.append(_alias(_f(_clamp0(f"s.{m} + g.c - g.n")), f"lo{suffix}"))
        columns.append(_alias(_f(f"CASE WHEN s.{m} < g.c THEN s.{m} ELSE g.c END"), f"hi{suffix}"))
    # Expected rank of the minimum of E[j] = m*c/n draws out of c: floor((c+1)/(E[j]+1))
    # = floor((c+1)*n / (m*c+n)); integers on both sides keep the floor exact.
    columns.append(
        _alias(
            _f("CAST(FLOOR(CAST((g.c + 1) * g.n AS DOUBLE) / (s.m * g.c + g.n)) AS BIGINT)"), "er"
        )
    )
    return (
        _select(*columns)
        .from_(_alias(_cte("sel"), "s", table=True), copy=False)
        .join(_alias(_cte("grp"), "g", table=True), on=_f("g.gid = s.gid"), copy=False)
    )


def _satisfying(plan: CellPlan, matches: exp.Expr) -> exp.Select:
    """Every run of satisfying values: its value and its satisfying ranks s1..s2
    (ascending; a running sum of run lengths, runs ordered by rank). One running sum over
    every group (ordered by group, then rank) less the group's ``base``: a window
    partitioned by group sorts hundreds of small partitions, several times slower."""
    length = "(b.hi_rank - b.lo_rank + 1)"
    running = _window(
        _f(f"SUM({length})"),
        [],
        [exp.Ordered(this=_f("b.group_id")), exp.Ordered(this=_f("b.lo_rank"))],
        running=True,
    )
    last = exp.Sub(this=running, expression=_f("g.base"))
    return (
        _runs(plan)
        .select(
            _f("b.group_id AS gid"),
            _f('b."value" AS v'),
            _alias(exp.Sub(this=last.copy(), expression=_f(f"({length} - 1)")), "s1"),
            _alias(last, "s2"),
            copy=False,
        )
        .join(_alias(_cte("grp"), "g", table=True), on=_f("g.gid = b.group_id"), copy=False)
        .where(matches, copy=False)  # its last use: the others are copies
    )


def _cell_values(plan: CellPlan) -> tuple[exp.Select, list[str]]:
    """Per cell: the columns of ``cell`` and the :data:`_MEASURES` the aggregates read;
    with the names of the columns carried from ``cell``."""
    carried = [*plan.g("c"), _f("c.gid"), *[_f(f"c.{m}") for m in plan.counts.values()]]
    carried += [_f(x) for x in ("c.n", "c.c", "c.ssum", "c.er")]
    for m in plan.counts.values():
        suffix = _suffix(m)
        carried += [_f(f"c.lo{suffix}"), _f(f"c.hi{suffix}")]
    names = [c.alias_or_name for c in carried]
    measures = _measures(plan)
    cellv = _select(*carried, *[_alias(_f(_MEASURES[m]), m) for m in measures])
    cellv = cellv.from_(_alias(_cte("cell"), "c", table=True), copy=False)
    if not measures:  # AVG and COUNT only: the cells as they are
        return cellv, names
    needed = _NEEDED + (_NEEDED_ER if plan.funcs & {"min", "max"} else "") + ")"
    cellv = cellv.join(
        _alias(_cte("sat"), "x", table=True), on=_f(needed), join_type="LEFT", copy=False
    )
    return cellv.group_by(*[c.copy() for c in carried], copy=False), names


def _avg_candidates(plan: CellPlan, cellv_columns: list[str]) -> list[tuple[str, exp.Query]]:
    """AVG bounds: running ratios over each output group's forced + optional values.

    The pool holds, per cell and satisfying run, ``cnt`` values ``v`` the cell must
    (``k`` 0) or may (``k`` 1) hold, counted from the low end (for AVG's low) or the high
    end. Ordered forced first, then optional from the best, a prefix of the pool is the
    best choice of its size, and within one pool row the ratio moves monotonically (one
    value repeated), so the row ends are the only candidates.

    Returns pool/ratio CTEs and a final UNION ALL of the per-cell rows with the candidate
    ratios (other columns NULL), so the output aggregates one relation by the group key
    without a join on possibly NULL keys.
    """
    ctes: list[tuple[str, exp.Query]] = []
    for side, counts, desc in (
        ("lo", (_UP_FORCED, _UP_OPTIONAL), False),
        ("hi", (_DOWN_FORCED, _DOWN_OPTIONAL), True),
    ):
        branches = [
            _select(*plan.g("c"), _f("x.v"), _f(f"{k} AS k"), _f(f"{count} AS cnt"))
            .from_(_alias(_cte("cell"), "c", table=True), copy=False)
            .join(_alias(_cte("sat"), "x", table=True), on=_f("x.gid = c.gid"), copy=False)
            .where(_f(f"{count} > 0"), copy=False)
            for k, count in enumerate(counts)
        ]
        pool = exp.union(*branches, distinct=False)
        part = plan.g("p")
        order = [exp.Ordered(this=_f("p.k")), exp.Ordered(this=_f("p.v"), desc=desc)]
        position = _window(_f("SUM(p.cnt)"), part, order, running=True)
        running = _window(_f("SUM(p.cnt * p.v)"), part, order, running=True)
        forced = _window(_f("SUM((1 - p.k) * p.cnt)"), part)
        ratio = exp.Case(
            ifs=[
                exp.If(
                    this=exp.GTE(this=position, expression=forced),
                    true=exp.Div(this=_double(running), expression=position.copy()),
                )
            ]
        )
        cum = _select(*plan.g("p"), _alias(ratio, f"avg_{side}")).from_(
            _alias(_cte(f"pool_{side}"), "p", table=True), copy=False
        )
        ctes += [(f"pool_{side}", pool), (f"ratio_{side}", cum)]

    measure_names = cellv_columns[len(plan.groups) :]
    null = exp.cast(exp.Null(), "DOUBLE")
    union: exp.Query = _select(
        *plan.g("v"),
        *[exp.column(n, table="v") for n in measure_names],
        _alias(null.copy(), "avg_lo"),
        _alias(null.copy(), "avg_hi"),
    ).from_(_alias(_cte("cellv"), "v", table=True), copy=False)
    for side in ("lo", "hi"):
        branch = _select(
            *plan.g("r"),
            *[_alias(exp.Null(), n) for n in measure_names],
            _f("r.avg_lo") if side == "lo" else _alias(null.copy(), "avg_lo"),
            _f("r.avg_hi") if side == "hi" else _alias(null.copy(), "avg_hi"),
        ).from_(_alias(_cte(f"ratio_{side}"), "r", table=True), copy=False)
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
