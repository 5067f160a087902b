"""Atom bounds over a (k,e) release for any per-row expressions: :func:`atoms_query`.

A (k,e) release permutes S uniformly within each release group g, so g's multiset V_g
of n values (ghost slots included) is public and only which slot holds which value is
hidden. Everything not reading S is exact per row. For one atom, the rows of one output
group G and one release group g are cut further by *type* (:mod:`ke_general_types`): the
values of the atom's S-free subexpressions. A type of m records holds an m-subset of V_g
(every one is possible); with ``w(v)`` the atom's per-row value (NULL: the row is not
selected, or its arg is NULL) and P the c present w-values of V_g, the number j of
selected records lies in [lo, hi] = [max(0, m-(n-c)), min(m, c)] and any j-subset of P
is possible. Per type (a *cell*), exactly:

- COUNT: [lo, hi]; estimate m*c/n (the expectation under the permutation);
- SUM (of any f(S), f applied before sorting): low = the lo smallest + the negative ones
  among ranks lo+1..hi; high symmetric; estimate m * (sum of P) / n. A SUM that may be
  empty (sum of lo is 0) is bounded as COALESCE(SUM, 0): low/high may be 0 although
  every non-NULL answer is farther;
- MIN: low = the smallest of P over cells that can hold one; high = the smallest of the
  lo largest of each forced cell (lo >= 1), else the largest of P;  MAX symmetric;
- AVG: the running extreme over each output group's forced + optional values;
- quantiles: order statistics of the *low pool* (each cell's hi smallest present values)
  and the *high pool* (hi largest), see :func:`_quantile_columns` for the proofs;
- VAR/STDDEV: sound only: low 0; high from the range [a, b] the selected values lie in,
  (b-a)^2 * floor(N/2)ceil(N/2) / (N*N) (pop) or / (N*(N-1)) (samp) at the least
  possible N (the extreme points split in halves maximise the spread). Loose when the
  values cannot spread that far (e.g. a fixed selection), never unsound;
- COUNT(DISTINCT x): an arg reading no S: the distinct x of forced cells (low) and of
  cells that can hold a record (high); an arg reading S: low 1 when a record is forced,
  high the distinct present values (at most the greatest count).

Exactness. When an output group holds one cell per release group (no type mixing: every
cell's records differ in group), cells are independent and the bounds are the exact
[least, greatest] over every assignment for COUNT, SUM, MIN, MAX, AVG, and for
quantiles when the count is fixed (sum of lo = sum of hi). Several cells of one release
group (several types) share the group's shuffle: each cell's bounds hold for its
marginal, and since two types never share a record the sums/extremes of marginals are
sound, but not tight (e.g. two types of one group cannot both take its largest value).
An atom whose w reads no S is one plain SQL aggregate over the rows: exact.

NULL answers: low/high NULL when no record can be selected (sum of hi is 0); may_null
when the selection may be empty (sum of lo is 0; for VAR_SAMP/STDDEV_SAMP at most 1).

Runs. w is a function of the value v and of the type, so equal values give equal w:
each group's multiset is read as runs (v, cnt) from the bounds table
(:mod:`sqlanon.models.ke_bounds`), never from the release. A cell's present values are
then runs ranked by a running sum of cnt (ordered by w, then v), and every per-value
measure is a sum over runs of w times the run's overlap with a rank range, or the w of
the run holding one rank.

Cost: one aggregation over the rows (the records counted per keys, release group and
every ranked atom's parameters; exact COUNT/MIN/MAX partials beside them), the output
groups ranked over those counts, not over the rows; per atom that reads S, the runs
ranked once per (release group, parameters) with a window sort (none when w is S
itself: the bounds table's ranks), then crossed with the cells (gk, gid, type): sum over
cells of the group's distinct values. Atoms with the same w share their CTEs.
"""

from __future__ import annotations

from sqlglot import exp

