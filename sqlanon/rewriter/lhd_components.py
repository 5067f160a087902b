"""One component of an lHD WHERE, judged on every published label of its column.

A *component* (:mod:`sqlanon.rewriter.lhd_intervals`) reads one quasi column. For one
label it is SURE when every raw value the label may stand for satisfies it, NEVER when
none does and POSSIBLE otherwise, with the share of values that do. Raw values are text
(the leaves of an ARX hierarchy) or numbers (points of a widths interval); a comparison
whose answer depends on the column's SQL type (``'9' < '10'`` as text, not as numbers)
is unknown.

A component is compiled once into a :class:`Component` (from the pieces of
:mod:`sqlanon.rewriter.lhd_truth`) and then evaluated on many values: its literals are
read once, AND/OR chains are flattened (a chain of thousands of terms neither recurses
thousands of frames deep nor is walked per value), and the equalities of an OR become
one lookup. On numbers a component is a step function merged from its terms', tested by
one bisection: a widths label is judged at every literal inside it, and terms times
literals was quadratic. Each leaf is tested once, not once per label above it. Labels
times listed values was the rewrite's cost before (issue 23).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter.lhd_truth import (
    COMPARISONS,
    Compiled,
    Equalities,
    SqlTruth,
    Steps,
    Truth,
    Value,
    comparand,
    comparison,
    constant,
    finite_number,
    fold_steps,
    kleene_and,
    kleene_or,
    like_regex,
    literal_value,
    negated,
)
from sqlanon.rewriter.release_info import LabelDomain

# Component codes per row: which values the condition may take there. Never (false
# only), possible (true or false), sure (true only); on a NULL raw value it may also be
# NULL (SQL's unknown: neither true nor false): NULL only, true or NULL, false or NULL.
NEVER, POSSIBLE, SURE, NULL_ONLY, TRUE_OR_NULL, FALSE_OR_NULL = 0, 1, 2, 3, 4, 5
MAY_BE_TRUE = (POSSIBLE, SURE, TRUE_OR_NULL)
MAY_BE_FALSE = (NEVER, POSSIBLE, FALSE_OR_NULL)
_TOP = "*"


# --- compiling a component ----------------------------------------------------------------


def operands(node: exp.Expr, kind: type[exp.Expr]) -> list[exp.Expr]:
    """The terms of an AND (``kind``) or OR chain through parentheses, left to right,
    without recursion: ``a OR (b OR c)`` -> [a, b, c]."""
    found, stack = [], [node]
    while stack:
        top = stack.pop().unnest()
        if type(top) is kind:
            stack += [top.expression, top.this]
        else:
            found.append(top)
    return found


def _equality(node: exp.Expr) -> list[Value] | None:
    """The literals of ``column = literal`` or ``column IN (literals)``, else None."""
    if isinstance(node, exp.EQ):
        return [comparand(node.this, node.expression)[0]]
    if isinstance(node, exp.In):
        return [comparand(node.this, item)[0] for item in _listed(node)]
    return None


def _listed(node: exp.In) -> list[exp.Expr]:
    """The literal list of ``IN (...)``; an IN over a subquery or anything else is not
    judged here (the caller evaluates it on every leaf of the label, or refuses)."""
    if node.args.get("query") is not None or node.args.get("unnest") is not None:
        raise UnsupportedQueryError(f"IN over a subquery is judged on leaves: {node.sql()}")
    return node.expressions


def _chain(kind: type[exp.Expr], nodes: Iterable[exp.Expr]) -> Compiled:
    """The AND or OR of ``nodes`` (each its own chain's terms are flattened into it).

    An OR's equalities join one lookup; an AND's ``column <> literal`` terms are the
    negated OR of the equalities (De Morgan holds in three-valued logic)."""
    parts: list[Compiled] = []
    literals: list[Value] = []
    for term in (t for node in nodes for t in operands(node, kind)):
        if kind is exp.Or and (found := _equality(term)) is not None:
            literals += found
        elif kind is exp.And and isinstance(term, exp.NEQ):
            literals.append(comparand(term.this, term.expression)[0])
        else:
            parts.append(_compile(term))
    if literals:
        equal = Equalities(literals).compiled()
        parts.append(equal if kind is exp.Or else negated(equal))
    if len(parts) == 1:
        return parts[0]
    decisive = kind is exp.Or  # the truth that settles the chain: True for OR
    texts = [part.text for part in parts]

    def text(value: str) -> Truth:
        unknown = False
        for test in texts:
            truth = test(value)
            if truth is decisive:
                return decisive
            unknown = unknown or truth is None
        return None if unknown else not decisive

    return Compiled(
        text, fold_steps([part.number for part in parts], kleene_or if decisive else kleene_and)
    )


def _compile(node: exp.Expr) -> Compiled:
    """``node`` (reading one column) as a function of the column's raw value. Every
    refusal is raised here, before any value is tested."""
    node = node.unnest()
    if isinstance(node, exp.Boolean):
        return constant(bool(node.this))
    if isinstance(node, exp.Not):
        return negated(_compile(node.this))
    if isinstance(node, exp.And | exp.Or):
        return _chain(type(node), [node])
    if isinstance(node, exp.Is):
        if isinstance(node.expression, exp.Null):
            return constant(False)  # a raw value, never NULL (see _null_truth)
        raise UnsupportedQueryError(f"IS {node.expression.sql()} on a quasi-identifier")
    if isinstance(node, exp.Between):
        low = comparison(exp.GTE, node.this, node.args["low"])
        high = comparison(exp.LTE, node.this, node.args["high"])
        return Compiled(
            lambda v: kleene_and(low.text(v), high.text(v)),
            low.number.combine(high.number, kleene_and),
        )
    if isinstance(node, exp.In):
        return Equalities([comparand(node.this, item)[0] for item in _listed(node)]).compiled()
    if isinstance(node, exp.Like | exp.ILike):
        if not isinstance(node.this, exp.Column):
            raise UnsupportedQueryError(f"LIKE needs the column on the left: {node.sql()}")
        pattern = literal_value(node.expression)
        if not isinstance(pattern, str):
            return constant(None)
        regex = like_regex(pattern, isinstance(node, exp.ILike))
        return Compiled(lambda v: bool(regex.fullmatch(v)), Steps.constant(None))
    if type(node) in COMPARISONS:
        return comparison(type(node), node.this, node.expression)
    raise UnsupportedQueryError(f"{type(node).__name__} on a quasi-identifier: {node.sql()}")


def _null_truth(node: exp.Expr) -> SqlTruth:
    """``node`` (reading one column) where that column is NULL, by SQL's three-valued
    logic: a comparison, BETWEEN, IN or LIKE is unknown, IS NULL true."""
    node = node.unnest()
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Not):
        inner = _null_truth(node.this)
        return inner if inner == "null" else not inner
    if isinstance(node, exp.And | exp.Or):
        return _null_chain(type(node), [node])
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return True
    return "null"


def _null_chain(kind: type[exp.Expr], nodes: Iterable[exp.Expr]) -> SqlTruth:
    decisive = kind is exp.Or  # true decides an OR, false an AND
    found: SqlTruth = not decisive
    for term in (t for node in nodes for t in operands(node, kind)):
        value = _null_truth(term)
        if value is decisive:
            return decisive
        if value == "null":
            found = "null"
    return found


def _points(nodes: Iterable[exp.Expr]) -> list[float]:
    """Numeric literals: the points where the truth on numbers may change."""
    found: set[float] = set()
    for node in nodes:
        for lit in node.find_all(exp.Literal):
            value = float(lit.name) if not lit.is_string else finite_number(lit.name)
            if value is not None:
                found.update((value, -value))  # -value: the literal may sit under a Neg
    return sorted(found)


class Component:
    """The AND or OR (``kind``) of ``nodes``, each reading one quasi column only."""

    def __init__(self, nodes: Sequence[exp.Expr], kind: type[exp.Expr] = exp.And) -> None:
        compiled = _chain(kind, nodes)  # refuses what cannot be judged, before any value
        self.on_null = _null_chain(kind, nodes)
        self._text, self._number = compiled.text, compiled.number
        self.points = _points(nodes)
        self.integral = all(p.is_integer() for p in self.points)

    def truth(self, value: Value) -> Truth:
        return self._number(value) if isinstance(value, float) else self._text(value)

    def cuts(self, low: float, high: float) -> list[float]:
        """The points strictly inside (low, high)."""
        return self.points[bisect_right(self.points, low) : bisect_left(self.points, high)]


# --- one component on one label ------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    code: int
    fraction: float


def _code(true: bool, false: bool, null: bool) -> int:
    """The component code of a condition that may be true, false and/or NULL."""
    if true and false:
        return POSSIBLE
    if true:
        return TRUE_OR_NULL if null else SURE
    if false:
        return FALSE_OR_NULL if null else NEVER
    return NULL_ONLY


def judge_null(component: Component) -> Judgement:
    """The component on a row whose label is NULL: its raw value is NULL."""
    value = component.on_null
    return Judgement(_code(value is True, value is False, value == "null"), float(value is True))


def _with_null(judged: Judgement, component: Component, leaves: int | None) -> Judgement:
    """``judged`` for a label that may also stand for NULL (``*`` in a column holding
    NULLs). For the estimate NULL is one more leaf; ``leaves``: the label's number of
    leaves, None for an interval (then the interval and NULL weigh half each)."""
    value = component.on_null
    true = judged.code in MAY_BE_TRUE or value is True
    false = judged.code in MAY_BE_FALSE or value is False
    null = judged.code in (NULL_ONLY, TRUE_OR_NULL, FALSE_OR_NULL) or value == "null"
    weight = 1.0 if leaves is None else float(leaves)
    fraction = (judged.fraction * weight + float(value is True)) / (weight + 1)
    return Judgement(_code(true, false, null), fraction)


def _judge(truths: Iterable[Truth], weights: Iterable[float] | None = None) -> Judgement:
    values = list(truths)
    w = list(weights) if weights is not None else [1.0] * len(values)
    if all(t is True for t in values):
        return Judgement(SURE, 1.0)
    if all(t is False for t in values):
        return Judgement(NEVER, 0.0)
    total = sum(w)
    share = sum(
        wi * (1.0 if t is True else 0.5 if t is None else 0.0)
        for t, wi in zip(values, w, strict=True)
    )
    return Judgement(POSSIBLE, share / total if total > 0 else 0.5)


def _judge_interval(component: Component, low: float, high: float) -> Judgement:
    """The component over every real in [low, high) (or the point ``low`` when equal)."""
    truth = component.truth
    if low == high:
        return _judge([truth(low)])
    cuts = component.cuts(low, high)
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
    judged = _judge([truth(p) for p in points] + [truth(p) for p, _ in pieces])
    if judged.code != POSSIBLE:
        return judged
    if not (math.isfinite(low) and math.isfinite(high)):
        return Judgement(POSSIBLE, 0.5)
    if low.is_integer() and high.is_integer() and high - low <= 100_000 and component.integral:
        share = _judge([truth(float(i)) for i in range(int(low), int(high))])
    else:  # continuous: the pieces carry the measure, cut points none
        share = _judge([truth(p) for p, _ in pieces], [w for _, w in pieces])
    # The label may hide non-integers: the code stays POSSIBLE, only the share is taken.
    return Judgement(POSSIBLE, share.fraction)


def judge_labels(component: Component, domain: LabelDomain) -> dict[str, Judgement]:
    """The component on every label of ``domain`` (``*`` may hide a NULL, see
    :func:`judge_null` for a NULL label). A leaf label is SURE when all its
    leaves satisfy the component, NEVER when none may, else POSSIBLE with the share that
    do (half for each unknown one): the leaves are tested once each, not once per label
    they are under, and counted per label by set intersection."""
    judged = {}
    if domain.leaves:
        true: set[str] = set()
        unknown: set[str] = set()
        for leaf in frozenset().union(*domain.leaves.values()):
            truth = component.truth(leaf)
            if truth is None:
                unknown.add(leaf)
            elif truth:
                true.add(leaf)
        for label, leaves in domain.leaves.items():
            t, u, n = len(leaves & true), len(leaves & unknown), len(leaves)
            if t == n:
                judged[label] = Judgement(SURE, 1.0)
            elif t == 0 and u == 0:
                judged[label] = Judgement(NEVER, 0.0)
            else:
                judged[label] = Judgement(POSSIBLE, (t + 0.5 * u) / n)
    for label, (low, high) in domain.intervals.items():
        if label not in judged:
            judged[label] = _judge_interval(component, low, high)
    if domain.nulls and _TOP in judged:
        size = len(domain.leaves[_TOP]) if _TOP in domain.leaves else None
        judged[_TOP] = _with_null(judged[_TOP], component, size)
    return judged
