"""FROM clauses the general rewriter answers, turned into the rows of one release.

A query reads one release, possibly through CTEs and derived tables that filter it or
compute columns of it (inlined here: a row-level SELECT over one release is a per-row
transform, so aggregating its output is aggregating the release's rows with the
computed expressions), joined to public lookup data:

- ``JOIN (VALUES ...) AS v(a, b) ON ...`` (inner or left), when the ON clause equates
  columns of ``v`` whose value tuples are unique among the VALUES rows (checked here,
  on literals): a release row then matches at most one VALUES row, so it stays one row;
- ``JOIN public_table AS l ON l.c = <expression of the release> AND ...`` (inner or
  left): the table's rows are unknown here, so the answer checks at run time that no
  release row meets a repeated key (:mod:`sqlanon.rewriter.lookup_join`). Its columns
  are read qualified (``l.level``): an unqualified name is a release column;
- ``x IN (SELECT ... FROM public_table ...)``, ``IN (VALUES ...)``, uncorrelated
  ``EXISTS (...)``: semi-joins, per-row conditions that cannot repeat a row, whatever
  the public table holds. Tables are read with the analyst's own rights.

A named table must be public: never a release, a bounds table or a release's source,
never in schema ``sqlanon``. Expressions are checked against :data:`ROW_NODES` (no
window, no aggregate, no unknown function) and their columns resolved to
``r."<canonical>"`` (:data:`~sqlanon.rewriter.shape.RELEASE_ALIAS`) or ``<join alias>.c``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter import lookup_join
from sqlanon.rewriter.release_info import Catalog, ReleaseInfo, lookup, served
from sqlanon.rewriter.shape import RELEASE_ALIAS, PublicJoin

#: Node types a per-row expression (WHERE, group key, aggregate argument, ON) may hold;
#: every function here renders in each dialect as a builtin (PostgreSQL: pg_catalog's,
#: qualified by sqltext.pg_qualified).
ROW_NODES: tuple[type[exp.Expr], ...] = (
    *(exp.Column, exp.Identifier, exp.Literal, exp.Null, exp.Boolean, exp.Paren, exp.Neg),
    *(exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ),
    *(exp.Between, exp.In, exp.Like, exp.ILike, exp.Is, exp.Not, exp.And, exp.Or),
    *(exp.Cast, exp.DataType, exp.DataTypeParam, exp.Add, exp.Sub, exp.Mul, exp.Div),
    *(exp.Mod, exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Lower, exp.Upper),
    *(exp.Length, exp.Abs, exp.Floor, exp.Ceil, exp.Round, exp.Ln, exp.Exp, exp.Sqrt),
    *(exp.Pow, exp.Sign, exp.Greatest, exp.Least, exp.Concat, exp.DPipe, exp.Tuple),
    *(exp.Substring, exp.Left, exp.Right, exp.Trim, exp.Replace),
    exp.Values,
    exp.Exists,
)

#: Nodes of a public subquery besides :data:`ROW_NODES`.
_QUERY_NODES = (
    *(exp.Select, exp.Union, exp.From, exp.Where, exp.Table, exp.TableAlias),
    *(exp.Subquery, exp.Distinct, exp.Join, exp.Exists),
)


def refuse(what: str, node: exp.Expr | None = None, hint: str = "") -> UnsupportedQueryError:
    part = f": {node.sql()}" if node is not None else ""
    return UnsupportedQueryError(f"{what} is not supported{part}" + (f"; {hint}" if hint else ""))


@dataclass
class Context:
    """What every part of one query's resolution shares."""

    catalog: Catalog
    private: frozenset[str]
    public: set[tuple[str, str]] = field(default_factory=set)  # named tables read
    dialect: str = "duckdb"  # the answer's (a joined table's guard depends on it)


@dataclass
class Rows:
    """The rows one SELECT aggregates: a release's, filtered, joined, with columns."""

    release: ReleaseInfo
    #: qualifier (lower case) -> column (lower case) -> expression; None: ambiguous
    columns: dict[str, dict[str, exp.Expr | None]]
    where: list[exp.Expr] = field(default_factory=list)
    joins: list[PublicJoin] = field(default_factory=list)
    #: aliases (lower case) of joined named tables: any column under them is theirs
    lookups: set[str] = field(default_factory=set)

    def visible(self) -> dict[str, exp.Expr | None]:
        """Unqualified names: a name under two qualifiers is ambiguous (None)."""
        found: dict[str, exp.Expr | None] = {}
        for cols in self.columns.values():
            for name, expr in cols.items():
                found[name] = None if name in found else expr
        return found


