"""Interval SQL over an lHD release with ghosts.

A ghost is a deleted record that stays a member of its class (MODELS.md, "Changing
tables"): its row carries the class's labels and its own sensitive values, and the
release shows only ``class_ghosts``, the number of ghost rows of each class (g of its n
rows). Any g-subset of the class's rows may be the ghosts; the truth counts real rows.

Rows are judged sure / possible / never exactly as in
:mod:`sqlanon.rewriter.lhd_intervals`. A *cell* holds the rows of one class with one
output key (a class's rows share their labels, so grouping by quasi columns keeps
classes whole; grouping by a sensitive column may split one). A cell of n_cell rows
holds between gl = max(0, g - (n - n_cell)) and gh = min(g, n_cell) ghosts, so K real
rows with Klo = n_cell - gh <= K <= Khi = n_cell - gl, and any K-subset of its rows may
be the real ones. Each output row is answered on its own, so its cells (distinct
classes) vary independently. Per cell:

- COUNT in [max(0, S - gh), min(M, Khi)] (S sure rows, M sure or possible rows).
- SUM: a real row contributes, at least, its value if sure, min(value, 0) if possible,
  0 if never (at most: value, max(value, 0), 0). The least sum is the least over K of
  the sum of the K smallest contributions: the Klo smallest plus the negative ones up
  to rank Khi (the greatest: symmetric). Attained by making the K rows of smallest
  contribution real and every possible real row with a negative value match.
- A set I of rows can be the real matching rows iff I holds only sure or possible rows,
  at most Khi of them, and all but at most gh of the sure rows: at least F =
  max(0, S - gh) sure rows (*forced*). MIN's low end is the least value of any such row
  (cells with Khi >= 1); its high end the least, over cells with F >= 1, of the F-th
  largest sure value, else the greatest candidate value. MAX symmetric.
- AVG low: the F smallest sure values of each cell are in an optimal I (exchange), and
  the cell adds at most Khi - F further rows, best its smallest others; so, as for
  (k,e) with a predicate on S, the running minimum over each output group's forced
  values followed by the pooled capped optional values in ascending order. High
  symmetric (F largest sure, largest others).

Estimates assume the ghosts a uniformly random g-subset of their class, independent of
the raw values: a row counts with weight f * (n - g) / n (f as in lhd_intervals.py);
COUNT est = sum of weights, SUM est = weighted sum, AVG est = their ratio, MIN/MAX est
over rows with weight >= 1/2 and the rows forced into the high (low) end. Each is an
expectation, or a ratio of expectations, over worlds consistent with the release, so it
lies in the interval.
"""

from __future__ import annotations

from sqlglot import exp

from sqlanon.rewriter.analyze import AggregateItem, GroupItem, Query
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import finish
from sqlanon.rewriter.sqlbuild import fragment as _f


def _max0(e: str) -> str:
    return f"CASE WHEN {e} > 0 THEN {e} ELSE 0 END"


def _least(a: str, b: str) -> str:
    return f"CASE WHEN {a} < {b} THEN {a} ELSE {b} END"


def _select(columns: list[str], source: str, alias: str) -> exp.Select:
    return exp.select(*[_f(c) for c in columns]).from_(
        exp.alias_(_cte(source), alias, table=True), copy=False
    )


def _part(groups: list[str], alias: str, *extra: str) -> str:
    """The columns of ``alias`` that identify a cell (group keys, class), then ``extra``."""
    return ", ".join([*(f"{alias}.{g}" for g in groups), f"{alias}.cid", *extra])


