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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.models.ke_bounds import BLOCK
from sqlanon.rewriter.analyze import AggregateItem, GroupItem, Query
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import finish
from sqlanon.rewriter.sqlbuild import fragment as _f


def _col(table: str, name: str) -> exp.Column:
    """A quoted reference to a release column (names come from the catalog)."""
    return exp.column(name, table=table, quoted=True)


def _qualified(predicate: exp.Expr, table: str) -> exp.Expr:
    """A copy of ``predicate`` reading ``table``'s columns."""

    def qualify(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            return _col(table, node.name)
        return node

    return predicate.transform(qualify)  # transform copies the tree once


def _conjuncts(predicate: exp.Expr) -> list[exp.Expr]:
    """The top-level AND terms, left to right; a loop, as a chain of thousands of ANDs
    would recurse past Python's stack."""
    found, stack = [], [predicate]
    while stack:
        node = stack.pop().unnest()
        if isinstance(node, exp.And):
            stack += [node.right, node.left]
        else:
            found.append(node)
    return found


def _show(term: exp.Expr) -> str:
    """A condition as the analyst wrote it (canonical columns without quotes)."""
    return term.transform(lambda n: exp.column(n.name) if isinstance(n, exp.Column) else n).sql()


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
    for term in _conjuncts(predicate):
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


@dataclass
class _Plan:
    """Names shared by the CTEs of one rewrite."""

    query: Query
    groups: list[str] = field(default_factory=list)  # internal names g0, g1...
    counts: dict[str | None, str] = field(default_factory=dict)  # COUNT arg -> m column

    @property
    def sensitive(self) -> str:
        return self.query.release.sensitive[0]

    def release(self, alias: str) -> exp.Table:
        release = self.query.release
        return exp.table_(release.table, db=release.schema, quoted=True, alias=alias)

    def bounds(self, alias: str) -> exp.Table:
        table = self.query.release.bounds_table
        assert table is not None
        return exp.table_(table, db=self.query.release.bounds_schema, quoted=True, alias=alias)

    def g(self, table: str) -> list[exp.Column]:
        return [exp.column(g, table=table) for g in self.groups]


def build(query: Query) -> exp.Select:
    """The interval query for a checked (k,e) query."""
    plan = _Plan(query)
    plan.groups = [f"g{i}" for i in range(len(query.group_by))]
    plan.counts = {None: "m"}
    for agg in query.aggregates:
        if agg.func == "count" and agg.column not in (None, plan.sensitive):
            plan.counts.setdefault(agg.column, f"m{len(plan.counts)}")
    qi_pred, s_pred = split_predicate(query.where, plan.sensitive)
    ctes: list[tuple[str, exp.Query]] = [("sel", _sel(plan, qi_pred))]
    if s_pred is None:
        ctes += _exact_cells(plan)
        columns = _exact_columns(plan)
    else:
        ctes += _predicate_cells(plan, s_pred)
        columns = _predicate_columns(plan)
    source = ctes[-1][0]
    final = exp.select(*_output(plan, columns)).from_(
        exp.alias_(_cte(source), "c", table=True), copy=False
    )
    if query.group_by:
        final = final.group_by(*plan.g("c"), copy=False)
        if s_pred is not None:
            final = final.having(_f("SUM(c.hi) > 0"), copy=False)
    return finish(final, query, ctes)


def _sel(plan: _Plan, qi_pred: exp.Expr | None) -> exp.Select:
    """Per cell (output group, release group): m and one count per COUNT(column)."""
    query = plan.query
    key = query.release.key_column
    columns: list[exp.Expr] = [
        exp.alias_(_col("t", c), g) for c, g in zip(query.group_by, plan.groups, strict=True)
    ]
    columns.append(exp.alias_(_col("t", key), "gid"))
    for arg, m in plan.counts.items():
        count = exp.Count(this=exp.Star() if arg is None else _col("t", arg))
        columns.append(exp.alias_(count, m))
    sel = exp.select(*columns).from_(plan.release("t"), copy=False)
    if qi_pred is not None:
        sel = sel.where(_qualified(qi_pred, "t"), copy=False)
    if query.release.ghosts:
        # Ghost rows (NULL quasi columns) are slots of the group's shuffle but no
        # record: m counts real rows only, n (bounds table, grp) counts every slot.
        ghost = exp.func("COALESCE", _col("t", query.release.ghost_column), exp.false())
        sel = sel.where(exp.not_(ghost), copy=False)
    return sel.group_by(*[_col("t", c) for c in query.group_by], _col("t", key), copy=False)


def _needs_values(plan: _Plan) -> bool:
    return any(a.func != "count" for a in plan.query.aggregates)


def _funcs(plan: _Plan) -> set[str]:
    return {a.func for a in plan.query.aggregates}


# --- no predicate on S: bounds-table lookups ---------------------------------------------


def _lookup(alias: str, rank: str) -> exp.Expr:
    """Join condition finding the bounds rows of ``rank`` in cell ``r``'s group: one per
    direction (ascending and descending)."""
    return _f(
        f"{alias}.group_id = r.gid "
        f'AND {alias}."block" = CAST(FLOOR(({rank} - 1) / {float(BLOCK)}) AS INTEGER) '
        f"AND {rank} BETWEEN {alias}.lo_rank AND {alias}.hi_rank"
    )


def _exact_cells(plan: _Plan) -> list[tuple[str, exp.Query]]:
    """Two rows per cell, one per direction of the bounds table (layout:
    sqlanon/models/ke_bounds.py) looked up at rank m: the ascending row gives the sum of
    the m smallest values and the m-th smallest, the descending row the sum of the m
    largest and the m-th largest. Each measure is set on one of the two rows only (NULL
    on the other, which SUM/MIN/MAX skip), so the output aggregates them as cells."""
    if not _needs_values(plan):
        return []
    funcs = _funcs(plan)

    def on(side: str, sql: str) -> str:
        test = 'b."descending"' if side == "down" else 'NOT b."descending"'
        return f"CASE WHEN {test} THEN {sql} END"

    partial = 'b.prior_sum + (r.m - b.lo_rank + 1) * b."value"'
    carried: list[exp.Expr] = [
        *plan.g("r"),
        _f("r.gid"),
        _f('b."descending"'),
        *[exp.alias_(_f(on("up", f"r.{m}")), m) for m in plan.counts.values()],
        *[_f(f"b.{x}") for x in ("n", "total", "vmin", "vmax")],
        exp.alias_(_f(on("up", partial)), "low_sum"),
        exp.alias_(_f(on("down", partial)), "high_sum"),
        exp.alias_(_f(on("up", 'b."value"')), "v_m"),  # the m-th smallest: MAX's low
        exp.alias_(_f(on("down", 'b."value"')), "v_top"),  # the m-th largest: MIN's high
        # Expected rank of the minimum of m draws out of n (of the maximum, counted from
        # the top): (n+1)/(m+1), exact in floating point (integers on both sides).
        exp.alias_(_f("CAST(FLOOR(CAST(b.n + 1 AS DOUBLE) / (r.m + 1)) AS BIGINT)"), "r_est"),
    ]
    # LEFT joins although every rank exists: with inner joins DuckDB once inferred
    # equalities between bounds copies and joined them with each other first.
    ranked = (
        exp.select(*carried)
        .from_(exp.alias_(_cte("sel"), "r", table=True), copy=False)
        .join(plan.bounds("b"), on=_lookup("b", "r.m"), join_type="LEFT", copy=False)
    )
    if not funcs & {"min", "max"}:
        return [("cell", ranked)]
    # The estimates of MIN and MAX: the value at rank r_est in the row's own direction.
    columns: list[exp.Expr] = [exp.column(str(c.alias_or_name), table="r") for c in carried]
    columns += [
        exp.alias_(_f('CASE WHEN NOT r."descending" THEN e."value" END'), "v_emin"),
        exp.alias_(_f('CASE WHEN r."descending" THEN e."value" END'), "v_emax"),
    ]
    same_side = exp.and_(_lookup("e", "r.r_est"), _f('e."descending" = r."descending"'))
    cell = (
        exp.select(*columns)
        .from_(exp.alias_(_cte("ranked"), "r", table=True), copy=False)
        .join(plan.bounds("e"), on=same_side, join_type="LEFT", copy=False)
    )
    return [("ranked", ranked), ("cell", cell)]


def _exact_columns(plan: _Plan) -> dict[str, dict[str, exp.Expr]]:
    """Per aggregate: low/high/est (and the bare value for COUNT) over cells ``c``."""
    out: dict[str, dict[str, exp.Expr]] = {}
    total = "CAST(c.m AS DOUBLE) * CAST(c.total AS DOUBLE) / c.n"
    for agg in plan.query.aggregates:
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


# --- predicate on S: per-group ranks of the satisfying values ------------------------------


def _clamp0(e: str) -> str:
    return f"CASE WHEN {e} > 0 THEN {e} ELSE 0 END"


def _predicate_cells(plan: _Plan, s_pred: exp.Expr) -> list[tuple[str, exp.Query]]:
    s = plan.sensitive
    key = plan.query.release.key_column
    matches = _qualified(s_pred, "t")
    grp = (
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
                    exp.Sum(this=exp.Case(ifs=[exp.If(this=matches.copy(), true=_col("t", s))])),
                    exp.Literal.number(0),
                ),
                "ssum",
            ),
        )
        .from_(plan.release("t"), copy=False)
        .group_by(_col("t", key), copy=False)
    )
    columns: list[exp.Expr] = [*plan.g("s"), _f("s.gid")]
    columns += [_f(f"s.{m}") for m in plan.counts.values()]
    columns += [_f("g.n"), _f("g.c"), _f("g.ssum")]
    for m in plan.counts.values():
        suffix = "" if m == "m" else m[1:]
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
    cell = (
        exp.select(*columns)
        .from_(exp.alias_(_cte("sel"), "s", table=True), copy=False)
        .join(exp.alias_(_cte("grp"), "g", table=True), on=_f("g.gid = s.gid"), copy=False)
    )
    ctes: list[tuple[str, exp.Query]] = [("grp", grp), ("cell", cell)]
    if not _needs_values(plan):
        return ctes
    by_group = [_col("t", key)]
    sat = (
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
    carried = [*plan.g("c"), _f("c.gid"), *[_f(f"c.{m}") for m in plan.counts.values()]]
    carried += [_f(x) for x in ("c.n", "c.c", "c.ssum", "c.er")]
    for m in plan.counts.values():
        suffix = "" if m == "m" else m[1:]
        carried += [_f(f"c.lo{suffix}"), _f(f"c.hi{suffix}")]
    measures = {
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
    cellv = (
        exp.select(*carried, *[exp.alias_(_f(sql), name) for name, sql in measures.items()])
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
    ctes += [("sat", sat), ("cellv", cellv)]
    if "avg" in _funcs(plan):
        ctes += _avg_candidates(plan, [*(c.alias_or_name for c in carried), *measures])
    return ctes


def _avg_candidates(plan: _Plan, cellv_columns: list[str]) -> list[tuple[str, exp.Query]]:
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


def _predicate_columns(plan: _Plan) -> dict[str, dict[str, exp.Expr]]:
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
            suffix = "" if m == "m" else m[1:]
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


def _output(plan: _Plan, columns: dict[str, dict[str, exp.Expr]]) -> list[exp.Expr]:
    result: list[exp.Expr] = []
    for item in plan.query.items:
        if isinstance(item, GroupItem):
            g = plan.groups[plan.query.group_by.index(item.column)]
            result.append(exp.alias_(exp.column(g, table="c"), item.name, quoted=True))
            continue
        assert isinstance(item, AggregateItem)
        for suffix, value in columns[item.name].items():
            name = f"{item.name}_{suffix}" if suffix else item.name
            result.append(exp.alias_(value, name, quoted=True))
    return result