#: CTEs in scope: name (lower case) -> (body, the CTEs in scope where it is defined).
Ctes = dict[str, tuple[exp.Expr, "Ctes", list[str]]]


def scope_ctes(query: exp.Expr, outer: Ctes) -> Ctes:
    """``outer`` plus the CTEs ``query``'s WITH defines (each sees the earlier ones)."""
    with_ = query.args.get("with_")
    if with_ is None:
        return outer
    if with_.args.get("recursive"):
        raise refuse("WITH RECURSIVE", with_)
    found = dict(outer)
    for cte in with_.expressions:
        names = [c.name for c in cte.args["alias"].columns] if cte.args.get("alias") else []
        found[cte.alias.lower()] = (cte.this, dict(found), names)
    return found


def rows_of(select: exp.Select, ctes: Ctes, ctx: Context) -> Rows:
    """The rows ``select`` reads: FROM, its joins and its WHERE, resolved."""
    from_ = select.args.get("from_")
    if from_ is None:
        raise UnsupportedQueryError("the query has no FROM; name a release table")
    rows = _relation(from_.this, ctes, ctx)
    for join in select.args.get("joins") or []:
        _join(rows, join, ctes, ctx)
    where = select.args.get("where")
    if where is not None:
        rows.where.append(row_expr(where.this, rows, ctx))
    return rows


def _relation(node: exp.Expr, ctes: Ctes, ctx: Context) -> Rows:
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        return _renamed(_derived(node.this, ctes, ctx), node.alias, [])
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
        raise refuse("FROM anything but a release, a CTE or a derived table", node)
    if not node.args.get("db") and not node.args.get("catalog") and node.name.lower() in ctes:
        body, outer, names = ctes[node.name.lower()]
        if not isinstance(body, exp.Select):
            raise refuse(f"a CTE that is not one SELECT ({node.name})", body)
        return _renamed(_derived(body, outer, ctx), node.alias or node.name, names)
    return _release(node, ctx)


def _release(table: exp.Table, ctx: Context) -> Rows:
    for key, value in table.args.items():
        if value and key not in ("this", "alias", "db", "catalog"):
            raise refuse(f"table option {key.upper()}", table)
    if table.args.get("db") or table.args.get("catalog"):
        raise UnsupportedQueryError(
            f"table {table.sql()} is not a release; only release tables may be queried, "
            "by their unqualified name"
        )
    info = served(lookup(ctx.catalog, table.name))
    if info is None:
        known = ", ".join(sorted(ctx.catalog)) or "none"
        raise UnsupportedQueryError(
            f"table {table.name!r} is not a release known to the catalog (known: {known}); "
            "only release tables may be queried"
        )
    names = [*info.quasi, *info.sensitive, info.key_column]
    cols: dict[str, exp.Expr | None] = {
        n.lower(): exp.column(n, table=RELEASE_ALIAS, quoted=True) for n in names
    }
    return Rows(info, {(table.alias or table.name).lower(): cols})


def _derived(select: exp.Select, outer: Ctes, ctx: Context) -> Rows:
    """A CTE or derived table: a row-level SELECT over one release, inlined."""
    for key, value in select.args.items():
        if value and key not in ("expressions", "from_", "where", "joins", "with_", "order"):
            raise refuse(f"{key.rstrip('_').upper()} in a CTE or derived table", select)
    ctes = scope_ctes(select, outer)
    rows = rows_of(select, ctes, ctx)
    out: dict[str, exp.Expr | None] = {}
    for item in select.expressions:
        inner = item.this if isinstance(item, exp.Alias) else item
        if isinstance(inner, exp.Star) or (
            isinstance(inner, exp.Column) and isinstance(inner.this, exp.Star)
        ):
            source = rows.visible() if isinstance(inner, exp.Star) else _qualified(rows, inner)
            for name, expr in source.items():
                out[name] = None if name in out else expr
            continue
        if any(isinstance(n, exp.AggFunc) for n in inner.walk()):
            raise refuse("an aggregate in a CTE or derived table", item, "aggregate outside")
        name = item.alias_or_name.lower()
        out[name] = None if name in out else row_expr(inner, rows, ctx)
    return Rows(rows.release, {"": out}, rows.where, rows.joins)