def build(
    query: Query,
    lab: exp.Select,
    groups: list[str],
    values: dict[str, str],
    may_t: exp.Expr,
    must_t: exp.Expr,
    frac: exp.Expr,
) -> exp.Select:
    """The interval query; ``lab`` selects per release row the group keys ``groups``,
    the aggregated values ``values`` and the flag columns that ``may_t``, ``must_t`` and
    ``frac`` (over alias ``l``) read."""
    release = query.release
    lab = lab.select(
        exp.alias_(exp.column(release.key_column, table="t", quoted=True), "cid"),
        exp.alias_(exp.column(release.ghost_column, table="t", quoted=True), "cg"),
        copy=False,
    )
    vs = list(values.values())
    rows = _rows(groups, vs, may_t, must_t, frac)
    ranked, ranked_cols = _ranked(groups, vs)
    ctes: list[tuple[str, exp.Query]] = [
        ("lab", lab),
        ("rows", rows),
        ("cell", _cells(groups, vs)),
        ("ranked", ranked),
    ]
    averaged = sorted({values[a.column] for a in query.aggregates if a.func == "avg" and a.column})
    if averaged:
        ctes += _avg(groups, ranked_cols, averaged)
    final = exp.select(*_output(query, groups, values)).from_(
        exp.alias_(_cte(ctes[-1][0]), "c", table=True), copy=False
    )
    if groups:
        final = final.group_by(*[exp.column(g, table="c") for g in groups], copy=False)
        final = final.having(_f("SUM(CASE WHEN c.cand THEN 1 ELSE 0 END) > 0"), copy=False)
    return finish(final, query, ctes)


def _rows(
    groups: list[str], vs: list[str], may_t: exp.Expr, must_t: exp.Expr, frac: exp.Expr
) -> exp.Select:
    """Per release row: keys, values, class, its flags and weight ``f``, and per cell
    n_cell rows, s_cell sure and m_cell possible ones, ``rn`` the row's number; per class
    ``n_class`` rows, ``cg`` ghosts."""
    cell_of = f"OVER (PARTITION BY {_part(groups, 'l')})"
    return exp.select(
        *[exp.column(c, table="l") for c in [*groups, *vs, "cid"]],
        exp.alias_(exp.cast(exp.column("cg", table="l"), "BIGINT"), "cg"),
        exp.alias_(may_t.copy(), "may", copy=False),
        exp.alias_(must_t.copy(), "sure", copy=False),
        exp.alias_(exp.cast(frac, "DOUBLE", copy=False), "f", copy=False),
        exp.alias_(_f(f"COUNT(*) {cell_of}"), "n_cell"),
        exp.alias_(_f("COUNT(*) OVER (PARTITION BY l.cid)"), "n_class"),
        exp.alias_(_f(f"ROW_NUMBER() {cell_of}"), "rn"),
        exp.alias_(
            exp.Window(
                this=exp.Sum(
                    this=exp.Case(ifs=[exp.If(this=must_t.copy(), true=_f("1"))], default=_f("0"))
                ),
                partition_by=[_f(p) for p in _part(groups, "l").split(", ")],
                over="OVER",
            ),
            "s_cell",
        ),
        exp.alias_(
            exp.Window(
                this=exp.Sum(
                    this=exp.Case(ifs=[exp.If(this=may_t.copy(), true=_f("1"))], default=_f("0"))
                ),
                partition_by=[_f(p) for p in _part(groups, "l").split(", ")],
                over="OVER",
            ),
            "m_cell",
        ),
    ).from_(exp.alias_(_cte("lab"), "l", table=True), copy=False)


def _cells(groups: list[str], vs: list[str]) -> exp.Select:
    """Per row, its cell's bounds: real rows in [klo, khi], ``forced`` sure rows,
    ``reach`` the most matching real rows; the row's weight ``w``, whether it is a
    candidate (``cand``), and its least and greatest contributions to a SUM."""
    gl = _max0("r.cg - (r.n_class - r.n_cell)")
    gh = _least("r.cg", "r.n_cell")
    base = [f"r.{c}" for c in [*groups, *vs, "cid", "may", "sure", "rn", "n_cell"]]
    cell_cols = [
        *base,
        f"r.n_cell - ({gh}) AS klo",
        f"r.n_cell - ({gl}) AS khi",
        f"{_max0(f'r.s_cell - ({gh})')} AS forced",
        f"{_least('r.m_cell', f'r.n_cell - ({gl})')} AS reach",
        "r.f * CAST(r.n_class - r.cg AS DOUBLE) / r.n_class AS w",
        f"r.may AND r.n_cell - ({gl}) >= 1 AS cand",
    ]
    for v in vs:
        cell_cols += [
            f"CASE WHEN r.sure THEN r.{v} WHEN r.may AND r.{v} < 0 THEN r.{v} ELSE 0 END AS lo_{v}",
            f"CASE WHEN r.sure THEN r.{v} WHEN r.may AND r.{v} > 0 THEN r.{v} ELSE 0 END AS hi_{v}",
        ]
    return _select(cell_cols, "rows", "r")


