"""The CTEs of one general (k,e) atom: cells, the cross with the group's values, ranks.

For an atom with type parameters ``P`` (:mod:`sqlanon.rewriter.ke_general_types`), over
the rows CTE ``rows`` (one row per selected record: ``gk`` the output group, ``gid`` the
release group, the parameters) and ``vals`` (every slot of every release group: ``gid``,
``v``; ghosts included) and ``grp`` (``gid``, ``n`` slots):

- ``cell<i>``: per (gk, gid, P) the m records of the type;
- ``xw<i>``: each cell crossed with its group's n values, ``w`` computed for each
  (the cross product: sum over cells of n rows);
- ``rl<i>``: c = the present (non-NULL) w values of the cell, their ranks both ways
  (absent last), lo = max(0, m - (n - c)) and hi = min(m, c) selected records;
- ``cv<i>``: per cell the sums and extremes its ranks allow; ``ag<i>``: per output group.

The pools of AVG (``avl``/``avh``), of quantiles (``qpl``/``qph`` and ``ql``/``qh``) and
the distinct counts (``cd``) are read from ``rl<i>``. An exact atom (``w`` reads no S) is
one CTE ``ag<i>``: the plain aggregate over the rows.
"""

from __future__ import annotations

from decimal import Decimal
from functools import cache

import sqlglot
from sqlglot import exp

from sqlanon.rewriter.ke_general_types import AtomPlan
from sqlanon.rewriter.sqlbuild import CTE_PREFIX
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import fragment as _f

Ctes = list[tuple[str, exp.Query]]

_EXACT_FUNCS: dict[str, str] = {
    "count": "COUNT({w})",
    "count_distinct": "COUNT(DISTINCT {w})",
    "sum": "SUM({w})",
    "avg": "AVG({w})",
    "min": "MIN({w})",
    "max": "MAX({w})",
    "var_pop": "VAR_POP({w})",
    "var_samp": "VAR_SAMP({w})",
    "stddev_pop": "STDDEV_POP({w})",
    "stddev_samp": "STDDEV_SAMP({w})",
}

_SUMS = ("sum", "avg", "var_pop", "var_samp", "stddev_pop", "stddev_samp")
_EXTREMES = ("min", "max", "var_pop", "var_samp", "stddev_pop", "stddev_samp")
QUANTILES = ("quantile_cont", "quantile_disc")

#: Per-cell measures (``x``: one row of ``rl``), by the functions that need them.
_CELL_MEASURES: dict[str, tuple[tuple[str, ...], str]] = {
    "tot": (_SUMS, "SUM(x.w)"),
    "tot2": (_SUMS, "SUM(CAST(x.w AS DOUBLE) * CAST(x.w AS DOUBLE))"),
    # Lowest sum of j in [lo, hi] values of the cell: the lo smallest are forced, then
    # each further value (ascending) lowers the sum exactly while it is negative.
    "sum_lo": (
        ("sum",),
        "SUM(CASE WHEN x.r_up <= x.lo THEN x.w WHEN x.r_up <= x.hi AND x.w < 0 THEN x.w "
        "ELSE 0 END)",
    ),
    "sum_hi": (
        ("sum",),
        "SUM(CASE WHEN x.r_down <= x.lo THEN x.w WHEN x.r_down <= x.hi AND x.w > 0 THEN x.w "
        "ELSE 0 END)",
    ),
    "min_any": (_EXTREMES, "MIN(CASE WHEN x.r_up = 1 THEN x.w END)"),
    "max_any": (_EXTREMES, "MAX(CASE WHEN x.r_down = 1 THEN x.w END)"),
    # With lo >= 1 records forced, the highest minimum takes the lo largest values.
    "min_forced": (("min",), "MIN(CASE WHEN x.r_down = x.lo THEN x.w END)"),
    "max_forced": (("max",), "MAX(CASE WHEN x.r_up = x.lo THEN x.w END)"),
    # Expected rank of the minimum of E[j] = m*c/n draws out of c: (c+1)*n/(m*c+n).
    "min_est": (("min",), "MIN(CASE WHEN x.r_up = {er} THEN x.w END)"),
    "max_est": (("max",), "MAX(CASE WHEN x.r_down = {er} THEN x.w END)"),
}
_ER = "CAST(FLOOR(CAST((x.c + 1) * x.n AS DOUBLE) / (x.m * x.c + x.n)) AS BIGINT)"

