"""Interval SQL over an lHD release.

An lHD release publishes each quasi column as a hierarchy label (``Married``,
``[30, 40)``, ``*``) and the sensitive columns exactly. A condition on quasi columns is,
for one published row, SURE (every raw value under its labels satisfies it), NEVER (none
does) or POSSIBLE. Conditions on sensitive columns alone are exact and evaluated as
written.

The WHERE tree is cut into *components*: maximal subtrees reading one quasi column
(evaluated here, in Python, once per label of that column's :class:`LabelDomain`; the
output carries a ``CASE`` over the label literals) and subtrees reading no quasi column
(copied as SQL, exact). Components are combined per row by Kleene logic over four flags
(may/must be true, may/must be false), which is sound however the components correlate.
A row is *sure* when the WHERE must be true and *possible* when it may be.

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

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter import lhd_ghosts
from sqlanon.rewriter.analyze import AggregateItem, GroupItem, Query
from sqlanon.rewriter.catalog import LabelDomain
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import finish
from sqlanon.rewriter.sqlbuild import fragment as _f

# Component codes per row: which values the condition may take there. Never (false
# only), possible (true or false), sure (true only); on a NULL raw value it may also be
# NULL (SQL's unknown: neither true nor false): NULL only, true or NULL, false or NULL.
_NEVER, _POSSIBLE, _SURE, _NULL_ONLY, _TRUE_OR_NULL, _FALSE_OR_NULL = 0, 1, 2, 3, 4, 5
_MAY_BE_TRUE = (_POSSIBLE, _SURE, _TRUE_OR_NULL)
_MAY_BE_FALSE = (_NEVER, _POSSIBLE, _FALSE_OR_NULL)
_TOP = "*"

Value = str | float
Truth = bool | None  # None: cannot tell (counts as both)
SqlTruth = bool | Literal["null"]  # a condition's value on a raw NULL: "null" is unknown


# --- evaluating a one-column condition on one raw value ------------------------------------


def _literal(node: exp.Expr) -> Value:
    """The Python value of a literal (strings stay text, numbers become floats)."""
    if isinstance(node, exp.Paren):
        return _literal(node.this)
    if isinstance(node, exp.Cast):
        return _literal(node.this)
    if isinstance(node, exp.Neg):
        inner = _literal(node.this)
        if isinstance(inner, float):
            return -inner
        raise UnsupportedQueryError(f"cannot negate {node.this.sql()} in WHERE")
    if isinstance(node, exp.Literal):
        return node.name if node.is_string else float(node.name)
    if isinstance(node, exp.Null):
        raise UnsupportedQueryError(
            "a comparison of a quasi-identifier with NULL is never true; use IS NULL"
        )
    raise UnsupportedQueryError(f"expected a literal, got {node.sql()}")


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


_ORDER: dict[type[exp.Expr], Callable[[int], bool]] = {
    exp.EQ: lambda c: c == 0,
    exp.NEQ: lambda c: c != 0,
    exp.LT: lambda c: c < 0,
    exp.LTE: lambda c: c <= 0,
    exp.GT: lambda c: c > 0,
    exp.GTE: lambda c: c >= 0,
}


def _cmp(a: Value, b: Value) -> int | None:
    """Sign of a - b, or None when the column's SQL type would decide it differently."""
    if isinstance(a, float) or isinstance(b, float):
        x = a if isinstance(a, float) else _number(a)
        y = b if isinstance(b, float) else _number(b)
        if x is None or y is None:
            return None
        return (x > y) - (x < y)
    text = (a > b) - (a < b)
    x, y = _number(a), _number(b)
    if x is not None and y is not None and (x > y) - (x < y) != text:
        return None  # numeric column or text column: the order differs
    return text


def _and(a: Truth, b: Truth) -> Truth:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: Truth, b: Truth) -> Truth:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _like(pattern: str, insensitive: bool) -> re.Pattern[str]:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(regex, re.DOTALL | (re.IGNORECASE if insensitive else 0))