def _ranked(groups: list[str], vs: list[str]) -> tuple[exp.Select, list[str]]:
    """The ``cell`` rows with their ranks in their cell by each value's contributions
    and, among the cell's sure (or not sure) rows, by the value; and its columns."""
    ranked_cols = [f"c.{c}" for c in [*groups, *vs, "cid", "may", "sure", "rn"]]
    ranked_cols += [f"c.{c}" for c in ["klo", "khi", "forced", "reach", "w", "cand"]]
    cell = _part(groups, "c")
    by_sure = _part(groups, "c", "c.sure")
    for v in vs:
        ranked_cols += [
            f"c.lo_{v}",
            f"c.hi_{v}",
            f"ROW_NUMBER() OVER (PARTITION BY {cell} ORDER BY c.lo_{v}) AS rlo_{v}",
            f"ROW_NUMBER() OVER (PARTITION BY {cell} ORDER BY c.hi_{v} DESC) AS rhi_{v}",
            f"ROW_NUMBER() OVER (PARTITION BY {by_sure} ORDER BY c.{v}) AS sup_{v}",
            f"ROW_NUMBER() OVER (PARTITION BY {by_sure} ORDER BY c.{v} DESC) AS sdn_{v}",
        ]
    return _select(ranked_cols, "cell", "c"), ranked_cols


def _avg(
    groups: list[str], ranked_cols: list[str], averaged: list[str]
) -> list[tuple[str, exp.Query]]:
    """Pool and running-ratio CTEs per averaged value and side, then one UNION ALL of
    the ranked rows and the candidate ratios (other columns NULL), aggregated by key."""
    ctes: list[tuple[str, exp.Query]] = []
    keys = [f"p.{g}" for g in groups]
    over_keys = f"PARTITION BY {', '.join(keys)}" if keys else ""
    for v in averaged:
        for side, rank, desc in (("lo", "sup", ""), ("hi", "sdn", " DESC")):
            forced = f"CASE WHEN c.sure AND c.{rank}_{v} <= c.forced THEN 0 ELSE 1 END"
            tagged = _select(
                [
                    *[f"c.{g}" for g in groups],
                    "c.cid",
                    f"c.{v} AS v",
                    f"{forced} AS k",
                    "c.khi - c.forced AS cap",
                    f"ROW_NUMBER() OVER (PARTITION BY {_part(groups, 'c')}, {forced} "
                    f"ORDER BY c.{v}{desc}) AS ro",
                ],
                "ranked",
                "c",
            ).where(_f("c.cand"), copy=False)
            pool = _select([*keys, "p.v", "p.k"], f"tag_{side}_{v}", "p").where(
                _f("p.k = 0 OR p.ro <= p.cap"), copy=False
            )
            order = f"ORDER BY p.k, p.v{desc}"
            position = f"ROW_NUMBER() OVER ({over_keys} {order})"
            running = (
                f"SUM(CAST(p.v AS DOUBLE)) OVER ({over_keys} {order} "
                "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
            )
            forced_n = f"SUM(1 - p.k) OVER ({over_keys})"
            ratio = _select(
                [
                    *keys,
                    f"CASE WHEN {position} >= {forced_n} THEN {running} / {position} END "
                    f"AS avg_{side}_{v}",
                ],
                f"pool_{side}_{v}",
                "p",
            )
            ctes += [
                (f"tag_{side}_{v}", tagged),
                (f"pool_{side}_{v}", pool),
                (f"ratio_{side}_{v}", ratio),
            ]
    names = [c.rsplit(" AS ", 1)[-1].removeprefix("c.") for c in ranked_cols]
    ratio_names = [f"avg_{side}_{v}" for v in averaged for side in ("lo", "hi")]
    null = "CAST(NULL AS DOUBLE)"
    union: exp.Query = _select(
        [*(f"c.{n}" for n in names), *(f"{null} AS {r}" for r in ratio_names)], "ranked", "c"
    )
    for r in ratio_names:
        branch = _select(
            [
                *(f"p.{n}" if n in groups else f"NULL AS {n}" for n in names),
                *(f"p.{x}" if x == r else f"{null} AS {x}" for x in ratio_names),
            ],
            f"ratio_{r.split('_', 2)[1]}_{r.split('_', 2)[2]}",
            "p",
        )
        union = exp.union(union, branch, distinct=False)
    return [*ctes, ("parts", union)]


