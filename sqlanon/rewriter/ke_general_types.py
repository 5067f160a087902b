"""The *types* of a general (k,e) atom: its per-row function of S, cut from the rest.

An atom ``func(arg) FILTER (WHERE where)`` under the Shape's WHERE gives each row a
value ``w(v)`` for the S value ``v`` it holds: the arg when the row is selected (WHERE
and the filter true) and the arg is not NULL, else *absent* (SQL NULL). Every maximal
subtree of ``w`` that does not read S is exact per row; :func:`plan_atom` lifts each one
into a column ``t<i>_<j>`` of the rows CTE (a *type parameter*) and rewrites ``w`` over
those columns (table ``c``) and the group's value ``v.v``. Rows of one release group with
equal parameters are one *type*: ``w`` is the same function of ``v`` for all of them.

Example: ``SUM(CASE WHEN sex = 'F' THEN loss END) ... WHERE age > 50 OR loss > 2000``
gives ``w = CASE WHEN (c.t0_0 OR v.v > 2000) THEN CASE WHEN c.t0_1 THEN v.v END END``
with ``t0_0 = age > 50`` and ``t0_1 = sex = 'F'``: at most 3 x 3 types per cell, however
many distinct ages the cell holds (a coarser cut than the raw columns, so tighter).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter.shape import RELEASE_ALIAS, Atom
from sqlanon.rewriter.sqlbuild import conjuncts, show

#: Functions whose bounds need the ranked values even when ``w`` reads no S.
_RANKED_ONLY = frozenset({"quantile_cont", "quantile_disc"})


@dataclass
class AtomPlan:
    """One atom as the SQL builders need it.

    ``tag`` names its CTEs and columns (the atom's index, or ``p`` for the internal
    presence count); ``w`` reads ``c.<param>`` and ``v.v``; ``params`` maps each
    parameter column to the per-row expression it holds (release and join columns);
    ``exact``: ``w`` reads no S, so the atom is one plain SQL aggregate over the rows;
    ``arg_reads_s``: the arg itself (not only the selection) reads S; ``ranked_by``: the
    tag of an earlier atom with the same ``w`` whose cells and ranked runs this one reads
    (None: its own); ``runs_read``: some atom reads this one's ranked runs (a COUNT
    needs only its cells' present counts).
    """

    tag: str
    atom: Atom
    w: exp.Expr
    params: dict[str, exp.Expr] = field(default_factory=dict)
    exact: bool = False
    arg_reads_s: bool = False
    ranked_by: str | None = None
    runs_read: bool = True

    @property
    def func(self) -> str:
        return self.atom.func


def reads(node: exp.Expr, sensitive: str) -> bool:
    """Whether ``node`` reads the release's sensitive column."""
    return any(c.table == RELEASE_ALIAS and c.name == sensitive for c in node.find_all(exp.Column))


def split_where(where: exp.Expr | None, sensitive: str) -> tuple[exp.Expr | None, exp.Expr | None]:
    """(row filter, S part) of the Shape's WHERE: the AND terms that read no S filter the
    rows exactly; the others become part of every atom's selection."""
    if where is None:
        return None, None
    free = [t for t in conjuncts(where) if not reads(t, sensitive)]
    with_s = [t for t in conjuncts(where) if reads(t, sensitive)]
    return _and(free), _and(with_s)


def _and(terms: list[exp.Expr]) -> exp.Expr | None:
    if not terms:
        return None
    return terms[0].copy() if len(terms) == 1 else exp.and_(*[t.copy() for t in terms])


def refuse_s_outside_atoms(keys: tuple[exp.Expr, ...], ons: list[exp.Expr], s: str) -> None:
    """Keys and join conditions are exact per row: one reading S is refused."""
    for index, key in enumerate(keys):
        if reads(key, s):
            raise UnsupportedQueryError(
                f"GROUP BY {show(key)} (key {index}) reads the permuted column {s!r}: a (k,e) "
                f"release hides which record holds which {s!r} value, so groups by it are "
                "unknown; group by other columns or bucket the aggregate instead"
            )
    for on in ons:
        if reads(on, s):
            raise UnsupportedQueryError(
                f"the join condition {show(on)} reads the permuted column {s!r}; join on "
                "other columns"
            )


def _liftable(node: exp.Expr) -> bool:
    """Whether ``node`` is a standalone value expression (not a CASE branch)."""
    return isinstance(node, exp.Condition) and not isinstance(node, exp.If | exp.Star)


def plan_atom(
    tag: str,
    atom: Atom,
    s_where: exp.Expr | None,
    sensitive: str,
    names: dict[str, str] | None = None,
) -> AtomPlan:
    """The atom's ``w`` over type parameters and ``v.v`` (see the module docstring).

    ``names`` (parameter text -> column), when given, is shared by the atoms of one
    query: equal subexpressions of two atoms become one column, so atoms whose ``w`` are
    equal have equal plans (and share their CTEs)."""
    selection = _and([p for p in (s_where, atom.where) if p is not None])
    value: exp.Expr = exp.Literal.number(1) if atom.arg is None else atom.arg.copy()
    whole: exp.Expr = (
        value if selection is None else exp.Case(ifs=[exp.If(this=selection, true=value)])
    )
    params: dict[str, exp.Expr] = {}
    by_text: dict[str, str] = {} if names is None else names

    def lift(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table == RELEASE_ALIAS:
            if node.name == sensitive:
                return exp.column("v", table="v")
        if reads(node, sensitive) or not _liftable(node):
            return node
        if not any(True for _ in node.find_all(exp.Column)):
            return node
        text = node.sql()
        if text not in by_text:
            by_text[text] = f"t{tag}_{len(params)}" if names is None else f"t{len(by_text)}"
        params.setdefault(by_text[text], node.copy())
        return exp.column(by_text[text], table="c")

    w = whole.transform(lift)
    s_free = not reads(whole, sensitive)
    return AtomPlan(
        tag=tag,
        atom=atom,
        w=w,
        params=params,
        exact=s_free and atom.func not in _RANKED_ONLY,
        arg_reads_s=atom.arg is not None and reads(atom.arg, sensitive),
    )
