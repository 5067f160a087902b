"""A :class:`~sqlanon.rewriter.normalize.Plan` as one interval query.

Per branch ``i``: ``sqlanon_b<i>_l0`` reads the branch's atoms query
(:mod:`sqlanon.rewriter.atoms`), ``sqlanon_b<i>_l1..`` add the post layer's columns
(:mod:`sqlanon.rewriter.post`) height by height, ``sqlanon_b<i>_out`` holds the output
columns of the groups HAVING may keep. The branches are joined by UNION ALL (a
rolled-up key is a bare NULL in its member, so every engine types the column from the
other members), then sorted by ORDER BY and cut by LIMIT / OFFSET.

Output columns per item: a value of the group keys as ``<name>``; an interval as
``<name>_low``, ``<name>_high``, ``<name>_est``, preceded by ``<name>`` for a COUNT the
narrow (k,e) builder answers exactly (in a UNION ALL where another member has it: the
count where low = high, else NULL); ``having_surely`` last when there is a HAVING.
"""

from __future__ import annotations

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter.analyze import check_columns
from sqlanon.rewriter.atoms import AtomsQuery, atoms_query
from sqlanon.rewriter.normalize import ATOM, Branch, Item, Plan, refs
from sqlanon.rewriter.post import Compiler, Val, condition, keys_sql
from sqlanon.rewriter.shape import Atom
from sqlanon.rewriter.sqlbuild import CTE_PREFIX, with_cte

HAVING_COLUMN = "having_surely"


def answer(plan: Plan) -> exp.Select:
    """The interval query of ``plan``."""
    found = [atoms_query(b.shape) for b in plan.branches]
    exact = _exact_positions(plan, found)
    ctes: list[tuple[str, exp.Expr]] = []
    members: list[exp.Select] = []
    for i, (branch, atoms) in enumerate(zip(plan.branches, found, strict=True)):
        branch_ctes, columns = _branch(i, branch, atoms, exact, plan.having)
        ctes += branch_ctes
        members.append(exp.select(*columns).from_(exp.table_(f"{CTE_PREFIX}b{i}_out")))
    widths = {len(m.expressions) for m in members}
    if len(widths) != 1:
        raise UnsupportedQueryError(
            "the members of the UNION ALL differ in their items (an interval where another "
            "has a group column); align them"
        )
    body: exp.Query = members[0]
    for member in members[1:]:
        body = exp.union(body, member, distinct=False)
    visible = _visible(plan.branches[0], exact, plan.having)
    check_columns(visible)  # an exact count's bare <name> may be another item's column
    final = exp.select(*[exp.column(n, quoted=True) for n in visible]).from_(
        exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(f"{CTE_PREFIX}u")))
    )
    order = _order_columns(plan)
    if order:
        final = final.order_by(*order, copy=False)
    if plan.limit is not None:
        final = final.limit(plan.limit, copy=False)
    if plan.offset is not None:
        final = final.offset(plan.offset, copy=False)
    for name, cte in ctes:
        final = with_cte(final, name, cte)
    return final


def _bare_atom(item: Item) -> int | None:
    found = refs(item.expr, ATOM)
    if len(found) == 1 and isinstance(item.expr, exp.Column) and item.expr.table == ATOM:
        return found[0]
    return None


def _exact_positions(plan: Plan, found: list[AtomsQuery]) -> set[int]:
    """Item positions that get a bare ``<name>`` column (in every member)."""
    positions = set()
    for branch, atoms in zip(plan.branches, found, strict=True):
        for position, item in enumerate(branch.items):
            if _bare_atom(item) in atoms.exact:
                positions.add(position)
    return positions


def _names(item: Item, position: int, exact: set[int]) -> list[str]:
    if not item.is_value and not (position in exact and isinstance(item.expr, exp.Null)):
        return [item.name]
    bare = [item.name] if position in exact else []
    return bare + [f"{item.name}_{p}" for p in ("low", "high", "est")]


def _visible(branch: Branch, exact: set[int], having: bool) -> list[str]:
    names = [n for p, i in enumerate(branch.items) for n in _names(i, p, exact)]
    return names + ([HAVING_COLUMN] if having else [])


