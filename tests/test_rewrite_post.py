"""The post layer alone: for random atom intervals and a random point inside each, every
post expression's value at the point lies in its [low, high]; HAVING's maybe/surely
flags are right. Run on DuckDB."""

from __future__ import annotations

import math
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from sqlanon.rewriter import ReleaseInfo
from sqlanon.rewriter.answer import _branch
from sqlanon.rewriter.atoms import AtomsQuery
from sqlanon.rewriter.normalize import ATOM, Branch, Item, atom_ref
from sqlanon.rewriter.shape import Atom, Shape

INFO = ReleaseInfo("t", 1, "t_v1", "ke", ("a",), ("s",), "t_v1_bounds")
ATOMS = (Atom("sum", exp.column("s")), Atom("count"), Atom("avg", exp.column("s")))
CON = duckdb.connect()
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

number = st.integers(-50, 50).map(lambda i: exp.Literal.number(i))


def _unary(kind: type[exp.Expr]) -> Any:
    return lambda x: kind(this=exp.Paren(this=x) if kind is exp.Neg else x)


def _p(node: exp.Expr) -> exp.Expr:
    return exp.Paren(this=node)


def expressions() -> st.SearchStrategy[exp.Expr]:
    leaves = st.one_of(st.integers(0, 2).map(atom_ref), number)

    def extend(inner: st.SearchStrategy[exp.Expr]) -> st.SearchStrategy[exp.Expr]:
        pairs = st.tuples(inner, inner)
        return st.one_of(
            # operands in parentheses: the truth runs the tree's SQL text, which sqlglot
            # prints without the parentheses a tree like a - (b + c) needs
            pairs.map(lambda p: exp.Add(this=_p(p[0]), expression=_p(p[1]))),
            pairs.map(lambda p: exp.Sub(this=_p(p[0]), expression=_p(p[1]))),
            pairs.map(lambda p: exp.Mul(this=_p(p[0]), expression=_p(p[1]))),
            pairs.map(
                lambda p: exp.Div(this=_p(p[0]), expression=_p(p[1]), typed=False, safe=False)
            ),
            inner.map(_unary(exp.Neg)),
            inner.map(_unary(exp.Floor)),
            inner.map(_unary(exp.Ceil)),
            inner.map(_unary(exp.Abs)),
            inner.map(_unary(exp.Ln)),
            inner.map(_unary(exp.Sqrt)),
            inner.map(_unary(exp.Exp)),
            st.tuples(inner, st.integers(-1, 2)).map(
                lambda p: exp.Round(this=p[0], decimals=exp.Literal.number(p[1]))
            ),
            st.tuples(inner, st.sampled_from(["INT", "DOUBLE", "DECIMAL(10, 2)"])).map(
                lambda p: exp.Cast(this=p[0], to=exp.DataType.build(p[1]))
            ),
            st.tuples(inner, inner).map(lambda p: exp.Coalesce(this=p[0], expressions=[p[1]])),
        )

    return st.recursive(leaves, extend, max_leaves=6).filter(
        lambda e: any(c.table == ATOM for c in e.find_all(exp.Column))
    )


@st.composite
def boxes(draw: Any) -> list[dict[str, Any]]:
    """Per atom: low <= point <= high, an estimate inside, and whether it may be NULL."""
    found = []
    for atom in ATOMS:
        ends = sorted(draw(st.lists(st.integers(-3000, 3000), min_size=3, max_size=3)))
        if atom.func == "count":
            ends = [abs(e) for e in ends]
            ends.sort()
        may_null = atom.nullable and draw(st.booleans())
        point: float | None = ends[1]
        if may_null and draw(st.booleans()):
            point = None
        scale = 1 if atom.func == "count" else draw(st.sampled_from([1, 7, 1000]))
        found.append(
            {
                "low": ends[0] / scale,
                "high": ends[2] / scale,
                "point": None if point is None else point / scale,
                "may_null": may_null,
            }
        )
    return found


def _double(value: float) -> exp.Expr:
    return exp.Cast(this=exp.Literal.number(repr(float(value))), to=exp.DataType.build("DOUBLE"))


def atoms_tree(box: list[dict[str, Any]]) -> exp.Select:
    columns = []
    for i, b in enumerate(box):
        for part in ("low", "high"):
            columns.append(exp.alias_(_double(b[part]), f"a{i}_{part}"))
        columns.append(exp.alias_(_double(b["low"]), f"a{i}_est"))
        columns.append(exp.alias_(exp.Boolean(this=b["may_null"]), f"a{i}_may_null"))
    return exp.select(*columns)