def _truth(node: exp.Expr, value: Value) -> Truth:
    """``node`` (reading one column) for the raw ``value`` of that column."""
    if isinstance(node, exp.Paren):
        return _truth(node.this, value)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Not):
        inner = _truth(node.this, value)
        return None if inner is None else not inner
    if isinstance(node, exp.And):
        return _and(_truth(node.left, value), _truth(node.right, value))
    if isinstance(node, exp.Or):
        return _or(_truth(node.left, value), _truth(node.right, value))
    if isinstance(node, exp.Is):
        if isinstance(node.expression, exp.Null):
            return False  # ``value`` is a raw value, never NULL (see _null_truth)
        raise UnsupportedQueryError(f"IS {node.expression.sql()} on a quasi-identifier")
    if isinstance(node, exp.Between):
        return _and(
            _compare(exp.GTE, node.this, node.args["low"], value),
            _compare(exp.LTE, node.this, node.args["high"], value),
        )
    if isinstance(node, exp.In):
        result: Truth = False
        for item in node.expressions:
            result = _or(result, _compare(exp.EQ, node.this, item, value))
        return result
    if isinstance(node, exp.Like | exp.ILike):
        if not isinstance(node.this, exp.Column):
            raise UnsupportedQueryError(f"LIKE needs the column on the left: {node.sql()}")
        pattern = _literal(node.expression)
        if not isinstance(pattern, str) or not isinstance(value, str):
            return None
        return bool(_like(pattern, isinstance(node, exp.ILike)).fullmatch(value))
    if type(node) in _ORDER:
        return _compare(type(node), node.this, node.expression, value)
    raise UnsupportedQueryError(f"{type(node).__name__} on a quasi-identifier: {node.sql()}")


def _null_truth(node: exp.Expr) -> SqlTruth:
    """``node`` (reading one column) where that column is NULL, by SQL's three-valued
    logic: a comparison, BETWEEN, IN or LIKE is unknown, IS NULL true."""
    if isinstance(node, exp.Paren):
        return _null_truth(node.this)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Not):
        inner = _null_truth(node.this)
        return inner if inner == "null" else not inner
    if isinstance(node, exp.And | exp.Or):
        a, b = _null_truth(node.left), _null_truth(node.right)
        decisive = isinstance(node, exp.Or)  # true decides an OR, false an AND
        if decisive in (a, b):
            return decisive
        return "null" if "null" in (a, b) else not decisive
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return True
    _truth(node, "")  # refuses what _truth refuses, whatever the value
    return "null"


def _compare(op: type[exp.Expr], left: exp.Expr, right: exp.Expr, value: Value) -> Truth:
    flip: dict[type[exp.Expr], type[exp.Expr]] = {
        exp.LT: exp.GT,
        exp.LTE: exp.GTE,
        exp.GT: exp.LT,
        exp.GTE: exp.LTE,
    }
    if isinstance(left.unnest(), exp.Column) and not isinstance(right.unnest(), exp.Column):
        sign = _cmp(value, _literal(right))
    elif isinstance(right.unnest(), exp.Column) and not isinstance(left.unnest(), exp.Column):
        sign = _cmp(value, _literal(left))
        op = flip.get(op, op)
    else:
        raise UnsupportedQueryError(
            f"compare a quasi-identifier with a literal, not {left.sql()} with {right.sql()}"
        )
    return None if sign is None else _ORDER[op](sign)


def _literals(node: exp.Expr) -> list[float]:
    """Numeric literals of a component: the points where its truth on numbers changes."""
    found = []
    for lit in node.find_all(exp.Literal):
        value = float(lit.name) if not lit.is_string else _number(lit.name)
        if value is not None:
            found.extend([value, -value])  # -value: the literal may sit under a Neg
    return sorted(set(found))


# --- one component on one label ------------------------------------------------------------


@dataclass(frozen=True)
class _Judgement:
    code: int
    fraction: float


def _code(true: bool, false: bool, null: bool) -> int:
    """The component code of a condition that may be true, false and/or NULL."""
    if true and false:
        return _POSSIBLE
    if true:
        return _TRUE_OR_NULL if null else _SURE
    if false:
        return _FALSE_OR_NULL if null else _NEVER
    return _NULL_ONLY


def _judge_null(node: exp.Expr) -> _Judgement:
    """``node`` on a row whose label is NULL: its raw value is NULL."""
    value = _null_truth(node)
    return _Judgement(_code(value is True, value is False, value == "null"), float(value is True))