from sqlanon.models.ke_bounds import BLOCK
from sqlanon.rewriter.ke_general_cells import (
    QUANTILES,
    Ctes,
    atom_ctes,
    fine_cells,
    fixed_count,
    internal_query,
    output_group,
    reads_runs,
)
from sqlanon.rewriter.ke_general_cells import name as cte_name
from sqlanon.rewriter.ke_general_types import (
    AtomPlan,
    plan_atom,
    refuse_s_outside_atoms,
    split_where,
)
from sqlanon.rewriter.shape import Atom, Shape, atom_column, key_name
from sqlanon.rewriter.sqlbuild import CTE_PREFIX, with_cte
from sqlanon.rewriter.sqlbuild import alias as _alias
from sqlanon.rewriter.sqlbuild import cte as _cte
from sqlanon.rewriter.sqlbuild import fragment as _f
from sqlanon.rewriter.sqlbuild import select as _select

_SAMP = ("var_samp", "stddev_samp")


def atoms_query(shape: Shape) -> exp.Select:
    """The query of shape.py's output contract for a (k,e) Shape."""
    release = shape.release
    s = release.sensitive[0]
    refuse_s_outside_atoms(shape.keys, [j.on for j in shape.joins], s)
    row_filter, s_where = split_where(shape.where, s)
    names: dict[str, str] = {}  # parameters shared by the atoms (ke_general_types)
    plans = [plan_atom(str(i), atom, s_where, s, names) for i, atom in enumerate(shape.atoms)]
    for index, plan in enumerate(plans):  # atoms with the same w share their ranked runs
        first = next((p for p in plans[:index] if same_types(p, plan)), None)
        plan.ranked_by = None if first is None else (first.ranked_by or first.tag)
    for plan in plans:
        readers = [p for p in plans if p is plan or p.ranked_by == plan.tag]
        plan.runs_read = any(reads_runs(p) for p in readers)
    presence, tag = None, ""
    if shape.keys and s_where is not None:
        presence = plan_atom("p", Atom("count"), s_where, s, names)
        # an atom with the same w has the same counts: its nhi says the same
        twin = next((p for p in plans if same_types(p, presence)), None)
        tag = presence.tag if twin is None else twin.tag
        presence = presence if twin is None else None
        if presence is not None:
            presence.runs_read = reads_runs(presence)
    every = [*plans, *([presence] if presence else [])]
    keys = len(shape.keys)
    ctes: Ctes = [
        ("rows", _rows(shape, row_filter, every)),
        ("fine", fine_cells(keys, every)),
        ("keyed", _keyed(keys)),
        ("groups", _groups(keys)),
        ("vals", _vals(shape)),
        ("grp", _group_sizes()),
    ]
    for plan in every:
        ctes += atom_ctes(plan, keys)
    final = _select(*[_alias(_f(f"g.{key_name(i)}"), key_name(i)) for i in range(keys)])
    final = final.from_(_alias(_cte("groups"), "g", table=True), copy=False)
    for index, plan in enumerate(plans):
        final = _join_atom(final, plan)
        for part, value in _columns(plan).items():
            final = final.select(_alias(value, atom_column(index, part)), copy=False)
    if presence is not None:
        final = _join_atom(final, presence)
    if tag:
        final = final.where(_f(f"a{tag}.nhi > 0"), copy=False)
    for cte_alias, body in ctes:
        final = with_cte(final, CTE_PREFIX + cte_alias, body)
    return final


def same_types(plan: AtomPlan, other: AtomPlan) -> bool:
    """Whether two ranked atoms have the same ``w`` over the same parameters."""
    if plan.exact or other.exact:
        return False
    return set(plan.params) == set(other.params) and plan.w.sql() == other.w.sql()


