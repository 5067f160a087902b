"""The general rewriter's front end: analyst SQL (any sqlglot dialect) -> a :class:`Plan`.

A plan is a list of branches, each a :class:`~sqlanon.rewriter.shape.Shape` (the rows
of one release, per-row keys and atoms) plus what the post layer computes over the
atoms: the SELECT items, HAVING, hidden ORDER BY values; and, over all branches, ORDER
BY, LIMIT and OFFSET. A UNION ALL member is a branch; a ROLLUP, CUBE or GROUPING SETS
is one branch per grouping set (the rolled-up keys NULL).

Post expressions are the analyst's trees with every aggregate replaced by
:func:`atom_ref` and every group key by :func:`key_ref`; ``GROUP BY 1``, GROUP BY an
alias, ``GROUP BY ALL`` and ``SELECT DISTINCT`` (GROUP BY every item) become keys.
CTEs, derived tables and joins are resolved by :mod:`sqlanon.rewriter.relations`.

Output names: an item's alias, else a column's name, else ``<func>_<column>`` for an
aggregate of a column (``count_star`` for ``COUNT(*)``, as the narrow rewriter names
them), else ``col<position>``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import product

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter.aggregates import atom_of
from sqlanon.rewriter.analyze import check_output_names
from sqlanon.rewriter.limits import DEFAULT_LIMITS, QueryLimits, parse_statement
from sqlanon.rewriter.relations import (
    Context,
    Ctes,
    Rows,
    refuse,
    row_expr,
    rows_of,
    scope_ctes,
)
from sqlanon.rewriter.release_info import Catalog, private_names
from sqlanon.rewriter.shape import RELEASE_ALIAS, Atom, Shape

#: Qualifiers of the placeholders post expressions hold.
ATOM, KEY = "sqlanon_atom", "sqlanon_key"

_SELECT_ARGS = {"expressions", "from_", "joins", "where", "group", "having", "order"}
_SELECT_ARGS |= {"limit", "offset", "distinct", "with_"}


def atom_ref(index: int) -> exp.Column:
    return exp.column(f"a{index}", table=ATOM)


def key_ref(index: int) -> exp.Column:
    return exp.column(f"k{index}", table=KEY)


def refs(tree: exp.Expr, kind: str) -> list[int]:
    """The indices of the ``kind`` (ATOM or KEY) placeholders in ``tree``."""
    return [int(c.name[1:]) for c in tree.find_all(exp.Column) if c.table == kind]


@dataclass(frozen=True)
class Item:
    """One output value: ``expr`` over placeholders, shown as ``name``."""

    name: str
    expr: exp.Expr

    @property
    def is_value(self) -> bool:
        """An interval (reads atoms), else an exact value of the keys."""
        return bool(refs(self.expr, ATOM))


@dataclass(frozen=True)
class Branch:
    shape: Shape
    items: tuple[Item, ...]
    hidden: tuple[Item, ...] = ()  # ORDER BY values that are not output items
    having: exp.Expr | None = None
    #: no aggregate in SELECT (DISTINCT, GROUP BY without one): the rows that may exist
    keys_only: bool = False


@dataclass(frozen=True)
class OrderKey:
    name: str  # an item's or a hidden item's name
    desc: bool
    nulls_first: bool | None


@dataclass(frozen=True)
class Plan:
    branches: tuple[Branch, ...]
    order: tuple[OrderKey, ...] = ()
    limit: int | None = None
    offset: int | None = None
    #: the named public tables its joins and semi-joins read, as (schema, name), checked public
    public: frozenset[tuple[str, str]] = frozenset()

    @property
    def having(self) -> bool:
        return any(b.having is not None for b in self.branches)


def normalize(
    sql: str,
    catalog: Catalog,
    dialect: str = "duckdb",
    limits: QueryLimits = DEFAULT_LIMITS,
    checkpoint: Callable[[], None] | None = None,
) -> Plan:
    """The :class:`Plan` of ``sql``, or UnsupportedQueryError naming the part refused
    (``checkpoint`` runs between tokenizing and parsing)."""
    stmt = parse_statement(sql, dialect, limits, checkpoint)
    ctx = Context(catalog, private_names(catalog), dialect=dialect)
    for node in stmt.walk():
        if isinstance(node, exp.Window):
            raise refuse("a window function", node)
    members = _members(stmt, scope_ctes(stmt, {}))
    if len(members) == 1:
        select, ctes = members[0]
        query = _Select(select, ctes, ctx)
        limit, offset = _limit(select)
        return Plan(tuple(query.branches()), query.order(), limit, offset, frozenset(ctx.public))
    branches: list[Branch] = []
    for select, ctes in members:
        for key in ("order", "limit", "offset"):
            if select.args.get(key):
                raise refuse(f"{key.upper()} inside a UNION ALL member", select.args[key])
        branches += _Select(select, ctes, ctx).branches()
    widths = {len(b.items) for b in branches}
    if len(widths) != 1:
        raise UnsupportedQueryError("the members of the UNION ALL have different widths")
    order = _union_order(stmt, [i.name for i in branches[0].items])
    limit, offset = _limit(stmt)
    return Plan(tuple(branches), order, limit, offset, frozenset(ctx.public))


def _members(stmt: exp.Expr, ctes: Ctes) -> list[tuple[exp.Select, Ctes]]:
    if isinstance(stmt, exp.Select):
        return [(stmt, ctes)]
    if isinstance(stmt, exp.Subquery):
        return _members(stmt.this, scope_ctes(stmt.this, ctes))
    if isinstance(stmt, exp.Union) and not stmt.args.get("distinct"):
        left, right = stmt.this, stmt.expression
        out = _members(left, scope_ctes(left, ctes)) + _members(right, scope_ctes(right, ctes))
        if stmt is not stmt.root() and any(stmt.args.get(k) for k in ("order", "limit")):
            raise refuse("ORDER BY or LIMIT inside a UNION ALL member", stmt)
        return out
    raise refuse(f"{stmt.key.upper()} of queries", hint="use UNION ALL")


def _limit(query: exp.Expr) -> tuple[int | None, int | None]:
    found: list[int | None] = []
    limit = query.args.get("limit")
    for node, key in ((limit, "expression"), (query.args.get("offset"), "expression")):
        value = node.args.get(key) if node is not None else None
        if value is None:
            found.append(None)
        elif isinstance(value, exp.Literal) and value.is_int:
            found.append(int(value.name))
        else:
            raise refuse("this LIMIT or OFFSET", node, "use LIMIT <integer> OFFSET <integer>")
    if limit is not None and limit.args.get("offset") is not None:  # MySQL's LIMIT m, n
        found[1] = _limit(exp.Select(offset=exp.Offset(expression=limit.args["offset"])))[1]
    return found[0], found[1]


def _union_order(stmt: exp.Expr, names: list[str]) -> tuple[OrderKey, ...]:
    order = stmt.args.get("order")
    keys = []
    for ordered in order.expressions if order is not None else []:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.name) <= len(names):
            name = names[int(key.name) - 1]
        elif isinstance(key, exp.Column) and not key.table and key.name in names:
            name = key.name
        else:
            raise refuse("ORDER BY of a UNION ALL by anything but an output column", ordered)
        keys.append(OrderKey(name, bool(ordered.args.get("desc")), ordered.args.get("nulls_first")))
    return tuple(keys)


class _Select:
    """One aggregate SELECT over one release: its keys, atoms, items and grouping sets."""

    def __init__(self, select: exp.Select, ctes: Ctes, ctx: Context) -> None:
        for key, value in select.args.items():
            if value and key not in _SELECT_ARGS:
                clause = value if isinstance(value, exp.Expr) else None
                raise refuse(f"the {key.rstrip('_').upper()} clause", clause)
        self.select, self.ctx = select, ctx
        self.rows: Rows = rows_of(select, ctes, ctx)
        self.atoms: list[Atom] = []
        self.keys: list[exp.Expr] = []
        raw = list(select.expressions)
        for node in raw:
            inner = node.this if isinstance(node, exp.Alias) else node
            if isinstance(inner, exp.Star) or (
                isinstance(inner, exp.Column) and isinstance(inner.this, exp.Star)
            ):
                raise refuse("SELECT *", hint="select group columns and aggregates")
        self.aliases: dict[str, exp.Expr] = {
            n.alias.lower(): n.this for n in raw if isinstance(n, exp.Alias)
        }
        self.sets = self._grouping(raw)
        self.items = [self._item(i, n) for i, n in enumerate(raw)]
        self.keys_only = not any(i.is_value for i in self.items)
        if self.keys_only:
            if not self.keys:
                raise UnsupportedQueryError(
                    "the query has no aggregate; add one such as COUNT(*) (row-level answers "
                    "are not intervals)"
                )
            self._atom(exp.Count(this=exp.Star()))  # a0: whether the group may exist
        check_output_names(((i.name, i.is_value) for i in self.items), bare=False)
        having = select.args.get("having")
        self.having = self._lift(self._aliased(having.this)) if having is not None else None
        self.hidden: list[Item] = []
        self.order_keys = self._order()

    # --- keys -------------------------------------------------------------------------

    def _grouping(self, raw: list[exp.Expr]) -> list[tuple[int, ...]]:
        """The grouping sets, as indices into :attr:`keys`."""
        group = self.select.args.get("group")
        distinct = self.select.args.get("distinct")
        if distinct is not None and distinct.args.get("on"):
            raise refuse("DISTINCT ON", distinct)
        if group is None:
            if distinct is not None and not any(_has_agg(n) for n in raw):
                return [tuple(self._key(n.this if isinstance(n, exp.Alias) else n) for n in raw)]
            return [()]
        for key, value in group.args.items():
            if value and key not in ("expressions", "all"):
                raise refuse(f"GROUP BY {key.upper()}", group)
        if group.args.get("all"):
            plain = [n for n in raw if not _has_agg(n)]
            return [tuple(self._key(n.this if isinstance(n, exp.Alias) else n) for n in plain)]
        choices: list[list[tuple[int, ...]]] = []
        for node in group.expressions:
            if isinstance(node, exp.Rollup):
                parts = [self._keys_of(e) for e in node.expressions]
                choices.append([sum(parts[:i], ()) for i in range(len(parts), -1, -1)])
            elif isinstance(node, exp.Cube):
                parts = [self._keys_of(e) for e in node.expressions]
                choices.append(
                    [
                        sum((p for p, on in zip(parts, mask, strict=True) if on), ())
                        for mask in product((True, False), repeat=len(parts))
                    ]
                )
            elif isinstance(node, exp.GroupingSets):
                choices.append([self._keys_of(e) for e in node.expressions])
            else:
                choices.append([(self._group_key(node, raw),)])
        sets = [tuple(dict.fromkeys(sum(combo, ()))) for combo in product(*choices)]
        if len(sets) > 64:
            raise refuse(f"{len(sets)} grouping sets", group, "at most 64")
        return sets

    def _keys_of(self, node: exp.Expr) -> tuple[int, ...]:
        if isinstance(node, exp.Tuple):
            return tuple(
                self._group_key(e, list(self.select.expressions)) for e in node.expressions
            )
        inner = node.this if isinstance(node, exp.Paren) else node
        return (self._group_key(inner, list(self.select.expressions)),)

    def _group_key(self, node: exp.Expr, raw: list[exp.Expr]) -> int:
        """``GROUP BY 2``, an alias, or an expression over the rows."""
        if isinstance(node, exp.Literal) and node.is_int:
            position = int(node.name)
            if not 0 < position <= len(raw):
                raise UnsupportedQueryError(f"GROUP BY {position}: the SELECT has {len(raw)} items")
            node = raw[position - 1]
            node = node.this if isinstance(node, exp.Alias) else node
            if _has_agg(node):
                raise refuse("GROUP BY an aggregate", node)
        elif isinstance(node, exp.Column) and not node.table and not self._is_input(node):
            node = self.aliases.get(node.name.lower(), node)
        return self._key(node)

    def _is_input(self, column: exp.Column) -> bool:
        return column.name.lower() in self.rows.visible()

    def _key(self, node: exp.Expr) -> int:
        if _has_agg(node):
            raise refuse("GROUP BY an aggregate", node)
        resolved = row_expr(node, self.rows, self.ctx)
        if resolved in self.keys:
            return self.keys.index(resolved)
        self.keys.append(resolved)
        return len(self.keys) - 1

    # --- items, HAVING, ORDER BY ----------------------------------------------------------

    def _atom(self, node: exp.Expr) -> exp.Column:
        atom = atom_of(node, lambda e: row_expr(e, self.rows, self.ctx))
        if atom not in self.atoms:
            self.atoms.append(atom)
        return atom_ref(self.atoms.index(atom))

    def _lift(self, node: exp.Expr) -> exp.Expr:
        """``node`` with aggregates as atom refs and group keys as key refs."""
        if isinstance(node, exp.Grouping):
            return exp.Grouping(expressions=[self._grouped(e) for e in node.expressions])
        if _is_agg(node):
            return self._atom(node)
        if not _has_agg(node) and any(True for _ in node.find_all(exp.Column)):
            resolved = row_expr(node, self.rows, self.ctx)
            if resolved in self.keys:
                return key_ref(self.keys.index(resolved))
            if isinstance(node, exp.Column):
                raise UnsupportedQueryError(
                    f"column {node.sql()} in SELECT is neither aggregated nor in GROUP BY"
                )
        if isinstance(node, exp.Query | exp.Subquery):
            raise refuse("a subquery over aggregates", node)
        new = node.copy()
        for key, value in node.args.items():
            if isinstance(value, exp.Expr):
                new.set(key, self._lift(value))
            elif isinstance(value, list):
                new.set(key, [self._lift(v) if isinstance(v, exp.Expr) else v for v in value])
        return new

    def _grouped(self, node: exp.Expr) -> exp.Column:
        """A GROUPING argument: the ref of the group key it names."""
        resolved = row_expr(node, self.rows, self.ctx)
        if resolved not in self.keys:
            raise UnsupportedQueryError(f"GROUPING({node.sql()}): it is not a GROUP BY key")
        return key_ref(self.keys.index(resolved))

    def _aliased(self, node: exp.Expr) -> exp.Expr:
        """HAVING/ORDER BY may name a SELECT alias that is not an input column."""

        def swap(n: exp.Expr) -> exp.Expr:
            if isinstance(n, exp.Column) and not n.table and not self._is_input(n):
                aliased: exp.Expr | None = self.aliases.get(n.name.lower())
                if aliased is not None:
                    return aliased.copy()
            return n

        found: exp.Expr = node.transform(swap)
        return found

    def _item(self, position: int, node: exp.Expr) -> Item:
        inner = node.this if isinstance(node, exp.Alias) else node
        expr = self._lift(inner)
        if isinstance(node, exp.Alias):
            name = node.alias
        elif isinstance(inner, exp.Column):
            resolved = row_expr(inner, self.rows, self.ctx)
            name = resolved.name if isinstance(resolved, exp.Column) else inner.name
        elif refs(expr, ATOM) and expr == atom_ref(refs(expr, ATOM)[0]):
            name = _default_name(self.atoms[refs(expr, ATOM)[0]])
        else:
            name = f"col{position + 1}"
        return Item(name, expr)

    def _order(self) -> tuple[OrderKey, ...]:
        order = self.select.args.get("order")
        keys = []
        for ordered in order.expressions if order is not None else []:
            key = ordered.this
            names = {i.name.lower(): i.name for i in self.items}
            if isinstance(key, exp.Literal) and key.is_int:
                position = int(key.name)
                if not 0 < position <= len(self.items):
                    raise UnsupportedQueryError(f"ORDER BY {position}: no such SELECT item")
                name = self.items[position - 1].name
            elif isinstance(key, exp.Column) and not key.table and key.name.lower() in names:
                name = names[key.name.lower()]
            else:
                expr = self._lift(self._aliased(key))
                same = [i for i in self.items if i.expr == expr]
                if same:
                    name = same[0].name
                else:
                    name = f"sqlanon_order{len(self.hidden)}"
                    self.hidden.append(Item(name, expr))
            desc = bool(ordered.args.get("desc"))
            keys.append(OrderKey(name, desc, ordered.args.get("nulls_first")))
        return tuple(keys)

    def order(self) -> tuple[OrderKey, ...]:
        return self.order_keys

    # --- branches -------------------------------------------------------------------------

    def branches(self) -> list[Branch]:
        where: exp.Expr | None = None
        if len(self.rows.where) == 1:
            where = self.rows.where[0]
        elif self.rows.where:
            where = exp.and_(*self.rows.where)
        out = []
        for keys in self.sets:
            shape = Shape(
                self.rows.release,
                tuple(self.keys[k].copy() for k in keys),
                tuple(self.atoms),
                where.copy() if where is not None else None,
                tuple(self.rows.joins),
            )

            def local(tree: exp.Expr, keys: tuple[int, ...] = keys) -> exp.Expr:
                return _renumber(tree, keys)

            out.append(
                Branch(
                    shape,
                    tuple(Item(i.name, local(i.expr)) for i in self.items),
                    tuple(Item(i.name, local(i.expr)) for i in self.hidden),
                    local(self.having) if self.having is not None else None,
                    self.keys_only,
                )
            )
        return out


def _renumber(tree: exp.Expr, keys: tuple[int, ...]) -> exp.Expr:
    """Key refs numbered within one grouping set; rolled-up keys become NULL and
    ``GROUPING(a, b)`` the set's constant (bit 1 for each rolled-up key, ``a`` highest)."""

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Grouping):
            bits = [int(int(c.name[1:]) not in keys) for c in node.expressions]
            return exp.Literal.number(sum(b << i for i, b in enumerate(reversed(bits))))
        if isinstance(node, exp.Column) and node.table == KEY:
            index = int(node.name[1:])
            return key_ref(keys.index(index)) if index in keys else exp.Null()
        return node

    return tree.transform(swap)


def _is_agg(node: exp.Expr) -> bool:
    return isinstance(node, exp.AggFunc | exp.Filter | exp.WithinGroup)


def _has_agg(node: exp.Expr) -> bool:
    return any(_is_agg(n) for n in node.walk())


def _default_name(atom: Atom) -> str:
    if atom.func == "count_distinct":
        func = "count"
    else:
        func = atom.func
    if atom.arg is None:
        return f"{func}_star"
    if isinstance(atom.arg, exp.Column):
        return f"{func}_{atom.arg.name}"
    return f"{func}_expr"


__all__ = ["ATOM", "KEY", "RELEASE_ALIAS", "Branch", "Item", "OrderKey", "Plan", "normalize"]
