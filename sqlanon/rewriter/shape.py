"""The general rewriter's middle: an analyst query cut into per-row parts and atoms.

Every aggregate query the rewriter answers is, per branch (a UNION ALL member, one
grouping set of a ROLLUP), a :class:`Shape`: the rows of one release (optionally joined
to public data, each release row at most once), a per-row WHERE, per-row group keys and
*atoms*, the base aggregates ``func(arg) FILTER (WHERE where)``. Everything above the
atoms (``SUM(x) / COUNT(*)``, ``ROUND(AVG(x), 1)``, HAVING, ORDER BY, LIMIT) is
interval arithmetic over the atoms' bounds, done by the post layer.

A model's atom builder turns a Shape into one query whose output has one row per output
group that may be non-empty, with columns::

    k0, k1, ...                      the group keys, in Shape.keys order
    a0_low, a0_high, a0_est, ...     per atom, in Shape.atoms order

``aN_low <= truth <= aN_high`` for every atom, the truth being the atom over the private
records (ghosts excluded) that the release stands for. NULL low and high: the atom is
NULL in every assignment consistent with the release (no record can be selected);
an atom whose answer may be NULL or a number (SUM, AVG, MIN, MAX, quantiles of a
selection that may be empty) bounds its numeric answers, and ``aN_may_null`` (true or
false, present for such atoms only when :attr:`Atom.nullable`) tells the post layer.

Expressions in a Shape are sqlglot trees whose columns are ``exp.Column`` nodes: a
release column by its canonical name with ``table`` ``"r"``; a column of a joined public
relation with ``table`` the join's alias. The builders copy them into their output under
those qualifiers (the rows CTE exposes ``r`` and every join alias).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlanon.rewriter.release_info import ReleaseInfo

#: Aggregates an atom may be, with the number of extra parameters they take.
ATOM_FUNCS: dict[str, int] = {
    "count": 0,  # arg None: COUNT(*); else COUNT(arg), rows with a non-NULL arg
    "count_distinct": 0,  # COUNT(DISTINCT arg)
    "sum": 0,
    "avg": 0,
    "min": 0,
    "max": 0,
    "quantile_cont": 1,  # fraction in [0, 1]; MEDIAN is quantile_cont 0.5
    "quantile_disc": 1,
    "var_pop": 0,
    "var_samp": 0,
    "stddev_pop": 0,
    "stddev_samp": 0,
}

#: The qualifier of release columns in Shape expressions.
RELEASE_ALIAS = "r"


@dataclass(frozen=True)
class Atom:
    """One base aggregate: ``func(arg) FILTER (WHERE where)`` over the selected rows."""

    func: str
    arg: exp.Expr | None = None
    where: exp.Expr | None = None
    fraction: float | None = None

    @property
    def nullable(self) -> bool:
        """Whether SQL answers NULL for an empty selection (every func but the counts)."""
        return self.func not in ("count", "count_distinct")


@dataclass(frozen=True)
class PublicJoin:
    """A public relation joined to the release: ``kind JOIN relation AS alias ON on``.

    ``relation`` is an ``exp.Values`` or an ``exp.Table`` the analyst may read (never a
    release's private state, never schema ``sqlanon``). The front end guarantees that a
    release row matches at most one of its rows (checked on VALUES; for a table the
    output SQL carries the check), so a release row is at most one row of the Shape.
    """

    relation: exp.Expr
    alias: str
    on: exp.Expr
    kind: str = "INNER"  # or "LEFT"


@dataclass(frozen=True)
class Shape:
    """One branch of an analyst query over one release, cut into per-row parts."""

    release: ReleaseInfo
    keys: tuple[exp.Expr, ...] = ()
    atoms: tuple[Atom, ...] = ()
    where: exp.Expr | None = None
    joins: tuple[PublicJoin, ...] = ()


def key_name(index: int) -> str:
    return f"k{index}"


def atom_column(index: int, part: str) -> str:
    """``a3_low``, ``a3_high``, ``a3_est``, ``a3_may_null``."""
    return f"a{index}_{part}"