#: Per-output-group measures over ``cv`` (``x``).
_GROUP_MEASURES: dict[str, str] = {
    "tot": "SUM(CAST(x.m AS DOUBLE) * x.tot / x.n)",
    "tot2": "SUM(CAST(x.m AS DOUBLE) * x.tot2 / x.n)",
    "sum_lo": "SUM(x.sum_lo)",
    "sum_hi": "SUM(x.sum_hi)",
    "min_any": "MIN(x.min_any)",
    "max_any": "MAX(x.max_any)",
    "min_forced": "MIN(x.min_forced)",
    "max_forced": "MAX(x.max_forced)",
    "min_est": "MIN(x.min_est)",
    "max_est": "MAX(x.max_est)",
}


def name(kind: str, plan: AtomPlan) -> str:
    """The CTE name (without prefix) of ``kind`` for ``plan``: ``ag3``, ``avl3``..."""
    return f"{kind}{plan.tag}"


@cache
def _parsed(text: str) -> exp.Query:
    parsed = sqlglot.parse_one(text)
    assert isinstance(parsed, exp.Query)
    return parsed


def internal_query(text: str) -> exp.Query:
    """A query over the rewriter's own internal names only (never analyst text); parsed
    once per distinct text and copied on every use."""
    return _parsed(text).copy()


def _t(kind: str, plan: AtomPlan | None = None) -> str:
    return CTE_PREFIX + (kind if plan is None else name(kind, plan))


def atom_ctes(plan: AtomPlan) -> Ctes:
    """Every CTE the atom's output columns read, in dependency order."""
    if plan.exact:
        return [(name("ag", plan), _exact(plan))]
    ctes: Ctes = [
        (name("cell", plan), _cells(plan)),
        (name("xw", plan), _cross(plan)),
        (name("rk", plan), _ranks(plan)),
        (name("rl", plan), _ranges(plan)),
        (name("cv", plan), _cell_values(plan)),
        (name("ag", plan), _group_values(plan)),
    ]
    if plan.func == "avg":
        ctes += _avg_pools(plan)
    if plan.func in QUANTILES:
        ctes += _quantile_pools(plan)
    if plan.func == "count_distinct":
        rl = _t("rl", plan)
        ctes.append(
            (
                name("cd", plan),
                internal_query(
                    "SELECT x.gk, COUNT(DISTINCT CASE WHEN x.lo >= 1 THEN x.w END) AS dlo, "  # noqa: S608 - internal names only
                    f"COUNT(DISTINCT x.w) AS dhi FROM {rl} AS x GROUP BY x.gk"
                ),
            )
        )
    return ctes


def _exact(plan: AtomPlan) -> exp.Query:
    """Per output group: the atom's value over the rows (it reads no S) and the count of
    rows it aggregates (``nlo``, for NULL answers)."""
    value = _f(_EXACT_FUNCS[plan.func].format(w="x"))
    count = _f("COUNT(x)")
    value = value.transform(lambda n: plan.w.copy() if _is_x(n) else n)
    count = count.transform(lambda n: plan.w.copy() if _is_x(n) else n)
    return (
        exp.select(_f("c.gk"), exp.alias_(value, "val"), exp.alias_(count, "nlo"))
        .from_(exp.alias_(_cte("rows"), "c", table=True), copy=False)
        .group_by(_f("c.gk"), copy=False)
    )


def _is_x(node: exp.Expr) -> bool:
    return isinstance(node, exp.Column) and not node.table and node.name == "x"


def _cell_key(plan: AtomPlan, table: str) -> str:
    return ", ".join([f"{table}.gk", f"{table}.gid", *[f"{table}.{p}" for p in plan.params]])