def run(branch: Branch, box: list[dict[str, Any]]) -> dict[str, Any]:
    ctes, member = _branch(0, branch, AtomsQuery(atoms_tree(box), may_null=True), set(), False)
    query = exp.select(*member).from_("sqlanon_b0_out")
    for name, body in ctes:
        query = query.with_(name, as_=body)
    cur = CON.execute(query.sql("duckdb"))
    names = [d[0] for d in cur.description or []]
    rows = cur.fetchall()
    return dict(zip(names, rows[0], strict=True)) if rows else {}


def truth(tree: exp.Expr, box: list[dict[str, Any]]) -> Any:
    """The expression at the point (None: NULL or no answer, e.g. LN of a negative)."""

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table == ATOM:
            point = box[int(node.name[1:])]["point"]
            if point is None:
                return exp.Cast(this=exp.Null(), to=exp.DataType.build("DOUBLE"))
            return _double(point)
        return node

    try:
        (value,) = CON.execute(f"SELECT {tree.transform(swap).sql('duckdb')}").fetchone() or (None,)
    except (duckdb.Error, OverflowError):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def inside(value: float, low: Any, high: Any) -> bool:
    slack = 1e-9 * max(1.0, abs(value))
    return (low is None or float(low) - slack <= value) and (
        high is None or value <= float(high) + slack
    )


@SETTINGS
@given(expressions(), boxes())
def test_every_value_at_the_point_lies_in_its_interval(tree: exp.Expr, box: Any) -> None:
    branch = Branch(Shape(INFO, (), ATOMS), (Item("x", tree),))
    out = run(branch, box)
    value = truth(tree, box)
    if value is None:
        return
    assert inside(float(value), out["x_low"], out["x_high"]), (tree.sql(), box, value, out)


def conditions() -> st.SearchStrategy[exp.Expr]:
    comparisons = st.tuples(
        expressions(),
        st.sampled_from([exp.LT, exp.LTE, exp.GT, exp.GTE, exp.EQ, exp.NEQ]),
        st.integers(-100, 100),
    ).map(lambda p: p[1](this=p[0], expression=exp.Literal.number(p[2])))
    nulls = expressions().map(lambda e: exp.Is(this=e, expression=exp.Null()))
    leaves = st.one_of(comparisons, nulls)

    def extend(inner: st.SearchStrategy[exp.Expr]) -> st.SearchStrategy[exp.Expr]:
        pairs = st.tuples(inner, inner)
        return st.one_of(
            pairs.map(lambda p: exp.And(this=_p(p[0]), expression=_p(p[1]))),
            pairs.map(lambda p: exp.Or(this=_p(p[0]), expression=_p(p[1]))),
            inner.map(lambda c: exp.Not(this=exp.Paren(this=c))),
        )

    return st.recursive(leaves, extend, max_leaves=3)


def _answerable(tree: exp.Expr, box: list[dict[str, Any]]) -> bool:
    """Every value in the condition has an answer at the point (no LN of a negative...)."""
    for node in tree.walk():
        if isinstance(node, exp.Ln | exp.Sqrt | exp.Exp | exp.Div | exp.Cast):
            if truth(node, box) is None and truth(node.this, box) is not None:
                return False
    return True


@SETTINGS
@given(conditions(), boxes())
def test_having_maybe_and_surely(condition: exp.Expr, box: Any) -> None:
    branch = Branch(Shape(INFO, (), ATOMS), (Item("n", atom_ref(1)),), having=condition)
    out = run(branch, box)
    if not _answerable(condition, box):
        return
    holds = truth(condition, box)
    if holds is True:
        assert out, ("HAVING true at the point but the group is dropped", condition.sql(), box)
    if out and out["having_surely"]:
        assert holds is True, ("surely, yet not true at the point", condition.sql(), box)


@pytest.mark.parametrize(
    ("sql_expr", "low", "high"),
    [
        ("ROUND(a, 0)", 2.0, 3.0),  # [2.5, 2.5]: outward, whichever way ties go
        ("a / b", -math.inf, math.inf),  # the divisor's interval holds 0: unbounded
        ("a * -2", -5.0, -5.0),
    ],
)
def test_known_intervals(sql_expr: str, low: Any, high: Any) -> None:
    tree = exp.maybe_parse(sql_expr).transform(
        lambda n: atom_ref({"a": 2, "b": 0}[n.name]) if isinstance(n, exp.Column) else n
    )
    box = [
        {"low": -1.0, "high": 1.0, "point": 0.0, "may_null": True},
        {"low": 0.0, "high": 3.0, "point": 1.0, "may_null": False},
        {"low": 2.5, "high": 2.5, "point": 2.5, "may_null": True},
    ]
    box[0] |= {"low": -1.0, "high": 1.0}
    branch = Branch(Shape(INFO, (), ATOMS), (Item("x", tree),))
    out = run(branch, [box[0], box[0], box[2]] if "b" in sql_expr else box)
    assert (out["x_low"], out["x_high"]) == (low, high)
