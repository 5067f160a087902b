"""The truth of a condition on one raw value of an lHD quasi column, in three values.

A raw value is text (a leaf of an ARX hierarchy) or a number (a point of a widths
interval). A condition on it is true, false or unknown (None: cannot tell, counts as
both); a comparison whose answer depends on the column's SQL type (``'9' < '10'`` as
text, not as numbers) is unknown. :class:`Compiled` holds a condition as a function of
the value: on text a test, on numbers a step function (:class:`Steps`) tested by one
bisection, a Kleene operation on two merging their points. The equalities of an OR
(``age = 1 OR age = 2``, ``age IN (...)``) are one :class:`Equalities` lookup, which
answers for n listed literals in O(log n) what n comparisons would.

:mod:`sqlanon.rewriter.lhd_components` compiles a component from these pieces and
judges it on every label.
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

Value = str | float
Truth = bool | None  # None: cannot tell (counts as both)
SqlTruth = bool | Literal["null"]  # a condition's value on a raw NULL: "null" is unknown

#: The comparison operators, each a test of the sign of (raw value - literal).
COMPARISONS: dict[type[exp.Expr], Callable[[int], bool]] = {
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


def literal_value(node: exp.Expr) -> Value:
    """The Python value of a literal (strings stay text, numbers become floats)."""
    if isinstance(node, exp.Paren):
        return literal_value(node.this)
    if isinstance(node, exp.Cast):
        return literal_value(node.this)
    if isinstance(node, exp.Neg):
        inner = literal_value(node.this)
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


def finite_number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _cmp(a: Value, b: Value) -> int | None:
    """Sign of a - b, or None when the column's SQL type would decide it differently."""
    if isinstance(a, float) or isinstance(b, float):
        x = a if isinstance(a, float) else finite_number(a)
        y = b if isinstance(b, float) else finite_number(b)
        if x is None or y is None:
            return None
        return (x > y) - (x < y)
    text = (a > b) - (a < b)
    x, y = finite_number(a), finite_number(b)
    if x is not None and y is not None and (x > y) - (x < y) != text:
        return None  # numeric column or text column: the order differs
    return text


def kleene_and(a: Truth, b: Truth) -> Truth:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def kleene_or(a: Truth, b: Truth) -> Truth:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def kleene_not(a: Truth) -> Truth:
    return None if a is None else not a


def like_regex(pattern: str, insensitive: bool) -> re.Pattern[str]:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(regex, re.DOTALL | (re.IGNORECASE if insensitive else 0))


def comparand(left: exp.Expr, right: exp.Expr) -> tuple[Value, bool]:
    """The literal compared with the column, and whether the column is on the right."""
    if isinstance(left.unnest(), exp.Column) and not isinstance(right.unnest(), exp.Column):
        return literal_value(right), False
    if isinstance(right.unnest(), exp.Column) and not isinstance(left.unnest(), exp.Column):
        return literal_value(left), True
    raise UnsupportedQueryError(
        f"compare a quasi-identifier with a literal, not {left.sql()} with {right.sql()}"
    )


class Steps:
    """A truth on the real line that may change only at ``points`` (sorted): ``at[i]``
    at ``points[i]``, ``between[i]`` on the open interval just below it and
    ``between[-1]`` above the last. A number is tested by one bisection; a Kleene
    operation on two merges their points."""

    def __init__(self, points: Sequence[float], at: Sequence[Truth], between: Sequence[Truth]):
        self.points, self.at, self.between = points, at, between

    @classmethod
    def constant(cls, truth: Truth) -> Steps:
        return cls((), (), (truth,))

    def __call__(self, x: float) -> Truth:
        i = bisect_left(self.points, x)
        return self.at[i] if i < len(self.points) and self.points[i] == x else self.between[i]

    def below(self, x: float) -> Truth:
        """The truth just below ``x``."""
        return self.between[bisect_left(self.points, x)]

    def map(self, f: Callable[[Truth], Truth]) -> Steps:
        return Steps(self.points, [f(t) for t in self.at], [f(t) for t in self.between])

    def combine(self, other: Steps, f: Callable[[Truth, Truth], Truth]) -> Steps:
        points = sorted({*self.points, *other.points})
        at = [f(self(p), other(p)) for p in points]
        between = [f(self.below(p), other.below(p)) for p in points]
        between.append(f(self.between[-1], other.between[-1]))
        return Steps(points, at, between)


def fold_steps(parts: list[Steps], f: Callable[[Truth, Truth], Truth]) -> Steps:
    """``f`` folded over ``parts``, in pairs: n parts of p points in O(p log n) merges."""
    while len(parts) > 1:
        pairs = zip(parts[0::2], parts[1::2], strict=False)
        parts = [a.combine(b, f) for a, b in pairs] + parts[len(parts) - len(parts) % 2 :]
    return parts[0]


@dataclass(frozen=True)
class Compiled:
    """A condition on one column as a function of its raw value: ``text`` for a value
    that is text (a hierarchy leaf), ``number`` for a number (a point of an interval)."""

    text: Callable[[str], Truth]
    number: Steps


def constant(truth: Truth) -> Compiled:
    return Compiled(lambda v: truth, Steps.constant(truth))


def negated(inner: Compiled) -> Compiled:
    return Compiled(lambda v: kleene_not(inner.text(v)), inner.number.map(kleene_not))


class Equalities:
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
        numeric = sorted((y, b) for b in texts if (y := finite_number(b)) is not None)
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
        self.steps = Steps(listed, [True] * len(listed), [otherwise] * (len(listed) + 1))

    def __call__(self, value: str) -> Truth:
        if value in self.texts:
            return True
        x = finite_number(value)
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

    def compiled(self) -> Compiled:
        return Compiled(self, self.steps)


def comparison(op: type[exp.Expr], left: exp.Expr, right: exp.Expr) -> Compiled:
    """``left op right``, one side the column and the other a literal."""
    literal, flipped = comparand(left, right)
    holds = COMPARISONS[_FLIP.get(op, op) if flipped else op]

    def text(value: str) -> Truth:
        sign = _cmp(value, literal)
        return None if sign is None else holds(sign)

    y = literal if isinstance(literal, float) else finite_number(literal)
    if y is None:  # text that is no number: no number compares with it
        return Compiled(text, Steps.constant(None))
    return Compiled(text, Steps([y], [holds(0)], [holds(-1), holds(1)]))
