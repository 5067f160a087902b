"""Interval SQL over an lHD release.

An lHD release publishes each quasi column as a hierarchy label (``Married``,
``[30, 40)``, ``*``) and the sensitive columns exactly. A condition on quasi columns is,
for one published row, SURE (every raw value under its labels satisfies it), NEVER (none
does) or POSSIBLE. Conditions on sensitive columns alone are exact and evaluated as
written.

The WHERE tree is compiled into per-row flags by :mod:`sqlanon.rewriter.lhd_flags`: it is
cut into *components*: maximal subtrees reading one quasi column,
and in an AND or OR chain all the terms reading the same one (evaluated here, in Python,
once per label of that column's :class:`LabelDomain`, by
:mod:`sqlanon.rewriter.lhd_components`; the output carries a ``CASE`` over the label
literals), and conditions reading no quasi column (copied as SQL, exact). Components are
combined per row by Kleene logic over four flags (may/must be true, may/must be false),
which is sound however the components correlate. A row is *sure* when the WHERE must be
true and *possible* when it may be.

Per output group (MODELS.md, "Aggregate answers on generalized releases"):

- COUNT in [#sure, #sure + #possible]; SUM low = sure sum + negative possible values,
  high = sure sum + positive possible values;
- AVG: the extreme averages over adding any subset of possible rows to the sure ones
  (non-empty when there is no sure row): for a fixed number of added rows the smallest
  (largest) values are best, and over a run of equal values the average moves
  monotonically, so candidates at the ends of each run of ties (RANGE frames) suffice;
- MIN in [min(sure and possible), min(sure)], or [min(possible), max(possible)] without
  sure rows; MAX symmetric.

Estimates assume raw values spread uniformly under each label: a row counts with
fraction f (share of the label's leaves, or of its interval, that satisfy the
component; integers for integral intervals and literals); components combine as
independent (AND multiplies, OR = a + b - ab, NOT = 1 - a). COUNT est = sum f, SUM est =
sum f*S, AVG est = their ratio; MIN/MAX est over sure rows and rows with f >= 1/2.

GROUP BY a quasi column groups by its published label. NULL quasi values are values
like any other, with a branch of their own in each hierarchy (NULL below the top, ``*``
at the top): in a column the release published NULLs of (``LabelDomain.nulls``), a NULL
label is a raw NULL, on which a condition is true, false or NULL as SQL says (NULL
selects nothing, negated or not), and ``*`` may hide a NULL; each label's component
code records which of the three the condition may take. COUNT of such a column is
refused (COUNT(*) with ``IS NOT NULL`` says the same); lHD releases refuse NULL
sensitive values, so COUNT of any other column is COUNT(*).

A release with ghosts (``class_ghosts``) is answered by :mod:`sqlanon.rewriter.lhd_ghosts`
from the same per-row flags.
"""

from __future__ import annotations

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter import lhd_ghosts
from sqlanon.rewriter.analyze import AggregateItem, GroupItem, Query
from sqlanon.rewriter.lhd_flags import FlagCompiler
from sqlanon.rewriter.release_info import LabelDomain
from sqlanon.rewriter.sqlbuild import column as _col
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import finish
from sqlanon.rewriter.sqlbuild import fragment as _f
from sqlanon.rewriter.sqlbuild import qualified as _qualified

# --- the query --------------------------------------------------------------------------


def build(query: Query) -> exp.Select:
    """The interval query for a checked lHD query."""
    release = query.release
    if release.domains is None:
        raise UnsupportedQueryError(
            f"release {release.table!r} is an lHD release whose hierarchies are not in the "
            "catalog; build the catalog with sqlanon.intervals.release_catalog on DuckDB"
        )
    for agg in query.aggregates:
        if agg.func == "count" and agg.column in release.quasi:
            if release.domains.get(agg.column, LabelDomain()).nulls:
                raise UnsupportedQueryError(
                    f"COUNT({agg.column}) over {release.table!r}, which published NULL "
                    f"values of {agg.column!r} under generalized labels: write COUNT(*) "
                    f"with WHERE {agg.column} IS NOT NULL"
                )
    compiler = FlagCompiler(
        release, "t", lambda c: c.name, lambda t: _qualified(t, "t"), by_leaves=False
    )
    groups = [f"g{i}" for i in range(len(query.group_by))]
    values: dict[str, str] = {}
    for agg in query.aggregates:
        if agg.func != "count" and agg.column is not None:
            values.setdefault(agg.column, f"v{len(values)}")

    lab_cols: list[exp.Expr] = [
        exp.alias_(_col("t", c), g) for c, g in zip(query.group_by, groups, strict=True)
    ]
    lab_cols += [exp.alias_(_col("t", c), v) for c, v in values.items()]
    if query.where is not None:
        flags = compiler.compile(query.where)
        may_t, must_t = flags.may_t, flags.must_t
        frac: exp.Expr = exp.Case(
            ifs=[
                exp.If(this=exp.not_(flags.may_t.copy(), copy=False), true=_f("0.0")),
                exp.If(this=flags.must_t.copy(), true=_f("1.0")),
            ],
            default=flags.frac,
        )
    else:
        may_t, must_t = exp.true(), exp.true()
        frac = _f("1.0")
    lab_cols += compiler.columns
    lab_cols.append(exp.alias_(exp.Literal.number(1), "one"))  # never an empty SELECT
    table = exp.table_(release.table, db=release.schema, quoted=True, alias="t")
    lab = exp.select(*lab_cols).from_(table, copy=False)
    if release.ghosts:
        return lhd_ghosts.build(query, lab, groups, values, may_t, must_t, frac)
    carried = [exp.column(g, table="l") for g in groups]
    carried += [exp.column(v, table="l") for v in values.values()]
    rows = (
        exp.select(
            *carried,
            exp.alias_(must_t, "sure", copy=False),
            exp.alias_(exp.cast(frac, "DOUBLE", copy=False), "f", copy=False),
        )
        .from_(exp.alias_(_cte("lab"), "l", table=True), copy=False)
        .where(may_t, copy=False)
    )
    ctes: list[tuple[str, exp.Query]] = [("lab", lab), ("rows", rows)]
    averaged = [values[a.column] for a in query.aggregates if a.func == "avg" and a.column]
    if averaged:
        ctes.append(("ranked", _ranked(groups, list(values.values()), sorted(set(averaged)))))
    source = ctes[-1][0]
    final = exp.select(*_output(query, groups, values)).from_(
        exp.alias_(_cte(source), "c", table=True), copy=False
    )
    if groups:
        final = final.group_by(*[exp.column(g, table="c") for g in groups], copy=False)
    return finish(final, query, ctes)