def _rows(shape: Shape, row_filter: exp.Expr | None, plans: list[AtomPlan]) -> exp.Select:
    """One row per selected record (ghosts excluded): its keys, release group and every
    atom's type parameters (each once: atoms share them)."""
    release = shape.release
    columns: list[exp.Expr] = [_alias(k.copy(), key_name(i)) for i, k in enumerate(shape.keys)]
    columns.append(_alias(exp.column(release.key_column, table="r", quoted=True), "gid"))
    params: dict[str, exp.Expr] = {}
    for plan in plans:
        params.update(plan.params)
    columns += [_alias(e.copy(), p) for p, e in params.items()]
    table = exp.table_(release.table, db=release.schema, quoted=True, alias="r")
    rows = _select(*columns).from_(table, copy=False)
    for join in shape.joins:
        rows = rows.join(
            _aliased(join.relation, join.alias),
            on=join.on.copy(),
            join_type=join.kind,
            copy=False,
        )
    if row_filter is not None:
        rows = rows.where(row_filter, copy=False)
    if release.ghosts:
        ghost = exp.column(release.ghost_column, table="r", quoted=True)
        rows = rows.where(exp.not_(exp.func("COALESCE", ghost, exp.false())), copy=False)
    return rows


def _aliased(relation: exp.Expr, alias: str) -> exp.Expr:
    """``relation AS alias``, keeping the column names its own alias gives (VALUES)."""
    found = relation.args.get("alias")
    if isinstance(found, exp.TableAlias) and found.columns:
        named = relation.copy()
        named.args["alias"].set("this", exp.to_identifier(alias))
        return named
    return _alias(relation.copy(), alias, table=True)


def _keyed(keys: int) -> exp.Query:
    """The fine cells with their output group ``gk``: the dense rank of their keys (so
    later joins are on a non-NULL integer), ranked over the cells, not the rows."""
    fine = CTE_PREFIX + "fine"
    if not keys:
        return internal_query(f"SELECT 1 AS gk, x.* FROM {fine} AS x")  # noqa: S608 - internal names only
    return internal_query(f"SELECT {output_group(keys, 'x')} AS gk, x.* FROM {fine} AS x")  # noqa: S608 - internal names only


def _groups(keys: int) -> exp.Query:
    """One row per output group: gk and its keys (a single gk 1 without keys, also when
    no record is selected: an aggregate without GROUP BY always answers one row)."""
    if not keys:
        return _select(_alias(exp.Literal.number(1), "gk"))
    columns = ", ".join(["x.gk", *[f"x.{key_name(i)}" for i in range(keys)]])
    return internal_query(f"SELECT DISTINCT {columns} FROM {CTE_PREFIX}keyed AS x")  # noqa: S608 - internal names only


def _group_sizes() -> exp.Query:
    """n per release group: its slots, ghosts included."""
    vals = CTE_PREFIX + "vals"
    return internal_query(
        f"SELECT x.gid, CAST(SUM(x.cnt) AS BIGINT) AS n FROM {vals} AS x GROUP BY x.gid"  # noqa: S608 - internal names only
    )


def _vals(shape: Shape) -> exp.Select:
    """Every release group's multiset of values (ghost slots hold values too) as runs:
    value ``v`` held by ``cnt`` slots, the last of them ranked ``u2`` among the group's
    ``n`` (ascending). Read from the bounds table's ascending rows, one
    per run (a run spanning several blocks has a row per block, each with the whole
    run's ranks: keep the one of the block of its first rank)."""
    release = shape.release
    assert release.bounds_table is not None  # a (k,e) release always has one
    table = exp.table_(release.bounds_table, db=release.bounds_schema, quoted=True, alias="b")
    first_block = f"CAST(FLOOR((b.lo_rank - 1) / {float(BLOCK)}) AS INTEGER)"
    return (
        _select(
            _f("b.group_id AS gid"),
            _f('b."value" AS v'),
            _f("CAST(b.hi_rank - b.lo_rank + 1 AS BIGINT) AS cnt"),
            _f("CAST(b.n AS BIGINT) AS n"),
            _f("CAST(b.hi_rank AS BIGINT) AS u2"),
        )
        .from_(table, copy=False)
        .where(_f(f'NOT b."descending" AND b."block" = {first_block}'), copy=False)
    )