def _qualified(rows: Rows, star: exp.Column) -> dict[str, exp.Expr | None]:
    if star.table.lower() in rows.lookups:
        raise refuse(f"{star.sql()} of a joined table", star, "name its columns")
    found = rows.columns.get(star.table.lower())
    if found is None:
        raise UnsupportedQueryError(f"{star.sql()} names no relation of the FROM clause")
    return found


def _renamed(rows: Rows, alias: str, names: list[str]) -> Rows:
    (cols,) = rows.columns.values()
    if names:
        if len(names) > len(cols):
            raise UnsupportedQueryError(f"{alias} names more columns than it has")
        values = list(cols.values())
        cols = {n.lower(): values[i] for i, n in enumerate(names)} | dict(
            list(cols.items())[len(names) :]
        )
    return Rows(rows.release, {alias.lower(): cols}, rows.where, rows.joins)


def resolve(column: exp.Column, rows: Rows) -> exp.Expr:
    """The expression ``column`` stands for in ``rows`` (a copy)."""
    if column.args.get("db") or column.args.get("catalog"):
        raise refuse("a column qualified by schema", column)
    if isinstance(column.this, exp.Star):
        raise refuse("SELECT *", column, "select group columns and aggregates")
    if column.table and column.table.lower() in rows.lookups:
        return exp.Column(this=column.this.copy(), table=exp.to_identifier(column.table.lower()))
    if column.table:
        cols = rows.columns.get(column.table.lower())
        if cols is None:
            raise UnsupportedQueryError(
                f"column {column.sql()} does not belong to the release in FROM"
            )
    else:
        cols = rows.visible()
    name = column.name.lower()
    if name not in cols:
        known = ", ".join(k for k in cols if k)
        raise UnsupportedQueryError(
            f"column {column.name!r} is not published in release {rows.release.table!r} "
            f"(columns: {known})"
        )
    found = cols[name]
    if found is None:
        raise UnsupportedQueryError(f"column {column.sql()} is ambiguous; qualify it")
    return found.copy()


def row_expr(tree: exp.Expr, rows: Rows, ctx: Context) -> exp.Expr:
    """A checked copy of a per-row expression with its columns resolved."""
    for node in tree.walk(prune=lambda n: isinstance(n, exp.Query | exp.Subquery)):
        if isinstance(node, exp.Query | exp.Subquery):
            if not isinstance(node.parent, exp.In | exp.Exists):
                raise refuse("a subquery", node, "only IN (SELECT ...) and EXISTS are read")
            continue
        if isinstance(node, exp.AggFunc | exp.Window):
            raise refuse(f"{type(node).__name__.upper()} in a per-row expression", node)
        if not isinstance(node, ROW_NODES):
            raise refuse(f"{type(node).__name__} in a per-row expression", node)

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Query) and not isinstance(node.parent, exp.Subquery):
            return public_query(node, ctx)
        if isinstance(node, exp.Subquery):
            return exp.Subquery(this=public_query(node.this, ctx))
        if isinstance(node, exp.Column):
            return resolve(node, rows)
        return node

    return _transform_outside_queries(tree, swap)


def _transform_outside_queries(tree: exp.Expr, swap: object) -> exp.Expr:
    """``tree.transform(swap)`` that does not look inside the subqueries ``swap`` returns."""
    assert callable(swap)
    if isinstance(tree, exp.Query | exp.Subquery | exp.Column):
        return swap(tree)  # type: ignore[no-any-return]
    new = tree.copy()
    for key, value in list(new.args.items()):
        if isinstance(value, exp.Expr):
            new.set(key, _transform_outside_queries(value, swap))
        elif isinstance(value, list):
            new.set(
                key,
                [
                    _transform_outside_queries(v, swap) if isinstance(v, exp.Expr) else v
                    for v in value
                ],
            )
    return new


def public_query(query: exp.Expr, ctx: Context) -> exp.Expr:
    """A checked copy of an uncorrelated subquery over public data (a semi-join)."""
    query = query.copy()
    for node in query.walk():
        if isinstance(node, exp.AggFunc | exp.Window):
            raise refuse("an aggregate or window in a subquery", node)
        if not isinstance(node, ROW_NODES + _QUERY_NODES):
            raise refuse(f"{type(node).__name__} in a subquery", node)
        if isinstance(node, exp.Table):
            _check_public(node, ctx)
    for select in list(query.find_all(exp.Select)):
        _uncorrelated(select)
    return query


