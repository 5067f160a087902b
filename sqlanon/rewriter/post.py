"""The post layer: interval arithmetic over the atoms, HAVING, ORDER BY, LIMIT.

Every value is carried as five SQL expressions: ``lo``, ``hi`` (NULL: unbounded on that
side), ``est``, ``mn`` (the answer may be NULL) and ``nn`` (it may be a number). The
guarantee, for any assignment of the private records consistent with the release: if
the answer is a number it lies in [lo, hi]. Per operation, for operands in [a, b] and
[c, d] (each rule is the image of the operation over the box, so it holds however the
operands correlate):

- ``+``, ``-``, unary minus: endpoint sums; ``*``: the least and greatest of the four
  corner products (a constant factor: its sign picks two);
- ``/``: the four corner quotients when [c, d] excludes 0, else unbounded (and the
  answer may be NULL); where the dialect's ``/`` may divide integers (PostgreSQL), the
  bounds are widened to FLOOR / CEIL, which contain the truncated quotient;
- ROUND(x, n), FLOOR, CEIL and CAST to an integer or decimal type: outward, [FLOOR at
  the digits of lo, CEIL at the digits of hi] (whichever way the engine breaks ties);
- LN, EXP, SQRT (monotone: the images of the ends, unbounded where undefined), ABS;
- COALESCE: the union of the intervals of the arguments that can be its answer.

The estimate evaluates the same expression on the atoms' estimates. A comparison in
HAVING is three-valued on intervals: it may be true, must be true, may be false, must
be false (Kleene logic for AND, OR, NOT, and NULL never true); a group is returned when
HAVING may be true, with ``having_surely`` true when it must be. ORDER BY sorts by the
estimate of a value (by its key for a group column); LIMIT and OFFSET apply after.

Each compound value gets columns of its own, one CTE per height of the expression tree,
so the SQL grows linearly with the expression.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter.atoms import AtomsQuery
from sqlanon.rewriter.normalize import ATOM, KEY, Branch, refs
from sqlanon.rewriter.sqlbuild import CTE_PREFIX

_TRUE, _FALSE = exp.true(), exp.false()


@dataclass(frozen=True)
class Val:
    """One value's interval: bounds (NULL unbounded), estimate, may be NULL / a number."""

    lo: exp.Expr
    hi: exp.Expr
    est: exp.Expr
    mn: exp.Expr
    nn: exp.Expr
    level: int = 0
    const: float | None = None  # a numeric literal's value


@dataclass(frozen=True)
class Flags:
    """A condition: may be true, must be true, may be false, must be false."""

    may_t: exp.Expr
    must_t: exp.Expr
    may_f: exp.Expr
    must_f: exp.Expr
    level: int = 0


def _and(*xs: exp.Expr) -> exp.Expr:
    if any(x == _FALSE for x in xs):
        return _FALSE.copy()
    rest = [x for x in xs if x != _TRUE]
    return exp.and_(*[_p(x) for x in rest]) if rest else _TRUE.copy()


def _or(*xs: exp.Expr) -> exp.Expr:
    if any(x == _TRUE for x in xs):
        return _TRUE.copy()
    rest = [x for x in xs if x != _FALSE]
    return exp.or_(*[_p(x) for x in rest]) if rest else _FALSE.copy()


def _not(x: exp.Expr) -> exp.Expr:
    if x == _TRUE:
        return _FALSE.copy()
    if x == _FALSE:
        return _TRUE.copy()
    return exp.Not(this=_p(x))


def _p(x: exp.Expr) -> exp.Expr:
    return (
        x
        if isinstance(x, exp.Column | exp.Literal | exp.Boolean | exp.Paren)
        else exp.Paren(this=x)
    )


def _c(x: exp.Expr) -> exp.Expr:
    return x.copy()


def _null(x: exp.Expr) -> exp.Expr:
    return exp.Is(this=_c(x), expression=exp.Null())


def _when(cond: exp.Expr, then: exp.Expr, default: exp.Expr | None = None) -> exp.Expr:
    return exp.Case(ifs=[exp.If(this=cond, true=then)], default=default)


def _extreme(
    kind: type[exp.Least] | type[exp.Greatest],
    xs: Sequence[exp.Expr],
    ends: Sequence[exp.Expr],
) -> exp.Expr:
    """LEAST/GREATEST of ``xs``, NULL (unbounded) when an end is unbounded."""
    pick = kind(this=xs[0], expressions=xs[1:], ignore_nulls=True)
    return _when(_not(_or(*[_null(e) for e in ends])), pick)


