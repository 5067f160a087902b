"""The cells of a (k,e) interval query and the names their CTEs share.

A *cell* (:mod:`sqlanon.rewriter.ke_intervals`) holds the records of one release group
that satisfy the QI part of WHERE and carry one output key. Every interval query starts
with the CTE ``sel``: one row per cell with its record counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from sqlanon.rewriter.analyze import Query
from sqlanon.rewriter.sqlbuild import alias as _alias
from sqlanon.rewriter.sqlbuild import column as _col
from sqlanon.rewriter.sqlbuild import qualified as _qualified
from sqlanon.rewriter.sqlbuild import select as _select


@dataclass
class CellPlan:
    """Names shared by the CTEs of one rewrite."""

    query: Query
    groups: list[str] = field(default_factory=list)  # internal names g0, g1...
    counts: dict[str | None, str] = field(default_factory=dict)  # COUNT arg -> m column

    @property
    def sensitive(self) -> str:
        return self.query.release.sensitive[0]

    @property
    def needs_values(self) -> bool:
        """Whether an aggregate reads the sensitive values (anything but COUNT)."""
        return any(a.func != "count" for a in self.query.aggregates)

    @property
    def funcs(self) -> set[str]:
        return {a.func for a in self.query.aggregates}

    def release(self, alias: str) -> exp.Table:
        release = self.query.release
        return exp.table_(release.table, db=release.schema, quoted=True, alias=alias)

    def bounds(self, alias: str) -> exp.Table:
        table = self.query.release.bounds_table
        assert table is not None
        return exp.table_(table, db=self.query.release.bounds_schema, quoted=True, alias=alias)

    def g(self, table: str) -> list[exp.Column]:
        return [exp.column(g, table=table) for g in self.groups]


def plan_cells(query: Query) -> CellPlan:
    """The plan of ``query``: one internal name per group key, one count per
    COUNT(column) of a column other than the sensitive one (``m`` counts every record)."""
    plan = CellPlan(query)
    plan.groups = [f"g{i}" for i in range(len(query.group_by))]
    plan.counts = {None: "m"}
    for agg in query.aggregates:
        if agg.func == "count" and agg.column not in (None, plan.sensitive):
            plan.counts.setdefault(agg.column, f"m{len(plan.counts)}")
    return plan


def select_cells(plan: CellPlan, qi_pred: exp.Expr | None) -> exp.Select:
    """Per cell (output group, release group): m and one count per COUNT(column)."""
    query = plan.query
    key = query.release.key_column
    columns: list[exp.Expr] = [
        _alias(_qualified(query.key(i), "t"), g) for i, g in enumerate(plan.groups)
    ]
    columns.append(_alias(_col("t", key), "gid"))
    for arg, m in plan.counts.items():
        count = exp.Count(this=exp.Star() if arg is None else _col("t", arg))
        columns.append(_alias(count, m))
    sel = _select(*columns).from_(plan.release("t"), copy=False)
    if qi_pred is not None:
        sel = sel.where(_qualified(qi_pred, "t"), copy=False)
    if query.release.ghosts:
        # Ghost rows (NULL quasi columns) are slots of the group's shuffle but no
        # record: m counts real rows only, n (bounds table, grp) counts every slot.
        ghost = exp.func("COALESCE", _col("t", query.release.ghost_column), exp.false())
        sel = sel.where(exp.not_(ghost), copy=False)
    keys = [_qualified(query.key(i), "t") for i in range(len(plan.groups))]
    return sel.group_by(*keys, _col("t", key), copy=False)