def _with_null(judged: _Judgement, node: exp.Expr, leaves: int | None) -> _Judgement:
    """``judged`` for a label that may also stand for NULL (``*`` in a column holding
    NULLs). For the estimate NULL is one more leaf; ``leaves``: the label's number of
    leaves, None for an interval (then the interval and NULL weigh half each)."""
    value = _null_truth(node)
    true = judged.code in _MAY_BE_TRUE or value is True
    false = judged.code in _MAY_BE_FALSE or value is False
    null = judged.code in (_NULL_ONLY, _TRUE_OR_NULL, _FALSE_OR_NULL) or value == "null"
    weight = 1.0 if leaves is None else float(leaves)
    fraction = (judged.fraction * weight + float(value is True)) / (weight + 1)
    return _Judgement(_code(true, false, null), fraction)


def _judge(truths: Iterable[Truth], weights: Iterable[float] | None = None) -> _Judgement:
    values = list(truths)
    w = list(weights) if weights is not None else [1.0] * len(values)
    if all(t is True for t in values):
        return _Judgement(_SURE, 1.0)
    if all(t is False for t in values):
        return _Judgement(_NEVER, 0.0)
    total = sum(w)
    share = sum(
        wi * (1.0 if t is True else 0.5 if t is None else 0.0)
        for t, wi in zip(values, w, strict=True)
    )
    return _Judgement(_POSSIBLE, share / total if total > 0 else 0.5)


def _judge_interval(node: exp.Expr, low: float, high: float) -> _Judgement:
    """``node`` over every real in [low, high) (or the point ``low`` when equal)."""
    if low == high:
        return _judge([_truth(node, low)])
    cuts = [c for c in _literals(node) if low < c < high]
    points = [low] if math.isfinite(low) else []
    edges = [low, *cuts, high]
    pieces: list[tuple[float, float]] = []  # (test point, weight)
    for a, b in zip(edges, edges[1:], strict=False):
        if math.isfinite(a) and math.isfinite(b):
            pieces.append(((a + b) / 2, b - a))
        elif math.isfinite(b):
            pieces.append((b - 1, math.inf))
        elif math.isfinite(a):
            pieces.append((a + 1, math.inf))
        else:
            pieces.append((0.0, math.inf))
    points += cuts
    truths = [_truth(node, p) for p in points] + [_truth(node, p) for p, _ in pieces]
    judged = _judge(truths)
    if judged.code != _POSSIBLE:
        return judged
    if not (math.isfinite(low) and math.isfinite(high)):
        return _Judgement(_POSSIBLE, 0.5)
    literals = _literals(node)
    if (
        low.is_integer()
        and high.is_integer()
        and high - low <= 100_000
        and all(c.is_integer() for c in literals)
    ):
        share = _judge([_truth(node, float(i)) for i in range(int(low), int(high))])
    else:  # continuous: the pieces carry the measure, cut points none
        share = _judge([_truth(node, p) for p, _ in pieces], [w for _, w in pieces])
    # The label may hide non-integers: the code stays POSSIBLE, only the share is taken.
    return _Judgement(_POSSIBLE, share.fraction)


def _judge_label(node: exp.Expr, domain: LabelDomain, label: str) -> _Judgement | None:
    if label in domain.leaves:
        leaves = sorted(domain.leaves[label])
        judged = _judge([_truth(node, leaf) for leaf in leaves])
        return _with_null(judged, node, len(leaves)) if domain.nulls and label == _TOP else judged
    if label in domain.intervals:
        judged = _judge_interval(node, *domain.intervals[label])
        return _with_null(judged, node, None) if domain.nulls and label == _TOP else judged
    return None


# --- the WHERE tree as per-row flags ------------------------------------------------------


@dataclass
class _Flags:
    """SQL booleans: the condition may/must be true, may/must be false; and the fraction."""

    may_t: exp.Expr
    must_t: exp.Expr
    may_f: exp.Expr
    must_f: exp.Expr
    frac: exp.Expr