def _check_public(table: exp.Table, ctx: Context) -> None:
    if not isinstance(table.this, exp.Identifier) or table.args.get("catalog"):
        raise refuse("this relation in a subquery", table)
    name = table.name.lower()
    if lookup(ctx.catalog, table.name) is not None:
        raise refuse(f"a subquery reading the release {table.name!r}", table)
    if table.db.lower() == "sqlanon" or name in ctx.private:
        raise UnsupportedQueryError(
            f"table {table.sql()} is private (a release's source or sqlanon's state); "
            "only public tables may be joined"
        )
    if not table.db and (schema := _release_schema(ctx.catalog)) is not None:
        # PostgreSQL runs the answer with a pinned search path: an unqualified lookup
        # table is the one beside the releases (still read with the analyst's rights)
        table.set("db", exp.to_identifier(schema, quoted=True))
    ctx.public.add((table.db, table.name))


def _release_schema(catalog: Catalog) -> str | None:
    """The one schema every release of the catalog names (PostgreSQL), else None."""
    schemas = {info.schema for info in catalog.values()}
    return schemas.pop() if len(schemas) == 1 else None


def _uncorrelated(select: exp.Select) -> None:
    """Refuse columns naming anything outside ``select``; qualify unqualified columns
    when ``select`` reads one relation, so none can bind to an outer query."""
    relations = []
    if select.args.get("from_") is not None:
        relations.append(select.args["from_"].this)
    relations += [j.this for j in select.args.get("joins") or []]
    names = {r.alias_or_name.lower() for r in relations}
    for column in select.find_all(exp.Column):
        if column.find_ancestor(exp.Select) is not select:
            continue
        if column.table:
            if column.table.lower() not in names:
                raise refuse("a correlated subquery", select)
        elif len(relations) == 1 and relations[0].alias_or_name:
            column.set("table", exp.to_identifier(relations[0].alias_or_name))
        else:
            raise refuse("an unqualified column in a subquery", column, "qualify it")


def _join(rows: Rows, join: exp.Join, ctes: Ctes, ctx: Context) -> None:
    """Add a joined VALUES or named public table to ``rows`` (see the module doc)."""
    side, kind = join.args.get("side") or "", join.args.get("kind") or ""
    if side.upper() not in ("", "LEFT") or kind.upper() not in ("", "INNER", "OUTER"):
        raise refuse(f"a {side} {kind} join", join, "use INNER or LEFT JOIN")
    if join.args.get("using") or not join.args.get("on"):
        raise refuse("a join without ON", join)
    how = "LEFT" if side else "INNER"
    values = join.this
    if isinstance(values, exp.Subquery) and isinstance(values.this, exp.Values):
        values = values.this.copy()
        values.set("alias", join.this.args.get("alias"))
    if isinstance(values, exp.Values):
        _join_values(rows, values, join.args["on"], how, ctx)
    elif isinstance(join.this, exp.Table) and not _names_cte(join.this, ctes):
        _join_table(rows, join.this, join.args["on"], how, ctx)
    else:
        hint = "join a public table or VALUES; joins of two releases are refused"
        raise refuse("a join of a derived table or CTE", join, hint)


def _names_cte(table: exp.Table, ctes: Ctes) -> bool:
    return not table.args.get("db") and table.name.lower() in ctes


def _free_alias(rows: Rows, alias: str) -> None:
    if alias.lower() == RELEASE_ALIAS or alias.lower() in rows.columns:
        raise UnsupportedQueryError(f"the join alias {alias!r} is taken; rename it")


def _join_values(rows: Rows, values: exp.Values, on: exp.Expr, how: str, ctx: Context) -> None:
    alias = values.alias
    names = [c.name for c in values.args["alias"].columns] if values.args.get("alias") else []
    _free_alias(rows, alias)
    if not alias or not names:
        raise refuse("VALUES without an alias and column names", values, "write AS v(a, b)")
    _check_literals(values)
    cols: dict[str, exp.Expr | None] = {
        n.lower(): exp.column(n, table=alias, quoted=True) for n in names
    }
    rows.columns[alias.lower()] = cols
    resolved = row_expr(on, rows, ctx)
    _check_unique(values, names, resolved, alias)
    relation = exp.Values(expressions=[t.copy() for t in values.expressions])
    relation.set("alias", exp.TableAlias(this=exp.to_identifier(alias), columns=names))
    rows.joins.append(PublicJoin(relation, alias, resolved, how))