def _cells(plan: AtomPlan) -> exp.Query:
    key = _cell_key(plan, "r")
    return internal_query(f"SELECT {key}, COUNT(*) AS m FROM {_t('rows')} AS r GROUP BY {key}")  # noqa: S608 - internal names only


def _cross(plan: AtomPlan) -> exp.Query:
    """Each cell with each value of its release group and the atom's ``w`` for it."""
    base = internal_query(
        f"SELECT {_cell_key(plan, 'c')}, c.m, g.n FROM {_t('cell', plan)} AS c "  # noqa: S608 - internal names only
        f"JOIN {_t('grp')} AS g ON g.gid = c.gid JOIN {_t('vals')} AS v ON v.gid = c.gid"
    )
    assert isinstance(base, exp.Select)
    return base.select(exp.alias_(plan.w.copy(), "w"), copy=False)


def _ranges(plan: AtomPlan) -> exp.Query:
    """lo and hi: the cell's m records hold an m-subset of the group's n values, so the
    number j of them with a present w lies in [max(0, m - (n - c)), min(m, c)], and every
    j-subset of the c present values is possible."""
    return internal_query(
        "SELECT x.*, GREATEST(0, x.m - x.n + x.c) AS lo, LEAST(x.m, x.c) AS hi "  # noqa: S608 - internal names only
        f"FROM {_t('rk', plan)} AS x"
    )


def _ranks(plan: AtomPlan) -> exp.Query:
    """c and the ranks of the present values of each cell, absent (NULL) values last."""
    part = f"PARTITION BY {_cell_key(plan, 'x')}"
    absent = "CASE WHEN x.w IS NULL THEN 1 ELSE 0 END"
    return internal_query(
        f"SELECT x.*, COUNT(x.w) OVER ({part}) AS c, "  # noqa: S608 - internal names only
        f"ROW_NUMBER() OVER ({part} ORDER BY {absent}, x.w) AS r_up, "
        f"ROW_NUMBER() OVER ({part} ORDER BY {absent}, x.w DESC) AS r_down "
        f"FROM {_t('xw', plan)} AS x"
    )


def _measures(plan: AtomPlan) -> list[str]:
    return [m for m, (funcs, _) in _CELL_MEASURES.items() if plan.func in funcs]


def _cell_values(plan: AtomPlan) -> exp.Query:
    key = f"{_cell_key(plan, 'x')}, x.m, x.n, x.c, x.lo, x.hi"
    measures = [f"{_CELL_MEASURES[m][1].format(er=_ER)} AS {m}" for m in _measures(plan)]
    select = ", ".join([key, *measures])
    return internal_query(f"SELECT {select} FROM {_t('rl', plan)} AS x GROUP BY {key}")  # noqa: S608 - internal names only


def _group_values(plan: AtomPlan) -> exp.Query:
    """Per output group: nlo/nhi (the least and greatest number of selected records),
    cnt (their expectation) and the per-cell measures combined over cells."""
    columns = [
        "x.gk",
        "SUM(x.lo) AS nlo",
        "SUM(x.hi) AS nhi",
        "SUM(CAST(x.m AS DOUBLE) * x.c / x.n) AS cnt",
        *[f"{_GROUP_MEASURES[m]} AS {m}" for m in _measures(plan)],
    ]
    return internal_query(f"SELECT {', '.join(columns)} FROM {_t('cv', plan)} AS x GROUP BY x.gk")  # noqa: S608 - internal names only


