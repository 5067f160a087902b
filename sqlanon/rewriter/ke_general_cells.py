"""The CTEs of one general (k,e) atom: cells, the cross with the group's runs, ranks.

For an atom with type parameters ``P`` (:mod:`sqlanon.rewriter.ke_general_types`), over
the rows CTE ``rows`` (one row per selected record: keys ``k<j>``, ``gid`` the release
group, the parameters), ``fine`` (:func:`fine_cells`: the records counted per keys,
gid and every ranked atom's parameters, in one pass over the rows), ``keyed`` (``fine``
with ``gk``, the output group) and ``vals`` (every release group's values as runs:
``gid``, value ``v``, ``cnt`` slots, ``u2`` the last ascending rank; ghosts included)
and ``grp`` (``gid``, ``n`` slots):

- ``cell<i>``: per (gk, gid, P) the m records of the type, summed from ``keyed``;
- ``typ<i>``/``xw<i>``/``rk<i>``/``pc<i>``: per type, i.e. release group and
  parameters (not per output group: w depends on nothing else), the group's runs with
  ``w`` computed for each, u2 each present run's last ascending rank (a running sum of
  cnt, runs ordered by w then v) and c the present (non-NULL) w values;
- ``rl<i>``: each cell with its type's runs: ranks u1..u2 ascending and d1..d2
  descending, lo = max(0, m - (n - c)) and hi = min(m, c) selected records. When w is
  S itself (every value present, ordered by v) the ranks are the bounds table's own and
  ``rl`` reads ``vals`` directly;
- ``cv<i>``: per cell the sums and extremes its ranks allow, each a sum over runs of w
  times the run's overlap with a rank range, or the w of the run holding one rank;
  ``ag<i>``: per output group.

The pools of AVG (``avl``/``avh``), of quantiles (``qpl``/``qph`` and ``ql``/``qh``) and
the distinct counts (``cd``) are read from ``rl<i>``. An exact atom (``w`` reads no S) is
one CTE ``ag<i>``: COUNT, MIN and MAX from partial aggregates ``fine`` computes per row,
any other function the plain aggregate over the rows, grouped by the keys.
"""

from __future__ import annotations

from decimal import Decimal
from functools import cache

import sqlglot
from sqlglot import exp

from sqlanon.rewriter.ke_general_types import AtomPlan
from sqlanon.rewriter.sqlbuild import CTE_PREFIX
from sqlanon.rewriter.sqlbuild import alias as _alias
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import fragment as _f
from sqlanon.rewriter.sqlbuild import select as _select

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


def _overlap(a1: str, a2: str, b1: str, b2: str) -> str:
    return f"GREATEST(0, LEAST({a2}, {b2}) - GREATEST({a1}, {b1}) + 1)"


# How many of a run's present values (ascending ranks x.u1..x.u2, descending x.d1..x.d2)
# fall in the ranks a cell must hold (1..lo) or may hold (lo+1..hi), either direction.
_UP_FORCED = _overlap("x.u1", "x.u2", "1", "x.lo")
_UP_OPTIONAL = _overlap("x.u1", "x.u2", "x.lo + 1", "x.hi")
_DOWN_FORCED = _overlap("x.d1", "x.d2", "1", "x.lo")
_DOWN_OPTIONAL = _overlap("x.d1", "x.d2", "x.lo + 1", "x.hi")


def _holds(rank: str, first: str, last: str) -> str:
    return f"{first} <= {rank} AND {rank} <= {last}"


