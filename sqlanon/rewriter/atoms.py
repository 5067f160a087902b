"""One branch's atoms query: the narrow builders where they answer, else the general ones.

A branch whose Shape the narrow builders (:mod:`~sqlanon.rewriter.ke_intervals`,
:mod:`~sqlanon.rewriter.lhd_intervals`) answer (plain column keys, COUNT/SUM/AVG/MIN/
MAX of a column or ``*`` without FILTER, no join, a WHERE :func:`analyze` accepts) is
fed to them as the canonical query ``SELECT r."c" AS k0, ..., SUM(r."x") AS a0, ...
FROM <release> AS r WHERE ... GROUP BY ...``: they read the bounds tables and are
tested; their columns are those of the atoms contract (``k0``, ``a0_low``, ``a0_high``,
``a0_est``, plus ``a0`` for an exact count, without ``aN_may_null``). Every other
branch goes to the model's general atom builder.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlanon.errors import QueryLimitError, UnsupportedQueryError
from sqlanon.rewriter import ke_general, ke_intervals, lhd_general, lhd_intervals
from sqlanon.rewriter.analyze import AggregateItem, GroupItem, Query, analyze
from sqlanon.rewriter.ke_quantiles import QUANTILES
from sqlanon.rewriter.shape import RELEASE_ALIAS, Shape, atom_column, key_name
from sqlanon.rewriter.sqlbuild import alias as _alias
from sqlanon.rewriter.sqlbuild import select as _select

_NARROW = {"count": exp.Count, "sum": exp.Sum, "avg": exp.Avg, "min": exp.Min, "max": exp.Max}


@dataclass(frozen=True)
class AtomsQuery:
    """A branch's atoms query and which optional columns it has."""

    tree: exp.Query
    #: ``aN_may_null`` present for every nullable atom (else: assume it may be NULL)
    may_null: bool
    #: atoms with a bare exact ``aN`` column (the narrow (k,e) builder's exact counts)
    exact: frozenset[int] = frozenset()


def atoms_query(shape: Shape) -> AtomsQuery:
    """The atoms query of ``shape`` (see :mod:`sqlanon.rewriter.shape`)."""
    narrow = _narrow(shape)
    if narrow is None and shape.release.model == "ke":
        narrow = _ke_cells(shape)
    if narrow is not None:
        return narrow
    return AtomsQuery(_general(shape), may_null=True)


def _ke_cells(shape: Shape) -> AtomsQuery | None:
    """A (k,e) branch whose atoms are COUNT/SUM/AVG/MIN/MAX/quantiles of S (or COUNT of
    anything) without FILTER and whose keys and WHERE are any expressions, S read only by WHERE
    terms of S alone: the narrow builder's cells, grouped by the key expressions, and
    its bounds-table lookups (a sort of nothing at query time, where the general
    builder ranks every group's values per cell)."""
    sensitive = shape.release.sensitive[0]
    parts = [*shape.keys, *([shape.where] if shape.where is not None else [])]
    if shape.joins or not shape.atoms or any(p.find(exp.Query, exp.Subquery) for p in parts):
        return None
    if any(c.name == sensitive for k in shape.keys for c in k.find_all(exp.Column)):
        return None
    items: list[GroupItem | AggregateItem] = [
        GroupItem(key_name(i), key_name(i)) for i in range(len(shape.keys))
    ]
    for i, atom in enumerate(shape.atoms):
        if atom.func not in (*_NARROW, *QUANTILES) or atom.where is not None:
            return None
        if atom.arg is not None and not _plain(atom.arg):
            return None
        column = atom.arg.name if isinstance(atom.arg, exp.Column) else None
        if atom.func != "count" and column != sensitive:
            return None
        items.append(AggregateItem(atom.func, column, f"a{i}", atom.fraction))
    group_by = tuple(key_name(i) for i in range(len(shape.keys)))
    query = Query(shape.release, tuple(items), group_by, shape.where, (), None, shape.keys)
    try:
        tree = ke_intervals.build(query)
    except UnsupportedQueryError:  # a condition mixing S with other columns
        return None
    return AtomsQuery(tree, may_null=False, exact=_exact_atoms(tree, len(shape.atoms)))


def _exact_atoms(tree: exp.Select, count: int) -> frozenset[int]:
    names = {e.alias_or_name for e in tree.expressions}
    return frozenset(i for i in range(count) if f"a{i}" in names)


def _general(shape: Shape) -> exp.Select:
    if shape.release.model == "lhd":
        return lhd_general.atoms_query(shape)
    return ke_general.atoms_query(shape)


def _plain(node: exp.Expr | None) -> bool:
    return isinstance(node, exp.Column) and node.table == RELEASE_ALIAS


def narrow_sql(shape: Shape) -> str | None:
    """The canonical query of ``shape`` for the narrow builders, or None when its parts
    are beyond them."""
    if shape.joins or not shape.atoms or not all(_plain(k) for k in shape.keys):
        return None
    items: list[exp.Expr] = [_alias(k.copy(), key_name(i)) for i, k in enumerate(shape.keys)]
    for i, atom in enumerate(shape.atoms):
        if atom.func not in _NARROW or atom.where is not None or atom.fraction is not None:
            return None
        if atom.arg is not None and not _plain(atom.arg):
            return None
        arg = atom.arg.copy() if atom.arg is not None else exp.Star()
        items.append(_alias(_NARROW[atom.func](this=arg), atom_column(i, "")[:-1]))
    table = exp.table_(exp.to_identifier(shape.release.table, quoted=True), alias=RELEASE_ALIAS)
    query = _select(*items).from_(table)
    if shape.where is not None:
        query = query.where(shape.where.copy())
    if shape.keys:
        query = query.group_by(*[k.copy() for k in dict.fromkeys(shape.keys)])
    return query.sql("duckdb")


def _narrow(shape: Shape) -> AtomsQuery | None:
    sql = narrow_sql(shape)
    if sql is None:
        return None
    info = shape.release
    try:
        query = analyze(sql, {info.table: info}, "duckdb")
        tree = lhd_intervals.build(query) if info.model == "lhd" else ke_intervals.build(query)
    except QueryLimitError:
        raise
    except UnsupportedQueryError:  # e.g. a (k,e) condition mixing S and QI under OR
        return None
    return AtomsQuery(tree, may_null=False, exact=_exact_atoms(tree, len(shape.atoms)))