def _div(a: exp.Expr, b: exp.Expr) -> exp.Div:
    return exp.Div(this=_p(_c(a)), expression=_p(_c(b)), typed=False, safe=False)


def _cmp(kind: type[exp.Expr], a: exp.Expr, b: exp.Expr) -> exp.Expr:
    return kind(this=_p(_c(a)), expression=_p(_c(b)))


def _maybe(cond: exp.Expr) -> exp.Expr:
    return exp.Coalesce(this=cond, expressions=[_TRUE.copy()])


def _surely(cond: exp.Expr) -> exp.Expr:
    return exp.Coalesce(this=cond, expressions=[_FALSE.copy()])


@dataclass
class Columns:
    """The columns a branch's post CTEs compute, by height."""

    levels: list[list[exp.Expr]] = field(default_factory=list)
    count: int = 0

    def add(self, level: int, **parts: exp.Expr) -> dict[str, exp.Expr]:
        """Columns for ``parts`` at ``level``; references to them."""
        while len(self.levels) < level:
            self.levels.append([])
        name = f"{CTE_PREFIX}v{self.count}"
        self.count += 1
        refs_: dict[str, exp.Expr] = {}
        for part, value in parts.items():
            if isinstance(value, exp.Boolean | exp.Literal | exp.Null | exp.Column):
                refs_[part] = value
                continue
            self.levels[level - 1].append(exp.alias_(value, f"{name}_{part}", quoted=True))
            refs_[part] = exp.column(f"{name}_{part}", quoted=True)
        return refs_


class Compiler:
    """Values and conditions of one branch over its atoms query's columns."""

    def __init__(self, branch: Branch, atoms: AtomsQuery) -> None:
        self.branch, self.atoms = branch, atoms
        self.columns = Columns()

    def value(self, node: exp.Expr) -> Val:
        if not refs(node, ATOM):
            return self._exact(node)
        if isinstance(node, exp.Paren):
            return self.value(node.this)
        if isinstance(node, exp.Column) and node.table == ATOM:
            return self._atom(int(node.name[1:]))
        rule = _RULES.get(type(node))  # type: ignore[arg-type]
        if rule is None:
            raise UnsupportedQueryError(
                f"{type(node).__name__.upper()} over aggregates is not supported: "
                f"{_shown(node)}; use + - * /, ROUND, FLOOR, CEIL, ABS, LN, EXP, SQRT, "
                "CAST or COALESCE"
            )
        return rule(self, node)

    def keep(self, level: int, **parts: exp.Expr) -> Val:
        found = self.columns.add(level, **parts)
        return Val(found["lo"], found["hi"], found["est"], found["mn"], found["nn"], level)

    def _exact(self, node: exp.Expr) -> Val:
        sql = keys_sql(node)
        if isinstance(node, exp.Literal) and not node.is_string:
            return Val(sql, sql, sql, _FALSE, _TRUE, const=float(node.name))
        if isinstance(node, exp.Null):
            return Val(sql, sql, sql, _TRUE, _FALSE)
        return Val(sql, sql, sql, _null(sql), _not(_null(sql)))

    def _atom(self, index: int) -> Val:
        atom = self.branch.shape.atoms[index]

        def col(part: str) -> exp.Column:
            return exp.column(f"a{index}_{part}", quoted=True)

        if not atom.nullable:
            mn: exp.Expr = _FALSE
        elif self.atoms.may_null:
            mn = _surely(col("may_null"))
        else:
            mn = _TRUE
        return Val(col("low"), col("high"), col("est"), mn, _not(_null(col("low"))))


def keys_sql(node: exp.Expr) -> exp.Expr:
    """An expression over the group keys, reading the atoms query's ``kN`` columns."""

    def swap(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Column) and n.table == KEY:
            return exp.column(n.name, quoted=True)
        return n

    return node.transform(swap)


def _shown(node: exp.Expr) -> str:
    return node.sql()


