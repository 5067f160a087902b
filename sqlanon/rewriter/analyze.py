"""Parse an analyst's query and check it is one the interval rewriter can answer.

The accepted shape is deliberately small::

    SELECT <group columns and aggregates, optionally aliased>
    FROM <one release known to the catalog> [AS alias]
    [WHERE <comparisons, BETWEEN, IN (list), LIKE, IS NULL joined by AND/OR/NOT>]
    [GROUP BY <columns>] [ORDER BY <group columns>] [LIMIT <n>]

Everything else is refused with :class:`UnsupportedQueryError` naming the offending part.
The result, :class:`Query`, holds only canonical column names and predicate trees whose
every node type is whitelisted, so the builders can never copy a function call, a
subquery or a table reference from the analyst's text into the output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter.limits import DEFAULT_LIMITS, QueryLimits, parse_statement
from sqlanon.rewriter.release_info import Catalog, ReleaseInfo, lookup, served

AGGREGATES: dict[type[exp.Expr], str] = {
    exp.Count: "count",
    exp.Sum: "sum",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
}

# Node types a WHERE clause may contain. No function, subquery or table can slip through.
_PREDICATE_NODES: tuple[type[exp.Expr], ...] = (
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Null,
    exp.Boolean,
    exp.Neg,
    exp.Paren,
    exp.EQ,
    exp.NEQ,
    exp.LT,
    exp.LTE,
    exp.GT,
    exp.GTE,
    exp.Between,
    exp.In,
    exp.Like,
    exp.ILike,
    exp.Is,
    exp.Not,
    exp.And,
    exp.Or,
    exp.Cast,
    exp.DataType,
)

_SELECT_ARGS = {"expressions", "from_", "where", "group", "order", "limit"}
_TABLE_ARGS = {"this", "alias", "db", "catalog"}


@dataclass(frozen=True)
class GroupItem:
    """A GROUP BY column shown in the SELECT list."""

    column: str
    name: str


@dataclass(frozen=True)
class AggregateItem:
    """``func(column)``; ``column`` is None for ``COUNT(*)``."""

    func: str
    column: str | None
    name: str
    fraction: float | None = None  # quantile_cont / quantile_disc (general front end)


@dataclass(frozen=True)
class OrderItem:
    name: str
    desc: bool
    nulls_first: bool | None


@dataclass(frozen=True)
class Query:
    """A checked analyst query. Columns are canonical names of the release."""

    release: ReleaseInfo
    items: tuple[GroupItem | AggregateItem, ...]
    group_by: tuple[str, ...]
    where: exp.Expr | None
    order: tuple[OrderItem, ...]
    limit: int | None
    #: per ``group_by`` entry, the expression of release columns it groups by when it is
    #: not the column of that name (the general front end's keys, see rewriter.atoms)
    key_exprs: tuple[exp.Expr, ...] | None = None

    def key(self, index: int) -> exp.Expr:
        """The expression of group key ``index`` over canonical release columns."""
        if self.key_exprs is not None:
            return self.key_exprs[index]
        return exp.column(self.group_by[index], quoted=True)

    @property
    def aggregates(self) -> tuple[AggregateItem, ...]:
        return tuple(i for i in self.items if isinstance(i, AggregateItem))


def _refuse(what: str, node: exp.Expr | None = None, hint: str = "") -> UnsupportedQueryError:
    part = f": {node.sql()}" if node is not None else ""
    return UnsupportedQueryError(f"{what} is not supported{part}" + (f"; {hint}" if hint else ""))


def parse_single_select(
    sql: str,
    dialect: str,
    limits: QueryLimits = DEFAULT_LIMITS,
    checkpoint: Callable[[], None] | None = None,
) -> exp.Select:
    """The one SELECT statement in ``sql``, or UnsupportedQueryError (QueryLimitError
    before parsing when ``sql`` exceeds ``limits``)."""
    stmt = parse_statement(sql, dialect, limits, checkpoint)
    if isinstance(stmt, exp.SetOperation):
        raise _refuse(f"{stmt.key.upper()} of queries", hint="rewrite each SELECT separately")
    assert isinstance(stmt, exp.Select)
    return stmt


def _check_shape(select: exp.Select) -> None:
    if select.args.get("with_"):
        raise _refuse("a CTE (WITH ...)", select.args["with_"])
    if select.args.get("joins"):
        raise _refuse("a join", select.args["joins"][0], "query one release at a time")
    if select.args.get("having"):
        raise _refuse("HAVING", select.args["having"], "filter the intervals afterwards")
    if select.args.get("distinct"):
        raise _refuse("SELECT DISTINCT", hint="use GROUP BY")
    for key, value in select.args.items():
        if value and key not in _SELECT_ARGS:
            clause = value if isinstance(value, exp.Expression) else None
            raise _refuse(f"the {key.rstrip('_').upper()} clause", clause)
    for node in select.walk():
        if isinstance(node, exp.Window):
            raise _refuse("a window function", node)
        if node is not select and isinstance(node, exp.Query | exp.Subquery):
            raise _refuse("a subquery", node)


def _release(select: exp.Select, catalog: Catalog) -> tuple[ReleaseInfo, set[str]]:
    """The release in FROM and the qualifiers its columns may carry."""
    from_ = select.args.get("from_")
    if from_ is None:
        raise UnsupportedQueryError("the query has no FROM; name a release table")
    table = from_.this
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        raise _refuse("FROM anything but a release table", table)
    for key, value in table.args.items():
        if value and key not in _TABLE_ARGS:
            raise _refuse(f"table option {key.upper()}", table)
    if table.args.get("db") or table.args.get("catalog"):
        raise UnsupportedQueryError(
            f"table {table.sql()} is not a release; only release tables may be queried, "
            "by their unqualified name"
        )
    info = served(lookup(catalog, table.name))
    if info is None:
        known = ", ".join(sorted(catalog)) or "none"
        raise UnsupportedQueryError(
            f"table {table.name!r} is not a release known to the catalog (known: {known}); "
            "only release tables may be queried"
        )
    qualifiers = {table.name.lower()}
    if table.alias:
        qualifiers = {table.alias.lower()}
    return info, qualifiers


class _Columns:
    """Resolves the analyst's column references to the release's canonical names."""

    def __init__(self, info: ReleaseInfo, qualifiers: set[str]) -> None:
        self.info = info
        self.qualifiers = qualifiers
        names = [*info.quasi, *info.sensitive, info.key_column]
        self.by_lower = {n.lower(): n for n in names}

    def resolve(self, column: exp.Column) -> str:
        if column.args.get("db") or column.args.get("catalog"):
            raise _refuse("a column qualified by schema", column)
        if column.table and column.table.lower() not in self.qualifiers:
            raise UnsupportedQueryError(
                f"column {column.sql()} does not belong to the release in FROM"
            )
        if isinstance(column.this, exp.Star):
            raise _refuse("SELECT *", column, "select group columns and aggregates")
        name = self.by_lower.get(column.name.lower())
        if name is None:
            raise UnsupportedQueryError(
                f"column {column.name!r} is not published in release {self.info.table!r} "
                f"(columns: {', '.join(self.by_lower.values())})"
            )
        return name

    def is_sensitive(self, name: str) -> bool:
        return name in self.info.sensitive


def _predicate(where: exp.Expr, cols: _Columns) -> exp.Expr:
    for node in where.walk():
        if not isinstance(node, _PREDICATE_NODES):
            raise _refuse(f"{type(node).__name__} in WHERE", node)
        if isinstance(node, exp.In) and not node.expressions:
            raise _refuse("IN without a literal list", node)

    def canonical(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            return exp.column(cols.resolve(node), quoted=True)
        return node

    return where.transform(canonical)  # a copy: transform copies the tree once


def _aggregate(node: exp.Expr, cols: _Columns) -> tuple[str, str | None]:
    func = AGGREGATES[type(node)]
    arg = node.this
    if isinstance(arg, exp.Distinct):
        raise _refuse(f"{func.upper()}(DISTINCT ...)", node)
    if func == "count" and isinstance(arg, exp.Star):
        return func, None
    if not isinstance(arg, exp.Column) or node.expressions:
        raise _refuse(
            f"{func.upper()} of anything but a column", node, "aggregate a published column"
        )
    column = cols.resolve(arg)
    if func != "count" and not cols.is_sensitive(column):
        raise _refuse(
            f"{func.upper()} over the non-sensitive column {column!r}",
            node,
            "only COUNT applies to quasi-identifiers",
        )
    return func, column


def check_output_names(items: Iterable[tuple[str, bool]], bare: bool = True) -> None:
    """Refuse two items of one name, or two output columns of one name: each item is
    ``(name, is an interval)``; an interval's columns are ``<name>_low``, ``<name>_high``
    and ``<name>_est``, and with ``bare`` also ``<name>`` (an exact count's bare column
    may be added). The general path passes ``bare=False`` and checks its columns again
    once it knows which counts are exact (:func:`check_columns`): ``COUNT(*) AS n`` next
    to ``SUM(x) AS n_high`` is fine unless SUM(x) is an exact count."""
    items = list(items)
    columns = [
        c
        for item, interval in items
        for c in [
            *([item] if bare or not interval else []),
            *([f"{item}_low", f"{item}_high", f"{item}_est"] if interval else []),
        ]
    ]
    check_columns([item for item, _ in items])  # items are named in HAVING and ORDER BY
    check_columns(columns)


def check_columns(names: Iterable[str]) -> None:
    """Refuse a name that appears twice (case-insensitively)."""
    seen: set[str] = set()
    for name in names:
        if name.lower() in seen:
            raise UnsupportedQueryError(
                f"output column {name!r} would appear twice; give the items distinct aliases"
            )
        seen.add(name.lower())


def analyze(
    sql: str,
    catalog: Catalog,
    dialect: str = "duckdb",
    limits: QueryLimits = DEFAULT_LIMITS,
    checkpoint: Callable[[], None] | None = None,
) -> Query:
    """Parse and check ``sql``; the checked :class:`Query` or UnsupportedQueryError.
    ``checkpoint`` runs between tokenizing and parsing."""
    select = parse_single_select(sql, dialect, limits, checkpoint)
    _check_shape(select)
    info, qualifiers = _release(select, catalog)
    cols = _Columns(info, qualifiers)

    group_by: list[str] = []
    group = select.args.get("group")
    if group is not None:
        for key, value in group.args.items():
            if value and key != "expressions":
                raise _refuse(f"GROUP BY {key.upper()}", group)
        for node in group.expressions:
            if not isinstance(node, exp.Column):
                raise _refuse("GROUP BY of anything but a column", node)
            name = cols.resolve(node)
            if cols.is_sensitive(name) and info.model == "ke":
                raise _refuse(
                    "GROUP BY the permuted sensitive column", node, "group by quasi-identifiers"
                )
            if name not in group_by:
                group_by.append(name)

    items: list[GroupItem | AggregateItem] = []
    for node in select.expressions:
        alias = node.alias if isinstance(node, exp.Alias) else None
        inner = node.this if isinstance(node, exp.Alias) else node
        if isinstance(inner, exp.Star):
            raise _refuse("SELECT *", hint="select group columns and aggregates")
        if isinstance(inner, exp.Column):
            column = cols.resolve(inner)
            if column not in group_by:
                raise UnsupportedQueryError(
                    f"column {inner.sql()} in SELECT is neither aggregated nor in GROUP BY"
                )
            items.append(GroupItem(column, alias or column))
        elif type(inner) in AGGREGATES:
            func, arg = _aggregate(inner, cols)
            items.append(AggregateItem(func, arg, alias or f"{func}_{arg or 'star'}"))
        else:
            raise _refuse(
                "this SELECT item", inner, "select group columns and COUNT/SUM/AVG/MIN/MAX"
            )
    if not any(isinstance(i, AggregateItem) for i in items):
        raise UnsupportedQueryError(
            "the query has no aggregate; add one such as COUNT(*) (row-level answers are "
            "not intervals)"
        )
    check_output_names((i.name, isinstance(i, AggregateItem)) for i in items)

    where = select.args.get("where")
    predicate = _predicate(where.this, cols) if where is not None else None
    order = _order(select, items, cols)
    limit = _limit(select)
    return Query(info, tuple(items), tuple(group_by), predicate, order, limit)


def _order(
    select: exp.Select, items: list[GroupItem | AggregateItem], cols: _Columns
) -> tuple[OrderItem, ...]:
    order = select.args.get("order")
    if order is None:
        return ()
    groups = [i for i in items if isinstance(i, GroupItem)]
    result = []
    for ordered in order.expressions:
        key = ordered.this
        match = None
        if isinstance(key, exp.Column):
            lowered = key.name.lower()
            match = next((g for g in groups if g.name.lower() == lowered), None)
            if match is None and key.name.lower() in cols.by_lower:
                column = cols.resolve(key)
                match = next((g for g in groups if g.column == column), None)
        if match is None:
            raise _refuse(
                "ORDER BY anything but a selected group column",
                ordered,
                "sort the intervals afterwards",
            )
        result.append(
            OrderItem(match.name, bool(ordered.args.get("desc")), ordered.args.get("nulls_first"))
        )
    return tuple(result)


def _limit(select: exp.Select) -> int | None:
    limit = select.args.get("limit")
    if limit is None:
        return None
    value = limit.expression
    if not (isinstance(value, exp.Literal) and value.is_int) or any(
        v for k, v in limit.args.items() if k != "expression"
    ):
        raise _refuse("this LIMIT", limit, "use LIMIT <integer>")
    return int(value.name)
