"""The atoms of a :class:`~sqlanon.rewriter.shape.Shape` over an lHD release, as one query.

The query's output is the contract of :mod:`sqlanon.rewriter.shape`. Its CTEs:

- ``judgeN`` (only for conditions the Python judge cannot read, :mod:`lhd_flags`);
- ``rel`` (releases with ghosts): the release with each class's number of rows, counted
  before any join drops some of them;
- ``lab``: per Shape row (the release ``r`` and its public joins), the group keys
  ``k0..`` (over published labels and sensitive values, exact), each atom's argument
  (``lo``/``hi``: equal for an exact argument; the bounds of the label's raw values,
  pushed through arithmetic monotone in one quasi column, for one reading it) and the
  columns the compiled conditions read;
- ``rows``: per row and atom i, ``s{i}`` (surely selected: the Shape's WHERE and the
  atom's FILTER must hold and the argument is not NULL), ``m{i}`` (may be selected),
  ``f{i}`` (estimate weight), ``wmay`` (the WHERE may hold: the row may make its group
  non-empty);
- with ghosts, ``cell`` and ``real``: the cells of :mod:`lhd_ghosts` (one class, one
  key). COUNT is bounded per cell as there (tight); for every other atom a row of a
  class holding ghosts is only possible (it may be a ghost), and a row of a cell that
  cannot hold a real row is dropped: sound, since every set of real selected rows is
  then among the selections considered;
- ``ranked``: the window columns of AVG and the quantiles (:mod:`lhd_atoms`).

The final SELECT groups by the keys and keeps the groups some row may enter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sqlglot import exp

from sqlanon.errors import UnsupportedQueryError
from sqlanon.rewriter import lhd_atoms
from sqlanon.rewriter.lhd_flags import FlagCompiler, Flags, combine, copied
from sqlanon.rewriter.release_info import LabelDomain, ReleaseInfo
from sqlanon.rewriter.shape import (
    ATOM_FUNCS,
    RELEASE_ALIAS,
    Atom,
    PublicJoin,
    Shape,
    atom_column,
    key_name,
)
from sqlanon.rewriter.sqlbuild import CTE_PREFIX, with_cte
from sqlanon.rewriter.sqlbuild import column as _col
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import fragment as _f
from sqlanon.rewriter.sqlbuild import show as _show

_DOUBLE = exp.DataType(this=exp.DataType.Type.DOUBLE)
_N_CLASS = "sqlanon_n_class"


def _key(column: exp.Column) -> str:
    """Release columns by name, joined columns as ``alias.name`` (never a quasi name)."""
    return column.name if column.table == RELEASE_ALIAS else f"{column.table}.{column.name}"


def _quasi_read(node: exp.Expr, release: ReleaseInfo) -> set[str]:
    return {
        c.name
        for c in node.find_all(exp.Column)
        if c.table == RELEASE_ALIAS and c.name in release.quasi
    }


def atoms_query(shape: Shape) -> exp.Select:
    """The query bounding every atom of ``shape``, one row per group that may be
    non-empty (see :mod:`sqlanon.rewriter.shape`)."""
    release = shape.release
    if release.model != "lhd" or release.domains is None:
        raise UnsupportedQueryError(
            f"release {release.table!r} is an lHD release whose hierarchies are not in the "
            "catalog; build the catalog with sqlanon.intervals.release_catalog on DuckDB"
        )
    compiler = FlagCompiler(release, RELEASE_ALIAS, _key, lambda t: t.copy(), by_leaves=True)
    where = compiler.compile(shape.where) if shape.where is not None else None
    _check_keys(shape)
    keys = [key_name(j) for j in range(len(shape.keys))]
    lab_cols: list[exp.Expr] = [
        exp.alias_(k.copy(), name) for k, name in zip(shape.keys, keys, strict=True)
    ]
    row_cols: list[exp.Expr | str] = [f"l.{k}" for k in keys]
    for i, atom in enumerate(shape.atoms):
        atom_lab, atom_rows = _atom_columns(i, atom, shape, compiler, where)
        lab_cols += atom_lab
        row_cols += atom_rows
    wmay = exp.func("COALESCE", where.may_t, exp.false()) if where else exp.true()
    row_cols.append(exp.alias_(wmay, "wmay", copy=False))
    ctes: list[tuple[str, exp.Query]] = [(j.name, j.body) for j in compiler.judges]
    source: exp.Expr = exp.table_(release.table, db=release.schema, quoted=True)
    if release.ghosts:
        ctes.append(("rel", _with_class_sizes(release)))
        source = _cte("rel")
        lab_cols += [
            exp.alias_(_col(RELEASE_ALIAS, release.key_column), "cid"),
            exp.alias_(_col(RELEASE_ALIAS, release.ghost_column), "cg"),
            exp.alias_(_col(RELEASE_ALIAS, _N_CLASS), "ncls"),
        ]
        row_cols += ["l.cid", "CAST(l.cg AS BIGINT) AS cg", "l.ncls"]
    lab_cols += compiler.columns
    lab_cols.append(exp.alias_(exp.Literal.number(1), "one"))  # never an empty SELECT
    lab = exp.select(*lab_cols).from_(exp.alias_(source, RELEASE_ALIAS, table=True), copy=False)
    for join in shape.joins:
        lab = _joined(lab, join, release)
    ctes.append(("lab", compiler.join_to(lab)))
    ctes.append(("rows", _select(row_cols, "lab", "l")))
    if release.ghosts:
        ctes += _ghost_ctes(keys, shape.atoms)
    ctx = lhd_atoms.Context(tuple(keys), bool(release.ghosts))
    ranked = [w for i, a in enumerate(shape.atoms) for w in lhd_atoms.windows(i, a, ctx)]
    if ranked:
        ctes.append(("ranked", _select(["c.*", *ranked], ctes[-1][0], "c")))
    return _final(shape, keys, ctx, ctes)


def _final(
    shape: Shape, keys: list[str], ctx: lhd_atoms.Context, ctes: list[tuple[str, exp.Query]]
) -> exp.Select:
    columns = [f"c.{k} AS {k}" for k in keys]
    for i, atom in enumerate(shape.atoms):
        for part, sql in lhd_atoms.bounds(i, atom, ctx).items():
            columns.append(f"{sql} AS {atom_column(i, part)}")
    final = _select(columns, ctes[-1][0], "c")
    if keys:
        final = final.group_by(*[exp.column(k, table="c") for k in keys], copy=False)
        final = final.having(_f("SUM(CASE WHEN c.wmay THEN 1 ELSE 0 END) > 0"), copy=False)
    for name, body in ctes:
        final = with_cte(final, CTE_PREFIX + name, body)
    return final


def _select(columns: Sequence[exp.Expr | str], source: str, alias: str) -> exp.Select:
    """SELECT ``columns`` (text: over the rewriter's own names only) FROM a CTE."""
    return exp.select(*[_f(c) if isinstance(c, str) else c for c in columns]).from_(
        exp.alias_(_cte(source), alias, table=True), copy=False
    )


def _with_class_sizes(release: ReleaseInfo) -> exp.Select:
    """The release with each row's class size (before joins drop rows of a class)."""
    table = exp.table_(release.table, db=release.schema, quoted=True, alias="t")
    size = exp.Window(
        this=exp.Count(this=exp.Star()),
        partition_by=[_col("t", release.key_column)],
        over="OVER",
    )
    return exp.select(
        exp.Column(this=exp.Star(), table=exp.to_identifier("t")), exp.alias_(size, _N_CLASS)
    ).from_(table, copy=False)


def _check_keys(shape: Shape) -> None:
    """A quasi column groups by its published label (``GROUP BY age``); an expression of
    one (``CASE WHEN age < 30 ...``, ``floor(age / 10)``) reads the raw value, which the
    label hides, so which group a record falls in would be uncertain: refused."""
    for key in shape.keys:
        if isinstance(key, exp.Column):
            continue
        if read := _quasi_read(key, shape.release):
            raise UnsupportedQueryError(
                f"GROUP BY an expression of the generalized column {sorted(read)[0]!r} is "
                f"not supported on lHD release {shape.release.table!r}: {_show(key)}; "
                f"group by the published label ({sorted(read)[0]}) instead"
            )


def _joined(select: exp.Select, join: PublicJoin, release: ReleaseInfo) -> exp.Select:
    """``select`` joined to a public relation on a condition reading no quasi column: a
    quasi column's raw value hides under its label, so which lookup row a record joins
    (or whether it joins at all) would be uncertain, and a join cannot say so."""
    if read := _quasi_read(join.on, release):
        raise UnsupportedQueryError(
            f"a join on the generalized column {sorted(read)[0]!r} of lHD release "
            f"{release.table!r} is not supported: {_show(join.on)}; filter with "
            "IN (VALUES ...) or IN (SELECT ...) instead, or join on a sensitive column"
        )
    relation = join.relation.copy()
    alias = relation.args.get("alias")
    if isinstance(alias, exp.TableAlias):
        alias.set("this", exp.to_identifier(join.alias))
        table: exp.Expr = relation
    else:
        table = exp.alias_(relation, join.alias, table=True)
    kind = "LEFT" if join.kind.upper() == "LEFT" else None
    return select.join(table, on=join.on.copy(), join_type=kind, copy=False)


# --- one atom's per-row columns -------------------------------------------------------


def _atom_columns(
    i: int, atom: Atom, shape: Shape, compiler: FlagCompiler, where: Flags | None
) -> tuple[list[exp.Expr], list[exp.Expr | str]]:
    """Atom i's columns of ``lab`` and of ``rows`` (over ``l``; text: internal names)."""
    if atom.func not in ATOM_FUNCS:
        raise UnsupportedQueryError(f"the aggregate {atom.func.upper()} is not supported")
    if atom.func.startswith("quantile") and not (
        atom.fraction is not None and 0 <= atom.fraction <= 1
    ):
        raise UnsupportedQueryError(f"{atom.func.upper()} needs a fraction in [0, 1]")
    parts = [copied(where)] if where is not None else []
    if atom.where is not None:
        parts.append(compiler.compile(atom.where))
    flags = combine(parts, exp.And) if parts else None
    lab: list[exp.Expr] = []
    rows: list[exp.Expr | str] = []
    not_null = "TRUE"
    arg = atom.arg
    quasi = _quasi_read(arg, shape.release) if arg is not None else set()
    if arg is not None and quasi:
        column = _quasi_arg(atom, arg, quasi, shape.release)
        if atom.func != "count":
            domain = shape.release.domains.get(column, LabelDomain())  # type: ignore[union-attr]
            low, high = _label_bounds(column, domain)
            on_low, on_high = _on_bound(arg, column, low), _on_bound(arg, column, high)
            lab += [
                exp.alias_(exp.func("LEAST", on_low, on_high), f"lo{i}"),
                exp.alias_(exp.func("GREATEST", on_low.copy(), on_high.copy()), f"hi{i}"),
            ]
            rows += [f"l.lo{i}", f"l.hi{i}", f"{_middle(f'l.lo{i}', f'l.hi{i}')} AS e{i}"]
    elif arg is not None:
        lab.append(exp.alias_(arg.copy(), f"lo{i}"))
        rows += [f"l.lo{i} AS lo{i}", f"l.lo{i} AS hi{i}", f"l.lo{i} AS e{i}"]
        not_null = f"l.lo{i} IS NOT NULL"
    may = flags.may_t if flags else exp.true()
    must = flags.must_t if flags else exp.true()
    frac = flags.frac if flags else _f("1.0")
    sure = exp.func("COALESCE", exp.and_(must, _f(not_null), copy=False), exp.false())
    maybe = exp.func("COALESCE", exp.and_(may, _f(not_null), copy=False), exp.false())
    weight = exp.Case(
        ifs=[
            exp.If(this=exp.not_(maybe.copy(), copy=False), true=_f("0.0")),
            exp.If(this=sure.copy(), true=_f("1.0")),
        ],
        default=frac,
    )
    rows += [
        exp.alias_(sure, f"s{i}", copy=False),
        exp.alias_(maybe, f"m{i}", copy=False),
        exp.alias_(exp.Cast(this=weight, to=_DOUBLE.copy()), f"f{i}", copy=False),
    ]
    return lab, rows


def _quasi_arg(atom: Atom, arg: exp.Expr, quasi: set[str], release: ReleaseInfo) -> str:
    """The quasi column an atom's argument reads; refuses what cannot be bounded."""
    name = f"{atom.func.upper()}({_show(arg)})"
    if len(quasi) > 1 or not _monotone(arg):
        raise UnsupportedQueryError(
            f"{name}: an aggregated quasi-identifier is bounded by its label only when the "
            "argument is it alone or +, -, * or / by constants"
        )
    if atom.func not in lhd_atoms.MONOTONE:
        raise UnsupportedQueryError(
            f"{name}: {atom.func.upper()} of a generalized quasi-identifier is not supported "
            "(its labels hide the values); aggregate a sensitive column"
        )
    column = next(iter(quasi))
    assert release.domains is not None
    if release.domains.get(column, LabelDomain()).nulls:
        raise UnsupportedQueryError(
            f"{name} over {release.table!r}, which published NULL values of {column!r} "
            "under generalized labels, is not supported; count with COUNT(*) and WHERE "
            f"{column} IS NOT NULL"
        )
    return column


def _monotone(node: exp.Expr) -> bool:
    """Whether ``node`` is monotone (either way) in the one column it reads."""
    node = node.unnest()
    if isinstance(node, exp.Column):
        return True
    if isinstance(node, exp.Neg | exp.Cast):
        return _monotone(node.this)
    if isinstance(node, exp.Add | exp.Sub | exp.Mul | exp.Div):
        left, right = node.this, node.expression
        constant_left = not list(left.find_all(exp.Column))
        constant_right = not list(right.find_all(exp.Column))
        if constant_right and not constant_left:
            return _monotone(left)
        if constant_left and not constant_right and not isinstance(node, exp.Div):
            return _monotone(right)
    return False


def _number(value: float) -> exp.Expr:
    if math.isinf(value):
        text = "Infinity" if value > 0 else "-Infinity"
        return exp.Cast(this=exp.Literal.string(text), to=_DOUBLE.copy())
    return exp.Cast(this=exp.Literal.number(repr(value)), to=_DOUBLE.copy())


def _label_bounds(column: str, domain: LabelDomain) -> tuple[exp.Expr, exp.Expr]:
    """CASEs giving the least and greatest raw value under the row's label (infinite
    for a label the catalog does not know)."""
    found: dict[str, tuple[float, float]] = dict(domain.intervals)
    for label, leaves in domain.leaves.items():
        try:
            values = [float(leaf) for leaf in leaves]
        except ValueError:
            raise UnsupportedQueryError(
                f"{column!r} holds text, it cannot be aggregated as a number"
            ) from None
        found[label] = (min(values), max(values))
    row = _col(RELEASE_ALIAS, column)

    def case(side: int, default: float) -> exp.Expr:
        ifs = [
            exp.If(
                this=exp.EQ(this=row.copy(), expression=exp.Literal.string(label)),
                true=_number(bounds[side]),
            )
            for label, bounds in sorted(found.items())
        ]
        return exp.Case(ifs=ifs, default=_number(default))

    return case(0, -math.inf), case(1, math.inf)


def _on_bound(arg: exp.Expr, column: str, bound: exp.Expr) -> exp.Expr:
    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table == RELEASE_ALIAS and node.name == column:
            return exp.paren(bound.copy(), copy=False)
        return node

    return arg.transform(swap)


def _middle(lo: str, hi: str) -> str:
    """An estimate of a value in [lo, hi]: the middle, or the finite end, or 0."""
    inf = "CAST('Infinity' AS DOUBLE)"
    return (
        f"CASE WHEN {lo} > -{inf} AND {hi} < {inf} THEN ({lo} + {hi}) / 2 "
        f"WHEN {lo} > -{inf} THEN {lo} WHEN {hi} < {inf} THEN {hi} ELSE 0 END"
    )


# --- ghosts -----------------------------------------------------------------------------


def _ghost_ctes(keys: list[str], atoms: tuple[Atom, ...]) -> list[tuple[str, exp.Query]]:
    """``cell``: per row its cell's size and row number, per atom the cell's sure and
    possible rows; ``real``: the cell bounds of lhd_ghosts.py (gh the most ghosts in the
    cell, khi the most real rows), COUNT's forced and reachable rows, and the flags and
    weights of every other atom with the rows of classes holding ghosts only possible."""
    cell = "OVER (PARTITION BY " + ", ".join([*(f"r.{k}" for k in keys), "r.cid"]) + ")"
    cell_cols = ["r.*", f"COUNT(*) {cell} AS n_cell", f"ROW_NUMBER() {cell} AS rn"]
    for i in range(len(atoms)):
        cell_cols += [
            f"SUM(CASE WHEN r.s{i} THEN 1 ELSE 0 END) {cell} AS sc{i}",
            f"SUM(CASE WHEN r.m{i} THEN 1 ELSE 0 END) {cell} AS mc{i}",
        ]
    gh = "CASE WHEN c.cg < c.n_cell THEN c.cg ELSE c.n_cell END"
    gl = "CASE WHEN c.cg > c.ncls - c.n_cell THEN c.cg - (c.ncls - c.n_cell) ELSE 0 END"
    khi = f"(c.n_cell - ({gl}))"
    real = [f"c.{k}" for k in keys] + ["c.rn", f"c.wmay AND {khi} >= 1 AS wmay"]
    for i, atom in enumerate(atoms):
        if atom.arg is not None and atom.func != "count":
            real += [f"c.lo{i}", f"c.hi{i}", f"c.e{i}"]
        real += [
            f"c.s{i} AND c.cg = 0 AS s{i}",
            f"c.m{i} AND {khi} >= 1 AS m{i}",
            f"c.f{i} * CAST(c.ncls - c.cg AS DOUBLE) / c.ncls AS f{i}",
            f"CASE WHEN c.sc{i} > {gh} THEN c.sc{i} - ({gh}) ELSE 0 END AS forced{i}",
            f"CASE WHEN c.mc{i} < {khi} THEN c.mc{i} ELSE {khi} END AS reach{i}",
        ]
    return [("cell", _select(cell_cols, "rows", "r")), ("real", _select(real, "cell", "c"))]