def _output(query: Query, groups: list[str], values: dict[str, str]) -> list[exp.Expr]:
    result: list[exp.Expr] = []
    zero = "" if groups else ", 0"
    any_cand = "SUM(CASE WHEN c.cand THEN 1 ELSE 0 END) > 0"
    sensitive_key = any(g in query.release.sensitive for g in query.group_by)
    for item in query.items:
        if isinstance(item, GroupItem):
            g = groups[query.group_by.index(item.column)]
            result.append(exp.alias_(exp.column(g, table="c"), item.name, quoted=True))
            continue
        assert isinstance(item, AggregateItem)
        parts: dict[str, str]
        if item.func == "count":
            low = f"COALESCE(SUM(CASE WHEN c.rn = 1 THEN c.forced ELSE 0 END){zero})"
            high = f"COALESCE(SUM(CASE WHEN c.rn = 1 THEN c.reach ELSE 0 END){zero})"
            parts = {"low": low, "high": high, "est": f"COALESCE(SUM(c.w){zero})"}
            if query.where is None and not sensitive_key:
                # Whole classes: n - g real rows each (NULL if labels split a class).
                parts = {"": f"CASE WHEN {low} = {high} THEN {low} END", **parts}
        else:
            assert item.column is not None
            name = values[item.column]
            v = f"c.{name}"
            cand_v = f"CASE WHEN c.cand THEN {v} END"
            if item.func == "sum":
                lo = (
                    f"SUM(CASE WHEN c.rlo_{name} <= c.klo OR (c.rlo_{name} <= c.khi "
                    f"AND c.lo_{name} < 0) THEN c.lo_{name} ELSE 0 END)"
                )
                hi = (
                    f"SUM(CASE WHEN c.rhi_{name} <= c.klo OR (c.rhi_{name} <= c.khi "
                    f"AND c.hi_{name} > 0) THEN c.hi_{name} ELSE 0 END)"
                )
                parts = {
                    "low": f"CASE WHEN {any_cand} THEN {lo} END",
                    "high": f"CASE WHEN {any_cand} THEN {hi} END",
                    "est": f"CASE WHEN {any_cand} THEN SUM(c.w * {v}) END",
                }
            elif item.func == "avg":
                parts = {
                    "low": f"MIN(c.avg_lo_{name})",
                    "high": f"MAX(c.avg_hi_{name})",
                    "est": f"SUM(c.w * {v}) / NULLIF(SUM(c.w), 0)",
                }
            elif item.func == "min":
                forced_hi = f"c.sure AND c.sdn_{name} <= c.forced"
                parts = {
                    "low": f"MIN({cand_v})",
                    "high": f"COALESCE(MIN(CASE WHEN c.sure AND c.sdn_{name} = c.forced "
                    f"THEN {v} END), MAX({cand_v}))",
                    "est": f"COALESCE(MIN(CASE WHEN c.cand AND ({forced_hi} OR c.w >= 0.5) "
                    f"THEN {v} END), MIN({cand_v}))",
                }
            else:
                forced_lo = f"c.sure AND c.sup_{name} <= c.forced"
                parts = {
                    "low": f"COALESCE(MAX(CASE WHEN c.sure AND c.sup_{name} = c.forced "
                    f"THEN {v} END), MIN({cand_v}))",
                    "high": f"MAX({cand_v})",
                    "est": f"COALESCE(MAX(CASE WHEN c.cand AND ({forced_lo} OR c.w >= 0.5) "
                    f"THEN {v} END), MAX({cand_v}))",
                }
        for suffix, sql in parts.items():
            out = f"{item.name}_{suffix}" if suffix else item.name
            result.append(exp.alias_(_f(sql), out, quoted=True))
    return result