def _add(self: Compiler, node: exp.Expr) -> Val:
    a, b = self.value(node.this), self.value(node.expression)
    sub = isinstance(node, exp.Sub)
    kind = exp.Sub if sub else exp.Add
    return self.keep(
        max(a.level, b.level) + 1,
        lo=kind(this=_p(_c(a.lo)), expression=_p(_c(b.hi if sub else b.lo))),
        hi=kind(this=_p(_c(a.hi)), expression=_p(_c(b.lo if sub else b.hi))),
        est=kind(this=_p(_c(a.est)), expression=_p(_c(b.est))),
        mn=_or(a.mn, b.mn),
        nn=_and(a.nn, b.nn),
    )


def _neg(self: Compiler, node: exp.Expr) -> Val:
    a = self.value(node.this)
    return self.keep(
        a.level + 1,
        lo=exp.Neg(this=_p(_c(a.hi))),
        hi=exp.Neg(this=_p(_c(a.lo))),
        est=exp.Neg(this=_p(_c(a.est))),
        mn=a.mn,
        nn=a.nn,
    )


def _mul(self: Compiler, node: exp.Expr) -> Val:
    a, b = self.value(node.this), self.value(node.expression)
    if a.const is not None:
        a, b = b, a
    est = exp.Mul(this=_p(_c(a.est)), expression=_p(_c(b.est)))
    level, mn, nn = max(a.level, b.level) + 1, _or(a.mn, b.mn), _and(a.nn, b.nn)
    if b.const is not None:
        first, second = (a.lo, a.hi) if b.const >= 0 else (a.hi, a.lo)
        lo = exp.Mul(this=_p(_c(first)), expression=_c(b.lo))
        hi = exp.Mul(this=_p(_c(second)), expression=_c(b.lo))
        return self.keep(level, lo=lo, hi=hi, est=est, mn=mn, nn=nn)
    corners: list[exp.Expr] = [
        exp.Mul(this=_p(_c(x)), expression=_p(_c(y))) for x in (a.lo, a.hi) for y in (b.lo, b.hi)
    ]
    ends = [a.lo, a.hi, b.lo, b.hi]
    return self.keep(
        level,
        lo=_extreme(exp.Least, corners, ends),
        hi=_extreme(exp.Greatest, [_c(c) for c in corners], ends),
        est=est,
        mn=mn,
        nn=nn,
    )