def _avg_pools(plan: AtomPlan) -> Ctes:
    """AVG: per output group, every cell's forced values (its lo lowest) then the optional
    ones (ranks lo+1..hi) in ascending order; the lowest average over every count is the
    least running ratio from the forced count on (exchange argument: for a fixed count
    the lowest sum is forced + the smallest optional values). Highest: symmetric."""
    ctes: Ctes = []
    rl = _t("rl", plan)
    for side, rank, desc, agg in (("l", "r_up", "", "MIN"), ("h", "r_down", " DESC", "MAX")):
        optional = f"CASE WHEN x.{rank} <= x.lo THEN 0 ELSE 1 END"
        order = f"PARTITION BY x.gk ORDER BY {optional}, x.w{desc}"
        pool = internal_query(
            f"SELECT x.gk, ROW_NUMBER() OVER ({order}) AS pos, "  # noqa: S608 - internal names only
            f"SUM(x.w) OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS run, "
            f"SUM(1 - {optional}) OVER (PARTITION BY x.gk) AS forced "
            f"FROM {rl} AS x WHERE x.{rank} <= x.hi"
        )
        ratio = internal_query(
            f"SELECT p.gk, {agg}(CASE WHEN p.pos >= p.forced THEN CAST(p.run AS DOUBLE) / p.pos "  # noqa: S608 - internal names only
            f"END) AS avg FROM {_t(f'avp{side}', plan)} AS p GROUP BY p.gk"
        )
        ctes += [(name(f"avp{side}", plan), pool), (name(f"av{side}", plan), ratio)]
    return ctes


def quantile_ranks(plan: AtomPlan) -> tuple[str, str, str, str]:
    """SQL of (a1, a2, d1, d2) over ``a`` (the atom's ``ag`` row), N = max(1, nlo):
    the ascending ranks in the low pool and the descending ranks in the high pool of the
    two order statistics the engine reads for the N-th count (quantile_cont: positions
    FRN+1 and CRN+1 of RN = q*(N-1), as DuckDB and PostgreSQL compute it;
    quantile_disc: max(1, ceil(q*N)) twice)."""
    n = "GREATEST(a.nlo, 1)"
    q = f"CAST({float(plan.atom.fraction or 0.0)!r} AS DOUBLE)"
    if plan.func == "quantile_disc":
        # ceil(q*N) in DOUBLE (PostgreSQL) or DECIMAL (DuckDB) differ when q*N is a whole
        # number (0.7 * 10): the low side reads the lesser rank, the high side the greater
        exact = format(Decimal(repr(float(plan.atom.fraction or 0.0))), "f")
        dec = f"CAST({exact} AS DECIMAL(38, 18))"
        at = [f"CEIL({x} * {n})" for x in (dec, q)]
        low, high = (f"GREATEST(1, {f}({at[0]}, {at[1]}))" for f in ("LEAST", "GREATEST"))
        return low, low, f"{n} - {high} + 1", f"{n} - {high} + 1"
    rn = f"{q} * ({n} - 1)"
    return f"FLOOR({rn}) + 1", f"CEIL({rn}) + 1", f"{n} - FLOOR({rn})", f"{n} - CEIL({rn})"


def _quantile_pools(plan: AtomPlan) -> Ctes:
    """The low pool (each cell's hi smallest present values) ranked ascending per output
    group, the high pool (hi largest) descending, and per output group the values at the
    ranks of :func:`quantile_ranks` (q1 at a1/d1, q2 at a2/d2)."""
    a1, a2, d1, d2 = quantile_ranks(plan)
    rl, ag = _t("rl", plan), _t("ag", plan)
    ctes: Ctes = []
    for side, rank, desc, r1, r2 in (("l", "r_up", "", a1, a2), ("h", "r_down", " DESC", d1, d2)):
        pool = internal_query(
            f"SELECT x.gk, x.w, ROW_NUMBER() OVER (PARTITION BY x.gk ORDER BY x.w{desc}) AS pr "  # noqa: S608 - internal names only
            f"FROM {rl} AS x WHERE x.{rank} <= x.hi"
        )
        picked = internal_query(
            f"SELECT p.gk, MIN(CASE WHEN p.pr = {r1} THEN p.w END) AS q1, "  # noqa: S608 - internal names only
            f"MIN(CASE WHEN p.pr = {r2} THEN p.w END) AS q2 "
            f"FROM {_t(f'qp{side}', plan)} AS p JOIN {ag} AS a ON a.gk = p.gk GROUP BY p.gk"
        )
        ctes += [(name(f"qp{side}", plan), pool), (name(f"q{side}", plan), picked)]
    return ctes