class _Compiler:
    def __init__(self, query: Query) -> None:
        self.release = query.release
        assert self.release.domains is not None
        self.domains = self.release.domains
        self.columns: list[exp.Expr] = []  # per-row columns of the "lab" CTE

    def _add(self, expr: exp.Expr) -> exp.Column:
        name = f"p{len(self.columns)}"
        self.columns.append(exp.alias_(expr, name))
        return exp.column(name, table="l")

    def flags(self, node: exp.Expr) -> _Flags:
        node = node.unnest()
        quasi = {c.name for c in node.find_all(exp.Column)} & set(self.release.quasi)
        if not quasi:
            exact = _qualified(node, "t")
            true = self._add(exp.func("COALESCE", exact, exp.false()))
            false = self._add(exp.func("COALESCE", exp.not_(exact.copy()), exp.false()))
            exact_frac = exp.Case(ifs=[exp.If(this=true.copy(), true=_f("1.0"))], default=_f("0.0"))
            return _Flags(true, true.copy(), false, false.copy(), exact_frac)
        if len(quasi) == 1 and not ({c.name for c in node.find_all(exp.Column)} - quasi):
            return self._component(node, quasi.pop())
        if isinstance(node, exp.Not):
            inner = self.flags(node.this)
            one_minus = exp.Sub(this=_f("1.0"), expression=exp.paren(inner.frac))
            return _Flags(inner.may_f, inner.must_f, inner.may_t, inner.must_t, one_minus)
        if isinstance(node, exp.And | exp.Or):
            a, b = self.flags(node.left), self.flags(node.right)
            if isinstance(node, exp.And):
                frac: exp.Expr = exp.Mul(this=exp.paren(a.frac), expression=exp.paren(b.frac))
                return _Flags(
                    exp.and_(a.may_t, b.may_t),
                    exp.and_(a.must_t, b.must_t),
                    exp.or_(a.may_f, b.may_f),
                    exp.or_(a.must_f, b.must_f),
                    frac,
                )
            pa, pb = exp.paren(a.frac), exp.paren(b.frac)
            frac = exp.Sub(
                this=exp.Add(this=pa, expression=pb),
                expression=exp.Mul(this=pa.copy(), expression=pb.copy()),
            )
            return _Flags(
                exp.or_(a.may_t, b.may_t),
                exp.or_(a.must_t, b.must_t),
                exp.and_(a.may_f, b.may_f),
                exp.and_(a.must_f, b.must_f),
                frac,
            )
        raise UnsupportedQueryError(
            f"a condition relating several columns is not supported: {_show(node)}; "
            "compare each quasi-identifier with literals"
        )

    def _component(self, node: exp.Expr, column: str) -> _Flags:
        domain = self.domains.get(column, LabelDomain())
        codes: list[exp.If] = []
        fractions: list[exp.If] = []
        labels = sorted({*domain.leaves, *domain.intervals})
        if domain.nulls:  # a NULL label: the raw value is NULL
            on_null = _judge_null(node)
            is_null = exp.Is(this=_col("t", column), expression=exp.Null())
            codes.append(exp.If(this=is_null, true=exp.Literal.number(on_null.code)))
            fractions.append(
                exp.If(this=is_null.copy(), true=exp.Literal.number(repr(on_null.fraction)))
            )
        for label in labels:
            judged = _judge_label(node, domain, label)
            if judged is None:
                continue
            match = exp.EQ(this=_col("t", column), expression=exp.Literal.string(label))
            codes.append(exp.If(this=match, true=exp.Literal.number(judged.code)))
            fractions.append(
                exp.If(this=match.copy(), true=exp.Literal.number(repr(float(judged.fraction))))
            )
        # A label the catalog does not know may or may not satisfy the condition.
        code = self._add(exp.Case(ifs=codes, default=exp.Literal.number(_POSSIBLE)))
        # DOUBLE, not DECIMAL: products of a few fractions of 17 digits overflow DuckDB's
        # decimal scale (38) in the OR's inclusion-exclusion
        frac = self._add(
            exp.Cast(
                this=exp.Case(ifs=fractions, default=_f("0.5")), to=exp.DataType.build("DOUBLE")
            )
        )
        return _Flags(
            _f(f"{code.sql()} IN {_MAY_BE_TRUE}"),
            _f(f"{code.sql()} = {_SURE}"),
            _f(f"{code.sql()} IN {_MAY_BE_FALSE}"),
            _f(f"{code.sql()} = {_NEVER}"),
            frac,
        )


def _col(table: str, name: str) -> exp.Column:
    return exp.column(name, table=table, quoted=True)


def _qualified(predicate: exp.Expr, table: str) -> exp.Expr:
    return predicate.copy().transform(
        lambda n: _col(table, n.name) if isinstance(n, exp.Column) else n
    )


def _show(term: exp.Expr) -> str:
    return term.transform(lambda n: exp.column(n.name) if isinstance(n, exp.Column) else n).sql()


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
                exp.If(this=exp.not_(flags.may_t.copy()), true=_f("0.0")),
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
            exp.alias_(must_t, "sure"),
            exp.alias_(exp.cast(frac, "DOUBLE"), "f"),
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
