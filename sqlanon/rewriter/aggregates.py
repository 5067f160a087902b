"""Analyst aggregates as :class:`~sqlanon.rewriter.shape.Atom`.

``COUNT(*)``, ``COUNT(1)``, ``COUNT(x)``, ``COUNT(DISTINCT x)``, ``SUM``, ``AVG``,
``MIN``, ``MAX`` of any per-row expression; ``MEDIAN(x)`` (= ``quantile_cont(x, 0.5)``),
``quantile_cont(x, q)``, ``quantile_disc(x, q)``, ``percentile_cont(q) WITHIN GROUP
(ORDER BY x)`` (``DESC``: ``1 - q``), ``percentile_disc``; ``STDDEV``/``STDDEV_SAMP``,
``STDDEV_POP``, ``VARIANCE``/``VAR_SAMP``, ``VAR_POP``; each optionally with
``FILTER (WHERE ...)`` (:attr:`Atom.where`).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from sqlanon.rewriter.relations import refuse
from sqlanon.rewriter.shape import Atom

_PLAIN: dict[type[exp.Expr], str] = {
    exp.Sum: "sum",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
    exp.Stddev: "stddev_samp",
    exp.StddevSamp: "stddev_samp",
    exp.StddevPop: "stddev_pop",
    exp.Variance: "var_samp",
    exp.VariancePop: "var_pop",
}

_QUANTILES: dict[type[exp.Expr], str] = {
    exp.PercentileCont: "quantile_cont",
    exp.PercentileDisc: "quantile_disc",
}


def atom_of(node: exp.Expr, row: Callable[[exp.Expr], exp.Expr]) -> Atom:
    """The atom of aggregate ``node``; ``row`` checks and resolves a per-row expression."""
    where = None
    if isinstance(node, exp.Filter):
        where = row(node.expression.this)
        node = node.this
    if isinstance(node, exp.WithinGroup):
        return _within_group(node, where, row)
    if isinstance(node, exp.Count):
        arg = node.this
        if isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1:
                raise refuse("COUNT(DISTINCT ...) of several expressions", node)
            return Atom("count_distinct", row(arg.expressions[0]), where)
        if arg is None or isinstance(arg, exp.Star) or _non_null_literal(arg):
            return Atom("count", None, where)
        return Atom("count", row(arg), where)
    if isinstance(node, exp.Median):
        return Atom("quantile_cont", row(node.this), where, 0.5)
    if type(node) in _QUANTILES:
        return Atom(_QUANTILES[type(node)], row(node.this), where, _fraction(node.expression))
    if type(node) in _PLAIN:
        func = _PLAIN[type(node)]
        if isinstance(node.this, exp.Distinct):
            raise refuse(f"{func.upper()}(DISTINCT ...)", node)
        if node.expressions or not isinstance(node.this, exp.Expr):
            raise refuse(f"this {func.upper()}", node)
        return Atom(func, row(node.this), where)
    raise refuse(f"the aggregate {type(node).__name__.upper()}", node)


def _within_group(
    node: exp.WithinGroup, where: exp.Expr | None, row: Callable[[exp.Expr], exp.Expr]
) -> Atom:
    func = _QUANTILES.get(type(node.this))
    order = node.expression
    if func is None or not isinstance(order, exp.Order) or len(order.expressions) != 1:
        raise refuse("this WITHIN GROUP aggregate", node)
    fraction = _fraction(node.this.this)
    ordered = order.expressions[0]
    if ordered.args.get("desc"):
        fraction = 1 - fraction
    return Atom(func, row(ordered.this), where, fraction)


def _fraction(node: exp.Expr | None) -> float:
    if isinstance(node, exp.Literal) and not node.is_string:
        value = float(node.name)
        if 0 <= value <= 1:
            return value
    raise refuse("a quantile fraction that is not a number in [0, 1]", node)


def _non_null_literal(node: exp.Expr) -> bool:
    return isinstance(node, exp.Literal) or (
        isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal)
    )