def _join_atom(final: exp.Select, plan: AtomPlan) -> exp.Select:
    """LEFT JOIN the atom's per-output-group CTEs as a<tag>, l<tag>, h<tag>, d<tag>."""
    parts = [("ag", "a")]
    if plan.func == "avg" and not plan.exact and not fixed_count(plan):
        parts += [("avl", "l"), ("avh", "h")]
    if plan.func in QUANTILES and not plan.exact:
        parts += [("ql", "l"), ("qh", "h")]
    if plan.func == "count_distinct" and not plan.exact:
        parts.append(("cd", "d"))
    for kind, alias in parts:
        name = alias + plan.tag
        final = final.join(
            _alias(_cte(cte_name(kind, plan)), name, table=True),
            on=_f(f"{name}.gk = g.gk"),
            join_type="LEFT",
            copy=False,
        )
    return final


def _clamp(est: str, low: str, high: str) -> str:
    """``est`` moved inside [low, high] (rounding, or a missing estimate)."""
    e = f"COALESCE({est}, {low})"
    return f"CASE WHEN {e} < {low} THEN {low} WHEN {e} > {high} THEN {high} ELSE {e} END"


def _columns(plan: AtomPlan) -> dict[str, exp.Expr]:
    """low, high, est (and may_null for nullable atoms) over the joined CTEs."""
    t = plan.tag
    a, l, h, d = f"a{t}", f"l{t}", f"h{t}", f"d{t}"  # noqa: E741
    func = plan.func
    if plan.exact:
        value = f"COALESCE({a}.val, 0)" if not plan.atom.nullable else f"{a}.val"
        out = {"low": value, "high": value, "est": value}
    elif func == "count":
        low, high = f"COALESCE({a}.nlo, 0)", f"COALESCE({a}.nhi, 0)"
        out = {"low": low, "high": high, "est": _clamp(f"{a}.cnt", low, high)}
    elif func == "count_distinct":
        low = (
            f"CASE WHEN {a}.nlo >= 1 THEN 1 ELSE 0 END"
            if plan.arg_reads_s
            else f"COALESCE({d}.dlo, 0)"
        )
        high = f"LEAST(COALESCE({a}.nhi, 0), COALESCE({d}.dhi, 0))"
        out = {"low": low, "high": high, "est": f"({low} + {high}) / 2.0"}
    elif func == "sum":
        low = f"CASE WHEN {a}.nhi > 0 THEN {a}.sum_lo END"
        high = f"CASE WHEN {a}.nhi > 0 THEN {a}.sum_hi END"
        out = {"low": low, "high": high, "est": _clamp(f"{a}.tot", low, high)}
    elif func == "avg" and fixed_count(plan):  # N = nlo = nhi records, whichever values
        low = f"CAST({a}.sum_lo AS DOUBLE) / NULLIF({a}.nlo, 0)"
        high = f"CAST({a}.sum_hi AS DOUBLE) / NULLIF({a}.nhi, 0)"
        out = {"low": low, "high": high, "est": _clamp(f"{a}.tot / NULLIF({a}.cnt, 0)", low, high)}
    elif func == "avg":
        low, high = f"{l}.avg", f"{h}.avg"
        out = {"low": low, "high": high, "est": _clamp(f"{a}.tot / NULLIF({a}.cnt, 0)", low, high)}
    elif func == "min":
        low, high = f"{a}.min_any", f"COALESCE({a}.min_forced, {a}.max_any)"
        out = {"low": low, "high": high, "est": _clamp(f"{a}.min_est", low, high)}
    elif func == "max":
        low, high = f"COALESCE({a}.max_forced, {a}.min_any)", f"{a}.max_any"
        out = {"low": low, "high": high, "est": _clamp(f"{a}.max_est", low, high)}
    elif func in QUANTILES:
        out = _quantile_columns(plan, a, l, h)
    else:
        out = _spread_columns(plan, a)
    if plan.atom.nullable:
        most = 1 if func in _SAMP else 0
        out["may_null"] = f"COALESCE({a}.nlo, 0) <= {most}"
    return {part: _f(sql) for part, sql in out.items()}