def _window(func: str, partition: list[str], order: str = "") -> str:
    over = f"PARTITION BY {', '.join(partition)}" if partition else ""
    return f"{func} OVER ({over} {order})"


def _ranked(groups: list[str], values: list[str], averaged: list[str]) -> exp.Select:
    """Candidate averages per row: a sure row offers sure-sum / sure-count (no possible row
    added); a possible row offers the sure rows plus every possible row up to its value."""
    part = [f"r.{g}" for g in groups]
    columns = [f"r.{g}" for g in groups] + [f"r.{v}" for v in values] + ["r.sure", "r.f"]
    for v in averaged:
        ssum = _window(f"SUM(CASE WHEN r.sure THEN CAST(r.{v} AS DOUBLE) END)", part)
        sn = _window("COUNT(CASE WHEN r.sure THEN 1 END)", part)
        for side, direction in (("lo", "ASC"), ("hi", "DESC")):
            order = f"ORDER BY r.{v} {direction}"
            run = _window(f"SUM(CAST(r.{v} AS DOUBLE))", [*part, "r.sure"], order)
            cnt = _window("COUNT(*)", [*part, "r.sure"], order)
            columns.append(
                f"CASE WHEN r.sure THEN {ssum} / {sn} "
                f"ELSE (COALESCE({ssum}, 0) + {run}) / ({sn} + {cnt}) END AS avg_{side}_{v}"
            )
    return exp.select(*[_f(c) for c in columns]).from_(
        exp.alias_(_cte("rows"), "r", table=True), copy=False
    )


def _output(query: Query, groups: list[str], values: dict[str, str]) -> list[exp.Expr]:
    result: list[exp.Expr] = []
    zero = "" if groups else ", 0"
    for item in query.items:
        if isinstance(item, GroupItem):
            g = groups[query.group_by.index(item.column)]
            result.append(exp.alias_(exp.column(g, table="c"), item.name, quoted=True))
            continue
        assert isinstance(item, AggregateItem)
        parts: dict[str, str]
        if item.func == "count":
            parts = {
                "low": f"COALESCE(SUM(CASE WHEN c.sure THEN 1 ELSE 0 END){zero})",
                "high": "COUNT(*)",
                "est": f"COALESCE(SUM(c.f){zero})",
            }
            if query.where is None:
                parts = {"": "COUNT(*)", **parts}
        else:
            assert item.column is not None
            v = f"c.{values[item.column]}"
            if item.func == "sum":
                parts = {
                    "low": f"SUM(CASE WHEN c.sure OR {v} < 0 THEN {v} ELSE 0 END)",
                    "high": f"SUM(CASE WHEN c.sure OR {v} > 0 THEN {v} ELSE 0 END)",
                    "est": f"SUM(c.f * {v})",
                }
            elif item.func == "avg":
                name = values[item.column]
                parts = {
                    "low": f"MIN(c.avg_lo_{name})",
                    "high": f"MAX(c.avg_hi_{name})",
                    "est": f"SUM(c.f * {v}) / NULLIF(SUM(c.f), 0)",
                }
            elif item.func == "min":
                parts = {
                    "low": f"MIN({v})",
                    "high": f"COALESCE(MIN(CASE WHEN c.sure THEN {v} END), MAX({v}))",
                    "est": f"COALESCE(MIN(CASE WHEN c.sure OR c.f >= 0.5 THEN {v} END), MIN({v}))",
                }
            else:
                parts = {
                    "low": f"COALESCE(MAX(CASE WHEN c.sure THEN {v} END), MIN({v}))",
                    "high": f"MAX({v})",
                    "est": f"COALESCE(MAX(CASE WHEN c.sure OR c.f >= 0.5 THEN {v} END), MAX({v}))",
                }
        for suffix, sql in parts.items():
            name = f"{item.name}_{suffix}" if suffix else item.name
            result.append(exp.alias_(_f(sql), name, quoted=True))
    return result