def _join_table(rows: Rows, table: exp.Table, on: exp.Expr, how: str, ctx: Context) -> None:
    """A named public table, read through :func:`lookup_join.counted` and joined on an
    ON that :func:`lookup_join.guard` completes (the answer raises when a release row
    meets a repeated key)."""
    for key, value in table.args.items():
        if value and key not in ("this", "alias", "db"):
            raise refuse(f"table option {key.upper()} on a joined table", table)
    if table.args.get("alias") is not None and table.args["alias"].columns:
        raise refuse("column aliases on a joined table", table, "name its columns in ON")
    if not table.db and lookup(ctx.catalog, table.name) is not None:
        raise refuse("a join of two releases", table, "query one release at a time")
    if not lookup_join.supported(ctx.dialect):
        raise refuse(
            f"a join of a named table in dialect {ctx.dialect!r}",
            table,
            "it is answered on DuckDB, PostgreSQL and Spark; use IN (SELECT ...) instead",
        )
    source = exp.Table(this=table.this.copy(), db=table.args.get("db"))
    _check_public(source, ctx)
    alias = (table.alias or table.name).lower()
    _free_alias(rows, alias)
    rows.columns[alias] = {}
    rows.lookups.add(alias)
    resolved = row_expr(on, rows, ctx)
    keys = lookup_join.key_columns(resolved, alias)
    guarded = exp.and_(resolved, lookup_join.guard(alias, source, keys, ctx.dialect))
    rows.joins.append(PublicJoin(lookup_join.counted(source, alias, keys), alias, guarded, how))


def _check_literals(values: exp.Values) -> None:
    for row in values.expressions:
        if not isinstance(row, exp.Tuple):
            raise refuse("this VALUES row", row)
        for value in row.expressions:
            if _literal_key(value) is None and not isinstance(value, exp.Null):
                raise refuse("VALUES holding anything but literals", value)


def _literal_key(value: exp.Expr) -> tuple[str, object] | None:
    """A value's identity for the uniqueness check (numbers compared as numbers)."""
    negative = isinstance(value, exp.Neg)
    inner = value.this if negative else value
    if isinstance(inner, exp.Literal) and not inner.is_string:
        try:
            number = Decimal(inner.name)
        except InvalidOperation:
            return None
        return ("number", -number if negative else number)
    if isinstance(inner, exp.Literal) and not negative:
        return ("string", inner.name)
    if isinstance(inner, exp.Boolean) and not negative:
        return ("boolean", inner.this)
    return None


def _check_unique(values: exp.Values, names: list[str], on: exp.Expr, alias: str) -> None:
    """Each release row matches at most one VALUES row: ON requires ``v.c = <expr not
    reading v>`` for columns ``c`` whose value tuples are distinct among the rows with no
    NULL in them (a NULL never satisfies ``=``)."""
    terms = list(on.flatten()) if isinstance(on, exp.And) else [on]
    keyed: list[int] = []
    for term in terms:
        term = term.unnest()
        if not isinstance(term, exp.EQ):
            continue
        for mine, other in ((term.this, term.expression), (term.expression, term.this)):
            if (
                isinstance(mine, exp.Column)
                and mine.table == alias
                and not any(c.table == alias for c in other.find_all(exp.Column))
            ):
                keyed.append([n.lower() for n in names].index(mine.name.lower()))
    if not keyed:
        raise refuse(f"a join whose ON does not equate a column of {alias} to the release", on)
    seen: set[tuple[object, ...]] = set()
    kinds: dict[int, set[str]] = {}
    for row in values.expressions:
        found = [_literal_key(row.expressions[i]) for i in keyed]
        if any(f is None for f in found):
            continue  # a NULL key matches nothing
        for i, f in zip(keyed, found, strict=True):
            kinds.setdefault(i, set()).add(f[0])  # type: ignore[index]
        key = tuple(found)
        if key in seen:
            raise UnsupportedQueryError(
                f"the VALUES joined as {alias} repeat the key {[f[1] for f in key]}; "  # type: ignore[index]
                "a release row would be counted twice (make the join keys unique)"
            )
        seen.add(key)
    if any(len(k) > 1 for k in kinds.values()):
        raise refuse(f"VALUES mixing numbers and text in a join key of {alias}", values)