#: Per-cell measures (``x``: one run of ``rl``), by the functions that need them.
_CELL_MEASURES: dict[str, tuple[tuple[str, ...], str]] = {
    "tot": (_SUMS, "SUM(x.w * x.cnt)"),
    "tot2": (_SUMS, "SUM(CAST(x.w AS DOUBLE) * CAST(x.w AS DOUBLE) * x.cnt)"),
    # Lowest sum of j in [lo, hi] values of the cell: the lo smallest are forced, then
    # each further value (ascending) lowers the sum exactly while it is negative.
    "sum_lo": (
        ("sum",),
        f"SUM(CASE WHEN x.w IS NULL THEN 0 ELSE x.w * {_UP_FORCED} + "
        f"CASE WHEN x.w < 0 THEN x.w * {_UP_OPTIONAL} ELSE 0 END END)",
    ),
    "sum_hi": (
        ("sum",),
        f"SUM(CASE WHEN x.w IS NULL THEN 0 ELSE x.w * {_DOWN_FORCED} + "
        f"CASE WHEN x.w > 0 THEN x.w * {_DOWN_OPTIONAL} ELSE 0 END END)",
    ),
    "min_any": (_EXTREMES, "MIN(CASE WHEN x.u1 = 1 THEN x.w END)"),
    "max_any": (_EXTREMES, "MAX(CASE WHEN x.d1 = 1 THEN x.w END)"),
    # With lo >= 1 records forced, the highest minimum takes the lo largest values.
    "min_forced": (("min",), f"MIN(CASE WHEN {_holds('x.lo', 'x.d1', 'x.d2')} THEN x.w END)"),
    "max_forced": (("max",), f"MAX(CASE WHEN {_holds('x.lo', 'x.u1', 'x.u2')} THEN x.w END)"),
    # Expected rank of the minimum of E[j] = m*c/n draws out of c: (c+1)*n/(m*c+n).
    "min_est": (("min",), f"MIN(CASE WHEN {_holds('{er}', 'x.u1', 'x.u2')} THEN x.w END)"),
    "max_est": (("max",), f"MAX(CASE WHEN {_holds('{er}', 'x.d1', 'x.d2')} THEN x.w END)"),
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


def output_group(keys: int, table: str) -> str:
    """``gk`` over ``table``'s keys: their dense rank, the same over any set of rows with
    the same distinct keys (every CTE ranks the keys of the same selected records)."""
    order = ", ".join(f"{table}.k{j}" for j in range(keys))
    return f"DENSE_RANK() OVER (ORDER BY {order})"


#: Exact atoms computed from per-cell partial aggregates: (partial, combine) per column.
_PARTIAL: dict[str, dict[str, tuple[str, str]]] = {
    "count": {"val": ("COUNT({w})", "CAST(SUM({p}) AS BIGINT)")},
    "min": {"val": ("MIN({w})", "MIN({p})")},
    "max": {"val": ("MAX({w})", "MAX({p})")},
}
_COUNTED = ("COUNT({w})", "CAST(SUM({p}) AS BIGINT)")


def _partial_columns(plan: AtomPlan) -> dict[str, tuple[str, str]]:
    if not plan.exact or plan.func not in _PARTIAL:
        return {}
    return {**_PARTIAL[plan.func], "nlo": _COUNTED}


def _over_rows(plan: AtomPlan, text: str, table: str) -> exp.Expr:
    """``text`` with ``{w}`` the atom's w over ``table``'s parameter columns."""
    w = plan.w.transform(
        lambda n: exp.column(n.name, table=table) if isinstance(n, exp.Column) else n
    )
    return _f(text.format(w="x")).transform(lambda n: w.copy() if _is_x(n) else n)


def fine_cells(keys: int, plans: list[AtomPlan]) -> exp.Query:
    """The selected records counted (``m``) per keys, release group and the parameters
    of every ranked atom, with the partial aggregates of the exact atoms that have
    them: one aggregation over the rows, however many atoms read them."""
    rows = CTE_PREFIX + "rows"
    by = [f"x.k{j}" for j in range(keys)] + ["x.gid"]
    for plan in plans:
        by += [f"x.{p}" for p in plan.params if not plan.exact and f"x.{p}" not in by]
    select = _select(*[_f(c) for c in by], _f("COUNT(*) AS m"))
    for plan in plans:
        for column, (partial, _) in _partial_columns(plan).items():
            alias = f"e{plan.tag}_{column}"
            select = select.select(_alias(_over_rows(plan, partial, "x"), alias), copy=False)
    query = select.from_(_alias(exp.table_(rows), "x", table=True), copy=False)
    return query.group_by(*[_f(c) for c in by], copy=False)


def _rl(plan: AtomPlan) -> str:
    """The ranked runs the atom reads (``rl`` of itself or of ``ranked_by``)."""
    return CTE_PREFIX + "rl" + (plan.tag if plan.ranked_by is None else plan.ranked_by)


def atom_ctes(plan: AtomPlan, keys: int) -> Ctes:
    """Every CTE the atom's output columns read, in dependency order."""
    if plan.exact:
        return [(name("ag", plan), _exact(plan, keys))]
    ctes = _ranked_runs(plan) if plan.ranked_by is None else []
    ctes += [
        (name("cv", plan), _cell_values(plan)),
        (name("ag", plan), _group_values(plan)),
    ]
    if plan.func == "avg" and not fixed_count(plan):
        ctes += _avg_pools(plan)
    if plan.func in QUANTILES:
        ctes += _quantile_pools(plan)
    if plan.func == "count_distinct":
        rl = _rl(plan)
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


def reads_runs(plan: AtomPlan) -> bool:
    """Whether the atom reads its cells' ranked runs (``rl``), not only their counts."""
    return plan.func != "count" or _is_s(plan)


def _ranked_runs(plan: AtomPlan) -> Ctes:
    """The atom's cells, types and present counts, and when read, ``rl``: each cell
    with its type's runs, ranked."""
    if _is_s(plan):
        return [(name("cell", plan), _cells(plan)), (name("rl", plan), _ranges_of_s(plan))]
    ctes: Ctes = [
        (name("cell", plan), _cells(plan)),
        (name("typ", plan), _types(plan)),
        (name("xw", plan), _cross(plan)),
        (name("pc", plan), _present(plan)),
    ]
    if plan.runs_read:
        ctes += [(name("rk", plan), _ranks(plan)), (name("rl", plan), _ranges(plan))]
    return ctes


def _exact(plan: AtomPlan, keys: int) -> exp.Query:
    """Per output group: the atom's value over the rows (it reads no S) and the count of
    rows it aggregates (``nlo``, for NULL answers): combined from ``fine``'s partial
    aggregates, or one aggregate over the rows grouped by the keys."""
    partial = _partial_columns(plan)
    if partial:
        columns = [
            _alias(_f(combine.format(p=f"x.e{plan.tag}_{column}")), column)
            for column, (_, combine) in partial.items()
        ]
        keyed = _alias(_cte("keyed"), "x", table=True)
        return _select(_f("x.gk"), *columns).from_(keyed, copy=False).group_by(_f("x.gk"))
    value = _over_rows(plan, _EXACT_FUNCS[plan.func], "c")
    count = _over_rows(plan, "COUNT({w})", "c")
    gk = _f(output_group(keys, "c")) if keys else exp.Literal.number(1)
    query = _select(_alias(gk, "gk"), _alias(value, "val"), _alias(count, "nlo"))
    query = query.from_(_alias(_cte("rows"), "c", table=True), copy=False)
    if keys:
        query = query.group_by(*[_f(f"c.k{j}") for j in range(keys)], copy=False)
    return query


def _is_x(node: exp.Expr) -> bool:
    return isinstance(node, exp.Column) and not node.table and node.name == "x"


def fixed_count(plan: AtomPlan) -> bool:
    """Whether every cell selects exactly its m records (w is S itself, so lo = hi = m):
    then AVG's bounds are the sums' bounds over that fixed count (the pools of
    :func:`_avg_pools` hold only forced values, and their ratio is the same)."""
    return _is_s(plan)


def _is_s(plan: AtomPlan) -> bool:
    """Whether w is S itself: every slot's value present, in the bounds table's order."""
    w = plan.w
    return isinstance(w, exp.Column) and w.table == "v" and w.name == "v" and not plan.params


def _type_key(plan: AtomPlan, table: str) -> str:
    return ", ".join([f"{table}.gid", *[f"{table}.{p}" for p in plan.params]])


def _cell_key(plan: AtomPlan, table: str) -> str:
    return f"{table}.gk, {_type_key(plan, table)}"


def _cells(plan: AtomPlan) -> exp.Query:
    key = _cell_key(plan, "x")
    return internal_query(
        f"SELECT {key}, CAST(SUM(x.m) AS BIGINT) AS m FROM {_t('keyed')} AS x GROUP BY {key}"  # noqa: S608 - internal names only
    )


def _types(plan: AtomPlan) -> exp.Query:
    """Each type (release group, parameters) once, numbered ``tn``, with its group's
    ``n`` and ``base``: the slots of the types numbered before it (each type has its
    group's n runs' slots in ``xw``), so a running sum over all types in ``tn`` order
    less ``base`` is the running sum within the type."""
    key = _type_key(plan, "x")
    numbered = (
        f"SELECT ROW_NUMBER() OVER (ORDER BY {key}) AS tn, {key}, g.n "  # noqa: S608 - internal names only
        f"FROM (SELECT DISTINCT {key} FROM {_t('cell', plan)} AS x) AS x "
        f"JOIN {_t('grp')} AS g ON g.gid = x.gid"
    )
    return internal_query(
        "SELECT t.*, CAST(SUM(t.n) OVER (ORDER BY t.tn ROWS BETWEEN UNBOUNDED PRECEDING "  # noqa: S608 - internal names only
        f"AND CURRENT ROW) - t.n AS BIGINT) AS base FROM ({numbered}) AS t"
    )


def _cross(plan: AtomPlan) -> exp.Query:
    """Each type with each run of its release group (value ``v``, ``cnt`` slots) and the
    atom's ``w`` for it: the type and v fix w, so a run is cnt equal w."""
    base = internal_query(
        f"SELECT c.tn, c.base, {_type_key(plan, 'c')}, c.n, v.v, v.cnt FROM {_t('typ', plan)} AS c "  # noqa: S608, E501 - internal names only
        f"JOIN {_t('vals')} AS v ON v.gid = c.gid"
    )
    assert isinstance(base, exp.Select)
    return base.select(_alias(plan.w.copy(), "w"), copy=False)


def _ranges(plan: AtomPlan) -> exp.Query:
    """lo and hi: the cell's m records hold an m-subset of the group's n values, so the
    number j of them with a present w lies in [max(0, m - (n - c)), min(m, c)], and every
    j-subset of the c present values is possible. Also each present run's ascending
    ranks u1..u2 and descending ranks d1..d2 (the ascending order reversed)."""
    on = " AND ".join(
        ["x.gid = c.gid", *[f"x.{p} IS NOT DISTINCT FROM c.{p}" for p in plan.params]]
    )
    return internal_query(
        "SELECT c.gk, c.m, x.*, k.c, x.u2 - x.cnt + 1 AS u1, k.c - x.u2 + 1 AS d1, "  # noqa: S608 - internal names only
        "k.c - x.u2 + x.cnt AS d2, GREATEST(0, c.m - x.n + k.c) AS lo, LEAST(c.m, k.c) AS hi "
        f"FROM {_t('cell', plan)} AS c JOIN {_t('rk', plan)} AS x ON {on} "
        f"JOIN {_t('pc', plan)} AS k ON k.tn = x.tn"
    )


def _ranges_of_s(plan: AtomPlan) -> exp.Query:
    """:func:`_ranges` when w is S: c = n (the bounds table holds no NULL value: its sums
    are numbers) and the runs' ranks by (w, v) are their ranks by v, the bounds table's."""
    return internal_query(
        "SELECT c.gk, c.gid, c.m, v.n, v.v, v.cnt, v.v AS w, v.n AS c, v.u2, "  # noqa: S608 - internal names only
        "v.u2 - v.cnt + 1 AS u1, v.n - v.u2 + 1 AS d1, v.n - v.u2 + v.cnt AS d2, "
        "GREATEST(0, c.m) AS lo, LEAST(c.m, v.n) AS hi "
        f"FROM {_t('cell', plan)} AS c JOIN {_t('vals')} AS v ON v.gid = c.gid"
    )


def _ranks(plan: AtomPlan) -> exp.Query:
    """u2, the last ascending rank of each run of present values within its type: a
    running sum of cnt over the runs ordered by w (then v, so runs of equal w take their
    ranks in a fixed order); NULL for an absent run. One running sum over every type
    (``tn`` first) less the type's ``base``: a window partitioned by type sorts each of
    thousands of small partitions and cost several times more."""
    present = "x.w IS NOT NULL"
    absent = "CASE WHEN x.w IS NULL THEN 1 ELSE 0 END"
    running = (
        f"SUM(x.cnt) OVER (ORDER BY x.tn, {absent}, x.w, x.v "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    )
    return internal_query(
        f"SELECT x.*, CASE WHEN {present} THEN CAST({running} - x.base AS BIGINT) END AS u2 "  # noqa: S608 - internal names only
        f"FROM {_t('xw', plan)} AS x"
    )


def _present(plan: AtomPlan) -> exp.Query:
    """c: the present (non-NULL w) values of each type."""
    return internal_query(
        "SELECT x.tn, CAST(SUM(CASE WHEN x.w IS NOT NULL THEN x.cnt ELSE 0 END) AS BIGINT) AS c "  # noqa: S608 - internal names only
        f"FROM {_t('xw', plan)} AS x GROUP BY x.tn"
    )


def _measures(plan: AtomPlan) -> list[str]:
    fixed = ("sum_lo", "sum_hi") if plan.func == "avg" and fixed_count(plan) else ()
    return [m for m, (funcs, _) in _CELL_MEASURES.items() if plan.func in funcs or m in fixed]


def _cell_values(plan: AtomPlan) -> exp.Query:
    if not reads_runs(plan):
        return _cell_counts(plan)
    key = f"{_cell_key(plan, 'x')}, x.m, x.n, x.c, x.lo, x.hi"
    measures = [f"{_CELL_MEASURES[m][1].format(er=_ER)} AS {m}" for m in _measures(plan)]
    select = ", ".join([key, *measures])
    return internal_query(f"SELECT {select} FROM {_rl(plan)} AS x GROUP BY {key}")  # noqa: S608 - internal names only


def _cell_counts(plan: AtomPlan) -> exp.Query:
    """:func:`_cell_values` of a COUNT: per cell m, n, c, lo and hi from its type's
    present count, without crossing the cell with the runs."""
    owner = plan.tag if plan.ranked_by is None else plan.ranked_by
    on = " AND ".join(
        ["t.gid = x.gid", *[f"t.{p} IS NOT DISTINCT FROM x.{p}" for p in plan.params]]
    )
    return internal_query(
        f"SELECT {_cell_key(plan, 'x')}, x.m, t.n, k.c, GREATEST(0, x.m - t.n + k.c) AS lo, "  # noqa: S608 - internal names only
        f"LEAST(x.m, k.c) AS hi FROM {CTE_PREFIX}cell{owner} AS x "
        f"JOIN {CTE_PREFIX}typ{owner} AS t ON {on} JOIN {CTE_PREFIX}pc{owner} AS k ON k.tn = t.tn"
    )


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
    the lowest sum is forced + the smallest optional values). Highest: symmetric.

    The pool holds, per cell and run, the ``cnt`` equal values the cell must (``k`` 0)
    or may (``k`` 1) hold; within one pool row the running ratio moves monotonically
    (one value repeated), so only the row ends are candidates."""
    ctes: Ctes = []
    rl = _rl(plan)
    for side, counts, desc, agg in (
        ("l", (_UP_FORCED, _UP_OPTIONAL), "", "MIN"),
        ("h", (_DOWN_FORCED, _DOWN_OPTIONAL), " DESC", "MAX"),
    ):
        pool = internal_query(
            " UNION ALL ".join(
                f"SELECT x.gk, {k} AS k, x.w, {count} AS cnt FROM {rl} AS x "  # noqa: S608 - internal names only
                f"WHERE x.w IS NOT NULL AND {count} > 0"
                for k, count in enumerate(counts)
            )
        )
        order = f"PARTITION BY p.gk ORDER BY p.k, p.w{desc}"
        rows = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
        running = internal_query(
            f"SELECT p.gk, SUM(p.cnt) OVER ({order} {rows}) AS pos, "  # noqa: S608 - internal names only
            f"SUM(p.w * p.cnt) OVER ({order} {rows}) AS run, "
            "SUM((1 - p.k) * p.cnt) OVER (PARTITION BY p.gk) AS forced "
            f"FROM {_t(f'avq{side}', plan)} AS p"
        )
        ratio = internal_query(
            f"SELECT p.gk, {agg}(CASE WHEN p.pos >= p.forced THEN CAST(p.run AS DOUBLE) / p.pos "  # noqa: S608 - internal names only
            f"END) AS avg FROM {_t(f'avp{side}', plan)} AS p GROUP BY p.gk"
        )
        ctes += [
            (name(f"avq{side}", plan), pool),
            (name(f"avp{side}", plan), running),
            (name(f"av{side}", plan), ratio),
        ]
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
    rl, ag = _rl(plan), _t("ag", plan)
    ctes: Ctes = []
    for side, first, desc, r1, r2 in (("l", "u1", "", a1, a2), ("h", "d1", " DESC", d1, d2)):
        count = _overlap(f"x.{first}", f"x.{first} + x.cnt - 1", "1", "x.hi")
        order = f"PARTITION BY x.gk ORDER BY x.w{desc}"
        pool = internal_query(
            f"SELECT x.gk, x.w, {count} AS cnt, SUM({count}) OVER ({order} "  # noqa: S608 - internal names only
            f"ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS p2 "
            f"FROM {rl} AS x WHERE x.{first} <= x.hi"
        )
        picked = internal_query(
            f"SELECT p.gk, MIN(CASE WHEN {_holds(r1, 'p.p2 - p.cnt + 1', 'p.p2')} THEN p.w END) AS q1, "  # noqa: S608, E501 - internal names only
            f"MIN(CASE WHEN {_holds(r2, 'p.p2 - p.cnt + 1', 'p.p2')} THEN p.w END) AS q2 "
            f"FROM {_t(f'qp{side}', plan)} AS p JOIN {ag} AS a ON a.gk = p.gk GROUP BY p.gk"
        )
        ctes += [(name(f"qp{side}", plan), pool), (name(f"q{side}", plan), picked)]
    return ctes