def _branch(
    index: int, branch: Branch, atoms: AtomsQuery, exact: set[int], having: bool
) -> tuple[list[tuple[str, exp.Expr]], list[exp.Expr]]:
    """The CTEs of one branch and its UNION ALL member's columns."""
    compiler = Compiler(branch, atoms)
    outputs: list[exp.Expr] = []
    member: list[exp.Expr] = []
    for position, item in enumerate([*branch.items, *branch.hidden]):
        for name, value in _item_columns(compiler, item, position, exact, atoms):
            if isinstance(value, exp.Null):
                member.append(exp.alias_(exp.Null(), name, quoted=True))
                continue
            outputs.append(exp.alias_(value, name, quoted=True))
            member.append(exp.column(name, quoted=True))
    keep: exp.Expr = exp.true()
    if branch.having is not None:
        flags = condition(compiler, branch.having)
        keep, surely = flags.may_t, flags.must_t
        outputs.append(exp.alias_(surely, HAVING_COLUMN, quoted=True))
        member.insert(len(member) - len(_hidden_names(branch)), exp.column(HAVING_COLUMN))
    elif having:
        member.insert(
            len(member) - len(_hidden_names(branch)), exp.alias_(exp.true(), HAVING_COLUMN)
        )
    if branch.keys_only:
        exists = branch.shape.atoms.index(Atom("count"))
        high = exp.column(f"a{exists}_high", quoted=True)
        keep = exp.and_(
            keep,
            exp.Coalesce(
                this=exp.GT(this=high, expression=exp.Literal.number(0)), expressions=[exp.false()]
            ),
        )
    prefix = f"{CTE_PREFIX}b{index}_"
    base = exp.select(exp.Star()).from_(
        exp.Subquery(
            this=_renamed(atoms.tree, prefix),
            alias=exp.TableAlias(this=exp.to_identifier(f"{CTE_PREFIX}a")),
        )
    )
    ctes: list[tuple[str, exp.Expr]] = [(f"{prefix}l0", base)]
    for level, columns in enumerate(compiler.columns.levels, start=1):
        body = exp.select(exp.Star(), *columns).from_(exp.table_(f"{prefix}l{level - 1}"))
        ctes.append((f"{prefix}l{level}", body))
    last = exp.table_(f"{prefix}l{len(compiler.columns.levels)}")
    out = exp.select(*outputs).from_(last)
    if keep != exp.true():
        out = out.where(keep, copy=False)
    ctes.append((f"{prefix}out", out))
    return ctes, member


def _renamed(tree: exp.Query, prefix: str) -> exp.Query:
    """``tree`` with its CTEs renamed ``<prefix><name>``: each branch's atoms query has
    CTEs of the same names, and some dialects (Spark) hoist nested CTEs to the top.
    Renamed in place, in one walk (the atoms query is read once, here)."""
    nodes = list(tree.walk())
    ctes = [n for n in nodes if isinstance(n, exp.CTE)]
    names = {cte.alias for cte in ctes}
    for cte in ctes:
        cte.set("alias", exp.TableAlias(this=exp.to_identifier(prefix + cte.alias)))
    for node in nodes:
        if isinstance(node, exp.Table) and not node.db and node.name in names:
            node.set("this", exp.to_identifier(prefix + node.name))
    return tree


def _hidden_names(branch: Branch) -> list[str]:
    return [n for item in branch.hidden for n in _names(item, -1, set())]


def _item_columns(
    compiler: Compiler, item: Item, position: int, exact: set[int], atoms: AtomsQuery
) -> list[tuple[str, exp.Expr]]:
    if not item.is_value:
        return [(item.name, keys_sql(item.expr))]
    val: Val = compiler.value(item.expr)
    found: list[tuple[str, exp.Expr]] = []
    if position in exact and position < len(compiler.branch.items):
        atom = _bare_atom(item)
        if atom is not None and atom in atoms.exact:
            found.append((item.name, exp.column(f"a{atom}", quoted=True)))
        else:
            same = exp.EQ(this=val.lo.copy(), expression=val.hi.copy())
            found.append((item.name, exp.Case(ifs=[exp.If(this=same, true=val.lo.copy())])))
    found += [
        (f"{item.name}_low", _bounded(item.expr, val.lo, val.nn, "-Infinity")),
        (f"{item.name}_high", _bounded(item.expr, val.hi, val.nn, "Infinity")),
        (f"{item.name}_est", val.est.copy()),
    ]
    return found


#: The operations whose interval may have no bound (post.py: a divisor around 0, LN,
#: SQRT... where undefined); an item without one keeps its column's type (a COUNT
#: stays an integer).
_MAY_BE_UNBOUNDED = (exp.Div, exp.IntDiv, exp.Ln, exp.Log, exp.Sqrt, exp.Exp, exp.Pow)


def _bounded(expr: exp.Expr, end: exp.Expr, may_be_number: exp.Expr, infinity: str) -> exp.Expr:
    """An interval end for the analyst: inside the post layer a NULL end means
    unbounded; in the answer NULL means the value is NULL (no record can be selected),
    and an unbounded end is -Infinity or Infinity."""
    if not expr.find(*_MAY_BE_UNBOUNDED):
        return end.copy()
    unbounded = exp.and_(exp.Is(this=end.copy(), expression=exp.Null()), may_be_number.copy())
    inf = exp.cast(exp.Literal.string(infinity), exp.DataType.build("DOUBLE"))
    return exp.Case(ifs=[exp.If(this=unbounded, true=inf)], default=end.copy())


def _order_columns(plan: Plan) -> list[exp.Ordered]:
    first = plan.branches[0]
    kinds = {i.name: i.is_value for i in [*first.items, *first.hidden]}
    for branch in plan.branches[1:]:  # a key rolled up here may be an interval elsewhere
        for i in [*branch.items, *branch.hidden]:
            kinds[i.name] = kinds.get(i.name, False) or i.is_value
    out = []
    for key in plan.order:
        name = f"{key.name}_est" if kinds.get(key.name) else key.name
        out.append(
            exp.Ordered(
                this=exp.column(name, quoted=True), desc=key.desc, nulls_first=key.nulls_first
            )
        )
    return out
