"""Interval SQL over an lHD release.

An lHD release publishes each quasi column as a hierarchy label (``Married``,
``[30, 40)``, ``*``) and the sensitive columns exactly. A condition on quasi columns is,
for one published row, SURE (every raw value under its labels satisfies it), NEVER (none
does) or POSSIBLE. Conditions on sensitive columns alone are exact and evaluated as
written.

The WHERE tree is cut into *components*: maximal subtrees reading one quasi column,
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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter import lhd_ghosts
from sqlanon.rewriter.analyze import AggregateItem, GroupItem, Query
from sqlanon.rewriter.lhd_components import (
    MAY_BE_FALSE,
    MAY_BE_TRUE,
    NEVER,
    SURE,
    Component,
    Judgement,
    judge_labels,
    judge_null,
    operands,
)
from sqlanon.rewriter.release_info import LabelDomain
from sqlanon.rewriter.sqlbuild import column as _col
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import finish
from sqlanon.rewriter.sqlbuild import fragment as _f
from sqlanon.rewriter.sqlbuild import qualified as _qualified
from sqlanon.rewriter.sqlbuild import show as _show

_DOUBLE = exp.DataType(this=exp.DataType.Type.DOUBLE)  # DataType.build parses, per call

# --- the WHERE tree as per-row flags ------------------------------------------------------


@dataclass
class _Flags:
    """SQL booleans: the condition may/must be true, may/must be false; and the fraction."""

    may_t: exp.Expr
    must_t: exp.Expr
    may_f: exp.Expr
    must_f: exp.Expr
    frac: exp.Expr


def _column_names(tree: exp.Expr) -> dict[int, frozenset[str]]:
    """The names of the columns under each node of ``tree`` (by ``id``), in one pass:
    looking them up per node would walk a chain of n terms n times."""
    names: dict[int, frozenset[str]] = {}
    for node in reversed(list(tree.walk(bfs=False))):  # children before their parents
        found = [names[id(child)] for child in node.iter_expressions()]
        if isinstance(node, exp.Column):
            found.append(frozenset({node.name}))
        names[id(node)] = frozenset().union(*found) if len(found) != 1 else found[0]
    return names


class _Compiler:
    def __init__(self, query: Query) -> None:
        self.release = query.release
        assert self.release.domains is not None
        self.domains = self.release.domains
        self.quasi = frozenset(self.release.quasi)
        self.names = _column_names(query.where) if query.where is not None else {}
        self.columns: list[exp.Expr] = []  # per-row columns of the "lab" CTE
        self.known: dict[str, exp.Column] = {}  # quasi column -> its lab column "label known"
        # (column, labels per code, labels per share) -> (code column, share expression)
        self.judged: dict[tuple[Any, ...], tuple[exp.Column, exp.Expr]] = {}

    def _add(self, expr: exp.Expr) -> exp.Column:
        name = f"p{len(self.columns)}"
        self.columns.append(exp.alias_(expr, name, copy=False))
        return exp.column(name, table="l")

    def _kind(self, node: exp.Expr) -> str | None:
        """The empty string for a condition reading no quasi column, the column's name
        for one reading a single quasi column and nothing else, None for any other."""
        names = self.names[id(node)]
        quasi = names & self.quasi
        if not quasi:
            return ""
        return next(iter(quasi)) if len(quasi) == 1 and names == quasi else None

    def flags(self, node: exp.Expr) -> _Flags:
        node = node.unnest()
        kind = self._kind(node)
        if kind == "":
            return self._exact([node], exp.And)
        if kind is not None:
            return self._component([node], exp.And, kind)
        if isinstance(node, exp.Not):
            inner = self.flags(node.this)
            return _Flags(
                inner.may_f, inner.must_f, inner.may_t, inner.must_t, _one_minus(inner.frac)
            )
        if isinstance(node, exp.And | exp.Or):
            return self._chain(node)
        raise UnsupportedQueryError(
            f"a condition relating several columns is not supported: {_show(node)}; "
            "compare each quasi-identifier with literals"
        )

    def _chain(self, node: exp.And | exp.Or) -> _Flags:
        """An AND or OR chain, its terms gathered (in order of first appearance) into one
        component per quasi column, one exact condition and the mixed terms; the parts
        combine by Kleene logic, the fractions as independent events. Gathering a
        column's terms is exact (it is one component like ``age IN (...)``) and keeps the
        output linear: one CASE per column, not one per term."""
        kind = type(node)
        parts: dict[str | int, list[exp.Expr]] = {}
        for term in operands(node, kind):
            found = self._kind(term)
            parts.setdefault(id(term) if found is None else found, []).append(term)
        flags = [
            self.flags(terms[0])
            if isinstance(key, int)
            else self._exact(terms, kind)
            if key == ""
            else self._component(terms, kind, key)
            for key, terms in parts.items()
        ]
        if len(flags) == 1:
            return flags[0]
        every, some = (exp.and_, exp.or_) if kind is exp.And else (exp.or_, exp.and_)

        def joined(combine: Callable[..., exp.Expr], field: str) -> exp.Expr:
            return combine(*[getattr(f, field) for f in flags], copy=False)

        # AND: the product of the fractions; OR: 1 - the product of their complements
        if kind is exp.And:
            frac = _product([f.frac for f in flags])
        else:
            frac = _one_minus(_product([_one_minus(f.frac) for f in flags]))
        return _Flags(
            joined(every, "may_t"),
            joined(every, "must_t"),
            joined(some, "may_f"),
            joined(some, "must_f"),
            frac,
        )

    def _exact(self, terms: list[exp.Expr], kind: type[exp.Expr]) -> _Flags:
        """Terms reading no quasi column: exact, copied as SQL."""
        combine = exp.and_ if kind is exp.And else exp.or_
        exact = combine(*[_qualified(t, "t") for t in terms], copy=False)
        true = self._add(exp.func("COALESCE", exact, exp.false()))
        false = self._add(exp.func("COALESCE", exp.not_(exact.copy()), exp.false()))
        exact_frac = exp.Case(ifs=[exp.If(this=true.copy(), true=_f("1.0"))], default=_f("0.0"))
        return _Flags(true, true.copy(), false, false.copy(), exact_frac)

    def _component(self, terms: list[exp.Expr], kind: type[exp.Expr], column: str) -> _Flags:
        """Per row: the component's code on the row's label (a CASE listing the labels
        of all codes but the most frequent, its ELSE), its share of the label's values
        where neither SURE nor NEVER, and whether the catalog knows the label at all (a
        label it does not know may or may not satisfy the condition). Listing every
        label per component made a chain of n terms on several columns n CASEs of every
        label; an equality now lists the few labels over its value. In a column holding
        NULLs a NULL label is a label like the others (``None`` below)."""
        domain = self.domains.get(column, LabelDomain())
        labels = sorted({*domain.leaves, *domain.intervals})
        if not labels and not domain.nulls:
            return _Flags(exp.true(), exp.false(), exp.true(), exp.false(), _f("0.5"))
        component = Component(terms, kind)
        judged = judge_labels(component, domain)
        entries: list[tuple[str | None, Judgement]] = [(x, judged[x]) for x in labels]
        if domain.nulls:
            entries.insert(0, (None, judge_null(component)))
        by_code: dict[Any, list[str | None]] = {}
        by_share: dict[Any, list[str | None]] = {}
        for label, found in entries:
            by_code.setdefault(found.code, []).append(label)
            if found.code not in (SURE, NEVER):  # whose fraction is not 1 or 0
                by_share.setdefault(found.fraction, []).append(label)
        # Components judged alike (``sex = 'F'`` in every term of an OR) share columns.
        key = (column, _frozen(by_code), _frozen(by_share))
        if key not in self.judged:
            code_column = self._add(self._by_label(column, by_code))
            # DOUBLE, not DECIMAL: products of a few fractions of 17 digits overflow
            # DuckDB's decimal scale (38)
            shares = by_share or {0.5: []}  # no share: every known label is SURE or NEVER
            share: exp.Expr = exp.Cast(this=self._by_label(column, shares), to=_DOUBLE.copy())
            if len(by_share) > 1:  # a CASE over labels: computed once per row
                share = self._add(share)
            self.judged[key] = (code_column, share)
        code_column, share = self.judged[key]
        known = self._known(column, labels, domain.nulls)

        def code_in(*values: int) -> exp.Expr:
            listed = [exp.Literal.number(v) for v in values]
            if len(listed) == 1:
                return exp.EQ(this=code_column.copy(), expression=listed[0])
            return exp.In(this=code_column.copy(), expressions=listed)

        frac = exp.Case(
            ifs=[
                exp.If(this=exp.not_(known.copy(), copy=False), true=_f("0.5")),
                exp.If(this=code_in(SURE), true=_f("1.0")),
                exp.If(this=code_in(NEVER), true=_f("0.0")),
            ],
            default=share.copy(),
        )
        unknown = exp.not_(known.copy(), copy=False)
        return _Flags(
            exp.or_(code_in(*MAY_BE_TRUE), unknown, copy=False),
            exp.and_(code_in(SURE), known.copy(), copy=False),
            exp.or_(code_in(*MAY_BE_FALSE), unknown.copy(), copy=False),
            exp.and_(code_in(NEVER), known.copy(), copy=False),
            frac,
        )

    def _known(self, column: str, labels: list[str], nulls: bool) -> exp.Column:
        """The lab column telling whether the row's label of ``column`` is one of
        ``labels`` or, in a column holding NULLs, NULL (one per column, shared by its
        components)."""
        if column not in self.known:
            found = exp.In(
                this=_col("t", column), expressions=[exp.Literal.string(x) for x in labels]
            )
            known = exp.func("COALESCE", found, exp.Boolean(this=nulls)) if labels else None
            self.known[column] = self._add(known or exp.Boolean(this=nulls))
        return self.known[column]

    def _by_label(self, column: str, groups: dict[Any, list[str | None]]) -> exp.Expr:
        """``CASE WHEN t.column IN (labels) THEN value ... ELSE value END``, the value
        with the most labels being the ELSE (the literal alone if there is one value);
        ``None`` among the labels is a NULL label (``t.column IS NULL``)."""
        values = sorted(groups, key=lambda v: len(groups[v]))
        ifs = [
            exp.If(this=self._label_in(column, groups[value]), true=exp.Literal.number(repr(value)))
            for value in values[:-1]
        ]
        default = exp.Literal.number(repr(values[-1]))
        return exp.Case(ifs=ifs, default=default) if ifs else default

    def _label_in(self, column: str, labels: list[str | None]) -> exp.Expr:
        texts = [exp.Literal.string(label) for label in labels if label is not None]
        tests: list[exp.Expr] = [exp.In(this=_col("t", column), expressions=texts)] if texts else []
        if None in labels:
            tests.insert(0, exp.Is(this=_col("t", column), expression=exp.Null()))
        return exp.or_(*tests, copy=False)


def _frozen(groups: dict[Any, list[str | None]]) -> tuple[tuple[Any, tuple[str | None, ...]], ...]:
    return tuple(sorted((value, tuple(labels)) for value, labels in groups.items()))


def _product(factors: list[exp.Expr]) -> exp.Expr:
    result: exp.Expr = exp.paren(factors[0], copy=False)
    for factor in factors[1:]:
        result = exp.Mul(this=result, expression=exp.paren(factor, copy=False))
    return result


def _one_minus(frac: exp.Expr) -> exp.Expr:
    return exp.Sub(this=_f("1.0"), expression=exp.paren(frac, copy=False))


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
    compiler = _Compiler(query)
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
        flags = compiler.flags(query.where)
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