def _division(self: Compiler, node: exp.Expr) -> Val:
    a, b = self.value(node.this), self.value(node.expression)
    apart = _surely(
        _or(_cmp(exp.GT, b.lo, exp.Literal.number(0)), _cmp(exp.LT, b.hi, exp.Literal.number(0)))
    )
    corners = [_div(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    lo: exp.Expr = _when(
        _and(apart, _not(_or(_null(a.lo), _null(a.hi)))),
        exp.Least(this=corners[0], expressions=corners[1:], ignore_nulls=True),
    )
    hi: exp.Expr = _when(
        _and(apart, _not(_or(_null(a.lo), _null(a.hi)))),
        exp.Greatest(
            this=[_c(c) for c in corners][0],
            expressions=[_c(c) for c in corners[1:]],
            ignore_nulls=True,
        ),
    )
    if node.args.get("typed"):  # the engine may divide integers, truncating
        lo, hi = exp.Floor(this=lo), exp.Ceil(this=hi)
    nonzero = exp.Nullif(this=_p(_c(b.est)), expression=exp.Literal.number(0))
    return self.keep(
        max(a.level, b.level) + 1,
        lo=lo,
        hi=hi,
        est=_div(a.est, nonzero),
        mn=_or(a.mn, b.mn, _not(apart)),
        nn=_and(a.nn, b.nn),
    )


def _outward(lo: exp.Expr, hi: exp.Expr, digits: int) -> tuple[exp.Expr, exp.Expr]:
    """[lo, hi] widened to ``digits`` decimals: FLOOR below, CEIL above."""
    if digits == 0:
        return exp.Floor(this=_c(lo)), exp.Ceil(this=_c(hi))
    scale = exp.Literal.number(repr(10.0**digits))
    return (
        _div(exp.Floor(this=exp.Mul(this=_p(_c(lo)), expression=scale)), scale),
        _div(exp.Ceil(this=exp.Mul(this=_p(_c(hi)), expression=scale.copy())), scale),
    )


def _digits(node: exp.Expr | None) -> int:
    if node is None:
        return 0
    if isinstance(node, exp.Literal) and node.is_int:
        return int(node.name)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and node.this.is_int:
        return -int(node.this.name)
    raise UnsupportedQueryError(f"ROUND to {node.sql()} digits: give an integer literal")


def _rounding(self: Compiler, node: exp.Expr) -> Val:
    a = self.value(node.this)
    if isinstance(node, exp.Round):
        lo, hi = _outward(a.lo, a.hi, _digits(node.args.get("decimals")))
    elif node.args.get("decimals") is not None or node.expression is not None:
        raise UnsupportedQueryError(f"{node.sql()}: FLOOR and CEIL take one argument here")
    else:
        lo, hi = type(node)(this=_c(a.lo)), type(node)(this=_c(a.hi))
    est = node.copy()
    est.set("this", _c(a.est))
    digits = _digits(node.args.get("decimals")) if isinstance(node, exp.Round) else 0
    if digits:  # PostgreSQL has no ROUND(double precision, int): half up by hand
        scale = exp.Literal.number(repr(10.0**digits))
        shifted = exp.Add(
            this=exp.Mul(this=_p(_c(a.est)), expression=scale), expression=exp.Literal.number(0.5)
        )
        est = _div(exp.Floor(this=shifted), scale.copy())
    return self.keep(a.level + 1, lo=lo, hi=hi, est=est, mn=a.mn, nn=a.nn)


def _monotone(self: Compiler, node: exp.Expr) -> Val:
    """LN, EXP, SQRT: increasing; the bound is NULL (unbounded) where undefined."""
    a = self.value(node.this)
    zero = exp.Literal.number(0)
    kind = type(node)
    if kind is exp.Ln:
        lo = _when(_cmp(exp.GT, a.lo, zero), exp.Ln(this=_c(a.lo)))
        hi = _when(_cmp(exp.GT, a.hi, zero), exp.Ln(this=_c(a.hi)))
        est = _when(_cmp(exp.GT, a.est, zero), exp.Ln(this=_c(a.est)))
    elif kind is exp.Exp:
        cap = exp.Literal.number(700)  # beyond, EXP overflows (PostgreSQL raises)
        lo = _when(_null(a.lo), zero, _when(_cmp(exp.LT, a.lo, cap), exp.Exp(this=_c(a.lo))))
        hi = _when(_cmp(exp.LT, a.hi, cap), exp.Exp(this=_c(a.hi)))
        est = _when(_cmp(exp.LT, a.est, cap), exp.Exp(this=_c(a.est)))
    else:
        lo = _when(_cmp(exp.GTE, a.lo, zero), exp.Sqrt(this=_c(a.lo)), zero)
        hi = _when(_cmp(exp.GTE, a.hi, zero), exp.Sqrt(this=_c(a.hi)))
        est = _when(_cmp(exp.GTE, a.est, zero), exp.Sqrt(this=_c(a.est)))
    # LN of 0 or less, SQRT of a negative: NULL or an error depending on the engine
    undefined = (
        _FALSE
        if kind is exp.Exp
        else _not(_surely(_cmp(exp.GT if kind is exp.Ln else exp.GTE, a.lo, zero)))
    )
    return self.keep(a.level + 1, lo=lo, hi=hi, est=est, mn=_or(a.mn, undefined), nn=a.nn)


def _abs(self: Compiler, node: exp.Expr) -> Val:
    a = self.value(node.this)
    zero = exp.Literal.number(0)
    lo = exp.Case(
        ifs=[
            exp.If(this=_cmp(exp.GTE, a.lo, zero), true=_c(a.lo)),
            exp.If(this=_cmp(exp.LTE, a.hi, zero), true=exp.Neg(this=_p(_c(a.hi)))),
        ],
        default=zero,
    )
    hi = _extreme(exp.Greatest, [exp.Neg(this=_p(_c(a.lo))), _c(a.hi)], [a.lo, a.hi])
    return self.keep(a.level + 1, lo=lo, hi=hi, est=exp.Abs(this=_c(a.est)), mn=a.mn, nn=a.nn)


def _cast(self: Compiler, node: exp.Expr) -> Val:
    a = self.value(node.this)
    to = node.args["to"]
    kind = to.this
    lo, hi = _c(a.lo), _c(a.hi)
    floats = {exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT, exp.DataType.Type.UDOUBLE}
    if kind in exp.DataType.INTEGER_TYPES:
        lo, hi = _outward(a.lo, a.hi, 0)
    elif kind in exp.DataType.REAL_TYPES and kind not in floats:
        # a decimal rounds to its scale (DuckDB's default DECIMAL: 3 digits): widen to it
        scale = to.expressions[1].name if len(to.expressions) == 2 else "0"
        lo, hi = _outward(a.lo, a.hi, int(scale))
    elif kind not in floats:
        raise UnsupportedQueryError(f"{node.sql()}: CAST of an aggregate to a non-number")
    parts = {"lo": lo, "hi": hi, "est": a.est}
    held = _held(to)
    if held is not None:  # a bound (or estimate) the type cannot hold is no answer: the
        # query errors for such a true value, so the interval may stop at the type's range
        least, most = (exp.Literal.number(repr(n) if isinstance(n, float) else n) for n in held)
        parts = {k: _clamped(v, least, most) for k, v in parts.items()}
    cast = {k: exp.Cast(this=_c(v), to=to.copy()) for k, v in parts.items()}
    return self.keep(a.level + 1, **cast, mn=a.mn, nn=a.nn)


#: Integer types by the values they hold (BIGINT's a little inside, where a double holds
#: the bound exactly).
_INTEGER_RANGE = {
    exp.DataType.Type.TINYINT: (-(2**7), 2**7 - 1),
    exp.DataType.Type.SMALLINT: (-(2**15), 2**15 - 1),
    exp.DataType.Type.INT: (-(2**31), 2**31 - 1),
    exp.DataType.Type.BIGINT: (-(2**63) + 2**11, 2**63 - 2**11),
}


def _held(to: exp.DataType) -> tuple[int, int] | tuple[float, float] | None:
    """The values type ``to`` holds, when known: an integer type's, or a DECIMAL(p, s)'s
    given both."""
    if to.this in _INTEGER_RANGE:
        return _INTEGER_RANGE[to.this]
    if to.this == exp.DataType.Type.DECIMAL and len(to.expressions) == 2:
        precision, scale = (int(e.name) for e in to.expressions)
        most = 10.0 ** (precision - scale) - 10.0 ** (-scale)
        return -most, most
    return None


def _clamped(v: exp.Expr, least: exp.Expr, most: exp.Expr) -> exp.Expr:
    """``v`` within [least, most] (NULL stays NULL)."""
    return exp.Case(
        ifs=[
            exp.If(this=_cmp(exp.LT, _c(v), least), true=least.copy()),
            exp.If(this=_cmp(exp.GT, _c(v), most), true=most.copy()),
        ],
        default=_c(v),
    )


def _coalesce(self: Compiler, node: exp.Expr) -> Val:
    args = [node.this, *node.expressions]
    val = self.value(args[-1])
    for arg in reversed(args[:-1]):
        val = _either(self, self.value(arg), val)
    return val


def _either(self: Compiler, a: Val, b: Val) -> Val:
    """COALESCE(a, b): a's interval where a may be a number, b's where a may be NULL."""
    pa, pb = a.nn, _and(a.mn, b.nn)

    def union(kind: type[exp.Least] | type[exp.Greatest], x: exp.Expr, y: exp.Expr) -> exp.Expr:
        both = _extreme(kind, [_c(x), _c(y)], [x, y])
        return exp.Case(
            ifs=[exp.If(this=_and(pa, pb), true=both), exp.If(this=_p(_c(pa)), true=_c(x))],
            default=_c(y),
        )

    return self.keep(
        max(a.level, b.level) + 1,
        lo=union(exp.Least, a.lo, b.lo),
        hi=union(exp.Greatest, a.hi, b.hi),
        est=exp.Coalesce(this=_c(a.est), expressions=[_c(b.est)]),
        mn=_and(a.mn, b.mn),
        nn=_or(a.nn, b.nn),
    )


_RULES = {
    exp.Add: _add,
    exp.Sub: _add,
    exp.Neg: _neg,
    exp.Mul: _mul,
    exp.Div: _division,
    exp.Round: _rounding,
    exp.Floor: _rounding,
    exp.Ceil: _rounding,
    exp.Ln: _monotone,
    exp.Exp: _monotone,
    exp.Sqrt: _monotone,
    exp.Abs: _abs,
    exp.Cast: _cast,
    exp.Coalesce: _coalesce,
}


# --- HAVING --------------------------------------------------------------------------

_SWAP: dict[type[exp.Expr], type[exp.Expr]] = {exp.GT: exp.LT, exp.GTE: exp.LTE}


def condition(self: Compiler, node: exp.Expr) -> Flags:
    """The four flags of a HAVING condition (see the module doc)."""
    if not refs(node, ATOM):
        exact = keys_sql(node)
        sure, never = _surely(_p(exact)), _surely(_not(exact))
        return Flags(sure, sure.copy(), never, never.copy())
    if isinstance(node, exp.Paren):
        return condition(self, node.this)
    if isinstance(node, exp.Not):
        inner = condition(self, node.this)
        return Flags(inner.may_f, inner.must_f, inner.may_t, inner.must_t, inner.level)
    if isinstance(node, exp.And | exp.Or):
        return _junction(self, node)
    if isinstance(node, exp.Between):
        low = exp.GTE(this=node.this.copy(), expression=node.args["low"].copy())
        high = exp.LTE(this=node.this.copy(), expression=node.args["high"].copy())
        return _junction(self, exp.And(this=low, expression=high))
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        a = self.value(node.this)
        return Flags(a.mn, _not(a.nn), a.nn, _not(a.mn), a.level)
    if isinstance(node, exp.EQ | exp.NEQ | exp.LT | exp.LTE | exp.GT | exp.GTE):
        return _comparison(self, node)
    raise UnsupportedQueryError(f"this HAVING condition is not supported: {node.sql()}")


def _junction(self: Compiler, node: exp.Expr) -> Flags:
    x, y = condition(self, node.this), condition(self, node.expression)
    level = max(x.level, y.level)
    if isinstance(node, exp.And):
        flags = Flags(
            _and(x.may_t, y.may_t),
            _and(x.must_t, y.must_t),
            _or(x.may_f, y.may_f),
            _or(x.must_f, y.must_f),
            level,
        )
    else:
        flags = Flags(
            _or(x.may_t, y.may_t),
            _or(x.must_t, y.must_t),
            _and(x.may_f, y.may_f),
            _and(x.must_f, y.must_f),
            level,
        )
    return _kept(self, flags)


def _kept(self: Compiler, flags: Flags) -> Flags:
    level = flags.level + 1
    found = self.columns.add(
        level, may_t=flags.may_t, must_t=flags.must_t, may_f=flags.may_f, must_f=flags.must_f
    )
    return Flags(found["may_t"], found["must_t"], found["may_f"], found["must_f"], level)


def _comparison(self: Compiler, node: exp.Expr) -> Flags:
    kind: type[exp.Expr] = type(node)
    a, b = self.value(node.this), self.value(node.expression)
    if kind in _SWAP:
        a, b, kind = b, a, _SWAP[kind]
    both, sure = _and(a.nn, b.nn), _and(_not(a.mn), _not(b.mn))
    if kind in (exp.LT, exp.LTE):
        strict = kind is exp.LT
        holds = exp.LT if strict else exp.LTE
        fails = exp.GTE if strict else exp.GT
        flags = Flags(
            _and(both, _maybe(_cmp(holds, a.lo, b.hi))),
            _and(sure, _surely(_cmp(holds, a.hi, b.lo))),
            _and(both, _maybe(_cmp(fails, a.hi, b.lo))),
            _and(sure, _surely(_cmp(fails, a.lo, b.hi))),
            max(a.level, b.level),
        )
    else:
        point = _and(_cmp(exp.EQ, a.lo, a.hi), _cmp(exp.EQ, b.lo, b.hi), _cmp(exp.EQ, a.lo, b.lo))
        overlap = _and(_cmp(exp.LTE, a.lo, b.hi), _cmp(exp.LTE, b.lo, a.hi))
        apart = _or(_cmp(exp.LT, a.hi, b.lo), _cmp(exp.LT, b.hi, a.lo))
        flags = Flags(
            _and(both, _maybe(overlap)),
            _and(sure, _surely(point)),
            _and(both, _maybe(_not(point))),
            _and(sure, _surely(apart)),
            max(a.level, b.level),
        )
        if kind is exp.NEQ:
            flags = Flags(flags.may_f, flags.must_f, flags.may_t, flags.must_t, flags.level)
    return _kept(self, flags)


__all__ = ["Compiler", "Flags", "Val", "condition", "keys_sql"]
