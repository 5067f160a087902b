"""One component of an lHD WHERE, judged on every published label of its column.

A *component* (:mod:`sqlanon.rewriter.lhd_intervals`) reads one quasi column. For one
label it is SURE when every raw value the label may stand for satisfies it, NEVER when
none does and POSSIBLE otherwise, with the share of values that do. Raw values are text
(the leaves of an ARX hierarchy) or numbers (points of a widths interval); a comparison
whose answer depends on the column's SQL type (``'9' < '10'`` as text, not as numbers)
is unknown.

A component is compiled once into a :class:`Component` and then evaluated on many
values: its literals are read once, AND/OR chains are flattened (a chain of thousands
of terms neither recurses thousands of frames deep nor is walked per value), and the
equalities of an OR (``age = 1 OR age = 2``, ``age IN (...)``) become one
:class:`_Equalities` lookup, which answers for n listed literals in O(log n) what n
comparisons would. On numbers a component is a step function (:class:`_Steps`) merged
from its terms', tested by one bisection: a widths label is judged at every literal
inside it, and terms times literals was quadratic. Each leaf is tested once, not once
per label above it. Labels times listed values was the rewrite's cost before (issue 23).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter.release_info import LabelDomain

# Component codes per row: which values the condition may take there. Never (false
# only), possible (true or false), sure (true only); on a NULL raw value it may also be
# NULL (SQL's unknown: neither true nor false): NULL only, true or NULL, false or NULL.
NEVER, POSSIBLE, SURE, NULL_ONLY, TRUE_OR_NULL, FALSE_OR_NULL = 0, 1, 2, 3, 4, 5
MAY_BE_TRUE = (POSSIBLE, SURE, TRUE_OR_NULL)
MAY_BE_FALSE = (NEVER, POSSIBLE, FALSE_OR_NULL)
_TOP = "*"

Value = str | float
Truth = bool | None  # None: cannot tell (counts as both)
SqlTruth = bool | Literal["null"]  # a condition's value on a raw NULL: "null" is unknown
_Test = Callable[[Value], Truth]


_ORDER: dict[type[exp.Expr], Callable[[int], bool]] = {
    exp.EQ: lambda c: c == 0,
    exp.NEQ: lambda c: c != 0,
    exp.LT: lambda c: c < 0,
    exp.LTE: lambda c: c <= 0,
    exp.GT: lambda c: c > 0,
    exp.GTE: lambda c: c >= 0,
}
_FLIP: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
}


# --- comparing one raw value with one literal ---------------------------------------------


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


def _not(a: Truth) -> Truth:
    return None if a is None else not a


def _like(pattern: str, insensitive: bool) -> re.Pattern[str]:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(regex, re.DOTALL | (re.IGNORECASE if insensitive else 0))


def _comparand(left: exp.Expr, right: exp.Expr) -> tuple[Value, bool]:
    """The literal compared with the column, and whether the column is on the right."""
    if isinstance(left.unnest(), exp.Column) and not isinstance(right.unnest(), exp.Column):
        return _literal(right), False
    if isinstance(right.unnest(), exp.Column) and not isinstance(left.unnest(), exp.Column):
        return _literal(left), True
    raise UnsupportedQueryError(
        f"compare a quasi-identifier with a literal, not {left.sql()} with {right.sql()}"
    )


class _Steps:
    """A truth on the real line that may change only at ``points`` (sorted): ``at[i]``
    at ``points[i]``, ``between[i]`` on the open interval just below it and
    ``between[-1]`` above the last. A number is tested by one bisection; a Kleene
    operation on two merges their points."""

    def __init__(self, points: Sequence[float], at: Sequence[Truth], between: Sequence[Truth]):
        self.points, self.at, self.between = points, at, between

    @classmethod
    def constant(cls, truth: Truth) -> _Steps:
        return cls((), (), (truth,))

    def __call__(self, x: float) -> Truth:
        i = bisect_left(self.points, x)
        return self.at[i] if i < len(self.points) and self.points[i] == x else self.between[i]

    def below(self, x: float) -> Truth:
        """The truth just below ``x``."""
        return self.between[bisect_left(self.points, x)]

    def map(self, f: Callable[[Truth], Truth]) -> _Steps:
        return _Steps(self.points, [f(t) for t in self.at], [f(t) for t in self.between])

    def combine(self, other: _Steps, f: Callable[[Truth, Truth], Truth]) -> _Steps:
        points = sorted({*self.points, *other.points})
        at = [f(self(p), other(p)) for p in points]
        between = [f(self.below(p), other.below(p)) for p in points]
        between.append(f(self.between[-1], other.between[-1]))
        return _Steps(points, at, between)


def _all_of(parts: list[_Steps], f: Callable[[Truth, Truth], Truth]) -> _Steps:
    """``f`` folded over ``parts``, in pairs: n parts of p points in O(p log n) merges."""
    while len(parts) > 1:
        pairs = zip(parts[0::2], parts[1::2], strict=False)
        parts = [a.combine(b, f) for a, b in pairs] + parts[len(parts) - len(parts) % 2 :]
    return parts[0]


@dataclass(frozen=True)
class _Compiled:
    """A condition on one column as a function of its raw value: ``text`` for a value
    that is text (a hierarchy leaf), ``number`` for a number (a point of an interval)."""

    text: Callable[[str], Truth]
    number: _Steps


def _constant(truth: Truth) -> _Compiled:
    return _Compiled(lambda v: truth, _Steps.constant(truth))


def _negated(inner: _Compiled) -> _Compiled:
    return _Compiled(lambda v: _not(inner.text(v)), inner.number.map(_not))


class _Equalities:
    """``column = l1 OR column = l2 OR ...`` on one text value, as the OR of the n
    comparisons (true if one is, else unknown if one is, else false) in O(log n).

    With text on both sides a comparison is unknown when the text and the numeric order
    differ (:func:`_cmp`): for a value v not listed, reading as the number x, that is a
    listed numeric text b of the same number, or of a smaller one sorting after v as text,
    or of a larger one sorting before it; prefix maxima and suffix minima of the listed
    texts in numeric order find either with one bisection."""

    def __init__(self, literals: Iterable[Value]) -> None:
        numbers: set[float] = set()
        texts: set[str] = set()
        for literal in literals:
            if isinstance(literal, str):
                texts.add(literal)
            else:
                numbers.add(literal)
        self.numbers = frozenset(numbers)
        self.texts = frozenset(texts)
        numeric = sorted((y, b) for b in texts if (y := _number(b)) is not None)
        self.keys = [y for y, _ in numeric]
        self.prefix_max: list[str] = []
        for _, b in numeric:
            self.prefix_max.append(max(b, self.prefix_max[-1]) if self.prefix_max else b)
        self.suffix_min: list[str] = []
        for _, b in reversed(numeric):
            self.suffix_min.append(min(b, self.suffix_min[-1]) if self.suffix_min else b)
        self.suffix_min.reverse()
        # A number equals a listed number or numeric text; other texts cannot be compared.
        listed = sorted(self.numbers | set(self.keys))
        otherwise = None if len(numeric) < len(texts) else False
        self.steps = _Steps(listed, [True] * len(listed), [otherwise] * (len(listed) + 1))

    def __call__(self, value: str) -> Truth:
        if value in self.texts:
            return True
        x = _number(value)
        if x is None:  # numeric literals cannot be compared; listed texts differ
            return None if self.numbers else False
        if x in self.numbers:
            return True
        low, high = bisect_left(self.keys, x), bisect_right(self.keys, x)
        if low < high:
            return None
        if low > 0 and self.prefix_max[low - 1] > value:
            return None
        if high < len(self.keys) and self.suffix_min[high] < value:
            return None
        return False

    def compiled(self) -> _Compiled:
        return _Compiled(self, self.steps)


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
        return [_comparand(node.this, node.expression)[0]]
    if isinstance(node, exp.In):
        return [_comparand(node.this, item)[0] for item in node.expressions]
    return None


def _chain(kind: type[exp.Expr], nodes: Iterable[exp.Expr]) -> _Compiled:
    """The AND or OR of ``nodes`` (each its own chain's terms are flattened into it).

    An OR's equalities join one lookup; an AND's ``column <> literal`` terms are the
    negated OR of the equalities (De Morgan holds in three-valued logic)."""
    parts: list[_Compiled] = []
    literals: list[Value] = []
    for term in (t for node in nodes for t in operands(node, kind)):
        if kind is exp.Or and (found := _equality(term)) is not None:
            literals += found
        elif kind is exp.And and isinstance(term, exp.NEQ):
            literals.append(_comparand(term.this, term.expression)[0])
        else:
            parts.append(_compile(term))
    if literals:
        equal = _Equalities(literals).compiled()
        parts.append(equal if kind is exp.Or else _negated(equal))
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

    return _Compiled(text, _all_of([part.number for part in parts], _or if decisive else _and))


def _compile(node: exp.Expr) -> _Compiled:
    """``node`` (reading one column) as a function of the column's raw value. Every
    refusal is raised here, before any value is tested."""
    node = node.unnest()
    if isinstance(node, exp.Boolean):
        return _constant(bool(node.this))
    if isinstance(node, exp.Not):
        return _negated(_compile(node.this))
    if isinstance(node, exp.And | exp.Or):
        return _chain(type(node), [node])
    if isinstance(node, exp.Is):
        if isinstance(node.expression, exp.Null):
            return _constant(False)  # a raw value, never NULL (see _null_truth)
        raise UnsupportedQueryError(f"IS {node.expression.sql()} on a quasi-identifier")
    if isinstance(node, exp.Between):
        low = _comparison(exp.GTE, node.this, node.args["low"])
        high = _comparison(exp.LTE, node.this, node.args["high"])
        return _Compiled(
            lambda v: _and(low.text(v), high.text(v)), low.number.combine(high.number, _and)
        )
    if isinstance(node, exp.In):
        return _Equalities(_equality(node) or []).compiled()
    if isinstance(node, exp.Like | exp.ILike):
        if not isinstance(node.this, exp.Column):
            raise UnsupportedQueryError(f"LIKE needs the column on the left: {node.sql()}")
        pattern = _literal(node.expression)
        if not isinstance(pattern, str):
            return _constant(None)
        regex = _like(pattern, isinstance(node, exp.ILike))
        return _Compiled(lambda v: bool(regex.fullmatch(v)), _Steps.constant(None))
    if type(node) in _ORDER:
        return _comparison(type(node), node.this, node.expression)
    raise UnsupportedQueryError(f"{type(node).__name__} on a quasi-identifier: {node.sql()}")


def _comparison(op: type[exp.Expr], left: exp.Expr, right: exp.Expr) -> _Compiled:
    literal, flipped = _comparand(left, right)
    holds = _ORDER[_FLIP.get(op, op) if flipped else op]

    def text(value: str) -> Truth:
        sign = _cmp(value, literal)
        return None if sign is None else holds(sign)

    y = literal if isinstance(literal, float) else _number(literal)
    if y is None:  # text that is no number: no number compares with it
        return _Compiled(text, _Steps.constant(None))
    return _Compiled(text, _Steps([y], [holds(0)], [holds(-1), holds(1)]))


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
            value = float(lit.name) if not lit.is_string else _number(lit.name)
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