def _quantile_columns(plan: AtomPlan, a: str, l: str, h: str) -> dict[str, str]:  # noqa: E741
    """Quantile bounds; N ranges over [Nmin, Nmax] = [max(1, sum lo), sum hi].

    Every selection X is, per cell, a j-subset of P with j <= hi, so its k-th smallest is
    at least the k-th smallest of the low pool L (each cell's hi smallest: a superset
    of each cell's j smallest, which X dominates), and its d-th largest at most the d-th
    largest of the high pool H. quantile_cont reads x_(FRN+1) <= answer <= x_(CRN+1)
    with RN = q(N-1); FRN+1 and the descending rank N - CRN of x_(CRN+1) never decrease
    with N, so low = L at rank FRN(Nmin)+1 and high = H at descending rank Nmin -
    CRN(Nmin). quantile_disc reads x_(rho) with rho = max(1, ceil(qN)): low = L at
    rho(Nmin), high = H at descending rank Nmin - rho(Nmin) + 1 (also nondecreasing in N).
    With a fixed count (Nmin = Nmax, every cell takes exactly lo = hi records), L and H are
    attainable selections (each cell its lo smallest / largest, independent across release
    groups) that minimise / maximise every order statistic at once, and the interpolation
    is increasing in both, so the interpolated L and H values are the exact bounds.
    """
    if plan.func == "quantile_disc":
        low, high = f"{l}.q1", f"{h}.q1"
    else:
        q = f"CAST({float(plan.atom.fraction or 0.0)!r} AS DOUBLE)"
        rn = f"{q} * (GREATEST({a}.nlo, 1) - 1)"
        frac = f"({rn} - FLOOR({rn}))"
        fixed = f"{a}.nlo = {a}.nhi"

        def between(first: str, second: str) -> str:
            x, y = f"CAST({first} AS DOUBLE)", f"CAST({second} AS DOUBLE)"
            return f"{x} + ({y} - {x}) * {frac}"

        low = f"CASE WHEN {fixed} THEN {between(f'{l}.q1', f'{l}.q2')} ELSE CAST({l}.q1 AS DOUBLE) END"  # noqa: E501
        high = f"CASE WHEN {fixed} THEN {between(f'{h}.q1', f'{h}.q2')} ELSE CAST({h}.q2 AS DOUBLE) END"  # noqa: E501
    return {"low": low, "high": high, "est": f"({low} + {high}) / 2.0"}


def _spread_columns(plan: AtomPlan, a: str) -> dict[str, str]:
    """VAR/STDDEV bounds (module docstring): low 0, high from the range of the values."""
    samp = plan.func in _SAMP
    least = 2 if samp else 1
    n = f"GREATEST({a}.nlo, {least})"
    span = f"(CAST({a}.max_any AS DOUBLE) - CAST({a}.min_any AS DOUBLE))"
    # floor(N/2)ceil(N/2)/(N(N-1)) never increases from N = 2 on; over N^2 it is at most
    # 1/4 (and 0 when at most one record can be selected).
    share = (
        f"FLOOR({n} / 2.0) * CEIL({n} / 2.0) / ({n} * ({n} - 1.0))"
        if samp
        else f"CASE WHEN {a}.nhi <= 1 THEN 0 ELSE 0.25 END"
    )
    ok = f"{a}.nhi >= {least}"
    low = f"CASE WHEN {ok} THEN CAST(0 AS DOUBLE) END"
    high = f"CASE WHEN {ok} THEN {span} * {span} * {share} END"
    cnt = f"NULLIF({a}.cnt, 0)"
    pop = f"{a}.tot2 / {cnt} - ({a}.tot / {cnt}) * ({a}.tot / {cnt})"
    est = f"({pop}) * {a}.cnt / NULLIF({a}.cnt - 1, 0)" if samp else pop
    est = _clamp(est, low, high)
    if plan.func.startswith("stddev"):
        return {"low": f"SQRT({low})", "high": f"SQRT({high})", "est": f"SQRT({est})"}
    return {"low": low, "high": high, "est": est}
