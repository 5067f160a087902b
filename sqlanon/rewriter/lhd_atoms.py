"""Per-atom bounds over an lHD release's rows, given per-row flags and values.

:mod:`sqlanon.rewriter.lhd_general` gives every row, for atom i, ``s{i}`` (the row is
surely selected), ``m{i}`` (it may be), ``f{i}`` (its estimate weight) and, for atoms
with an argument, ``lo{i} <= w <= hi{i}`` (equal for an exact w = f(S); a label's
interval for an argument reading a quasi column) and ``e{i}`` (w's estimate). The
selection is any set I of possible rows holding every sure row. Per output group:

- COUNT in [#sure, #possible] (with ghosts: the cells of lhd_ghosts.py); SUM: sure sum
  plus the negative (positive) possible values (with no sure row and none of that sign:
  the least (greatest) possible value, as the selection is not empty); MIN in [min of
  every lo, min of the sure his (else the greatest hi)]; MAX symmetric. All attained
  for exact values.
- AVG: lhd_intervals.py's exact method over runs of ties, on the lo (hi) values.
- Quantiles are monotone in every value, so the least over I adds the m smallest
  possible values to the sure ones, for some m. Its value is <= x iff that set holds
  at least k(n) values <= x (n = #sure + m, k the rank the quantile reads): with a sure
  and b possible rows <= x that is a + min(b, m) >= k(#sure + m), whose left side minus
  right side grows up to m = b and shrinks after (k grows by at most 1 per row), so
  the least is the least x with a + b >= k(#sure + b) (b >= 1 without sure rows). The
  greatest is symmetric with the rank counted from the top, n - k + 1. QUANTILE_DISC
  reads rank ceil(p n): exact. QUANTILE_CONT lies between ranks floor((n - 1) p) + 1
  and ceil((n - 1) p) + 1, read on the low and the high side: sound, exact when
  (n - 1) p is whole at the optimum. p n is taken in DECIMAL and in DOUBLE, the
  smaller on the low side and the greater on the high one (DuckDB and PostgreSQL
  disagree where the DOUBLE product misses a whole number).
- VAR_POP of I: its squared deviations hold at least the sure rows' own ss_S, and
  |I| <= #sure + #possible: low = ss_S / (#sure + #possible) (VAR_SAMP: over that minus
  one); high: n values in [min, max] have VAR_POP <= (max - min)^2 / 4, so VAR_SAMP <=
  that times n / (n - 1), greatest at the fewest rows n = max(2, #sure). Exact with no
  possible row. STDDEV: their square roots.
- COUNT(DISTINCT w) in [distinct over the sure rows, distinct over the possible ones]:
  exact for exact values.

Estimates: COUNT and SUM weigh each row by its weight, AVG is their ratio; the others
evaluate the aggregate on the sure rows and the possible ones of weight >= 1/2 (on all
possible rows when that is empty), a selection, so inside the interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sqlanon.rewriter.shape import Atom

#: Atoms whose argument may be an interval per row (they are monotone in every value).
MONOTONE = ("count", "sum", "avg", "min", "max", "quantile_cont", "quantile_disc")
_QUANTILES = ("quantile_cont", "quantile_disc")
_VARIANCES = ("var_pop", "var_samp", "stddev_pop", "stddev_samp")


@dataclass(frozen=True)
class Context:
    """What the formulas of one query read: its key columns (on alias ``c``)."""

    keys: tuple[str, ...]
    ghosts: bool

    def over(self, *extra: str, order: str = "") -> str:
        part = [f"c.{k}" for k in self.keys] + list(extra)
        head = f"PARTITION BY {', '.join(part)}" if part else ""
        return f"OVER ({head}{' ' if head and order else ''}{order})"


def _count(test: str) -> str:
    return f"SUM(CASE WHEN {test} THEN 1 ELSE 0 END)"


def _zero(sql: str, ctx: Context) -> str:
    return sql if ctx.keys else f"COALESCE({sql}, 0)"


# --- window columns ---------------------------------------------------------------------


def windows(i: int, atom: Atom, ctx: Context) -> list[str]:
    """The window columns atom i's bounds read (on the CTE aliased ``c``)."""
    if atom.func == "avg":
        return _avg_windows(i, ctx)
    if atom.func in _QUANTILES:
        return _quantile_windows(i, atom, ctx)
    return []


def _avg_windows(i: int, ctx: Context) -> list[str]:
    """Candidate averages per row: a sure row offers sure-sum / sure-count (no possible row
    added); a possible row offers the sure rows plus every possible row up to its value
    (RANGE frame: the end of its run of ties)."""
    s, m = f"c.s{i}", f"c.m{i}"
    cls = f"CASE WHEN {s} THEN 0 WHEN {m} THEN 1 ELSE 2 END"
    columns = []
    for side, value, direction in (("lo", f"c.lo{i}", "ASC"), ("hi", f"c.hi{i}", "DESC")):
        double = f"CAST({value} AS DOUBLE)"
        ssum = f"SUM(CASE WHEN {s} THEN {double} END) {ctx.over()}"
        sn = f"{_count(s)} {ctx.over()}"
        run = f"SUM({double}) {ctx.over(cls, order=f'ORDER BY {value} {direction}')}"
        cnt = f"COUNT(*) {ctx.over(cls, order=f'ORDER BY {value} {direction}')}"
        columns.append(
            f"CASE WHEN {s} THEN {ssum} / {sn} WHEN {m} THEN "
            f"(COALESCE({ssum}, 0) + {run}) / ({sn} + {cnt}) END AS a{side}{i}"
        )
    return columns


def _ranks(atom: Atom, n: str) -> tuple[str, str]:
    """The least and the greatest 1-based rank the quantile reads among n values."""
    assert atom.fraction is not None
    p = float(atom.fraction)
    dec = f"CAST({format(Decimal(repr(p)), 'f')} AS DECIMAL(38, 18))"
    dbl = f"CAST({p!r} AS DOUBLE)"
    if atom.func == "quantile_disc":
        at = [f"CEIL({q} * {n})" for q in (dec, dbl)]
        low, high = f"LEAST({at[0]}, {at[1]})", f"GREATEST({at[0]}, {at[1]})"
        return f"GREATEST(1, {low})", f"GREATEST(1, {high})"
    h = [f"({n} - 1) * {q}" for q in (dec, dbl)]
    return f"LEAST(FLOOR({h[0]}), FLOOR({h[1]})) + 1", f"GREATEST(CEIL({h[0]}), CEIL({h[1]})) + 1"


def _quantile_windows(i: int, atom: Atom, ctx: Context) -> list[str]:
    """Per possible-or-sure row: whether its lo value bounds the least quantile from
    above (``qlo``) and its hi value the greatest from below (``qhi``), see the module
    doc (a sure and b possible rows at or past the value, RANGE frames)."""
    s, m = f"c.s{i}", f"c.m{i}"
    sure_n = f"{_count(s)} {ctx.over()}"
    m0 = f"CASE WHEN {sure_n} = 0 THEN 1 ELSE 0 END"
    columns = []
    for side, value, direction in (("lo", f"c.lo{i}", "ASC"), ("hi", f"c.hi{i}", "DESC")):
        frame = ctx.over(m, order=f"ORDER BY {value} {direction}")
        a = f"{_count(s)} {frame}"
        b = f"SUM(CASE WHEN {s} THEN 0 ELSE 1 END) {frame}"
        n = f"({sure_n} + {b})"
        low_rank, high_rank = _ranks(atom, n)
        need = f"({low_rank})" if side == "lo" else f"{n} - ({high_rank}) + 1"
        columns.append(
            f"CASE WHEN {m} AND {b} >= {m0} AND {a} + {b} >= {need} "
            f"THEN TRUE ELSE FALSE END AS q{side}{i}"
        )
    return columns


# --- the bounds -------------------------------------------------------------------------


def bounds(i: int, atom: Atom, ctx: Context) -> dict[str, str]:
    """Atom i's ``low``, ``high``, ``est`` and (nullable atoms) ``may_null`` as SQL
    aggregates over the rows aliased ``c``."""
    s, m = f"c.s{i}", f"c.m{i}"
    found: dict[str, str]
    if atom.func == "count":
        found = _count_bounds(i, ctx)
    elif atom.func == "count_distinct":
        found = {
            "low": f"COUNT(DISTINCT CASE WHEN {s} THEN c.lo{i} END)",
            "high": f"COUNT(DISTINCT CASE WHEN {m} THEN c.lo{i} END)",
            "est": f"COUNT(DISTINCT CASE WHEN {_chosen(i)} THEN c.lo{i} END)",
        }
    elif atom.func == "sum":
        found = _sum_bounds(i)
    elif atom.func in ("min", "max"):
        found = _extreme_bounds(i, atom.func)
    elif atom.func == "avg":
        found = {
            "low": f"MIN(c.alo{i})",
            "high": f"MAX(c.ahi{i})",
            "est": f"COALESCE(SUM(CASE WHEN {m} THEN c.f{i} * c.e{i} END) / "
            f"NULLIF(SUM(CASE WHEN {m} THEN c.f{i} END), 0), "
            f"AVG(CASE WHEN {m} THEN c.e{i} END))",
        }
    elif atom.func in _QUANTILES:
        found = {
            "low": f"MIN(CASE WHEN c.qlo{i} THEN c.lo{i} END)",
            "high": f"MAX(CASE WHEN c.qhi{i} THEN c.hi{i} END)",
            "est": _on_chosen(
                i,
                f"{'PERCENTILE_CONT' if atom.func == 'quantile_cont' else 'PERCENTILE_DISC'}"
                f"({float(atom.fraction or 0)!r}) WITHIN GROUP (ORDER BY %s)",
            ),
        }
    else:
        found = _variance_bounds(i, atom.func)
    # Kept inside the interval: SUM's weighted sum counts the empty selection as 0 (the
    # numeric answers exclude it), and rounding may set a variance just outside.
    low, high, est = found["low"], found["high"], found["est"]
    found["est"] = (
        f"CASE WHEN {est} < {low} THEN {low} WHEN {est} > {high} THEN {high} ELSE {est} END"
    )
    if atom.nullable:
        least = 2 if atom.func in ("var_samp", "stddev_samp") else 1
        found["may_null"] = f"COALESCE({_count(s)}, 0) < {least}"
    elif not ctx.keys:
        found = {k: _zero(v, ctx) for k, v in found.items()}
    return found


def _chosen(i: int) -> str:
    """The rows the estimate selects: the sure ones and the possible ones of weight >= 1/2."""
    return f"(c.s{i} OR (c.m{i} AND c.f{i} >= 0.5))"


def _on_chosen(i: int, template: str) -> str:
    """``template`` (an aggregate of ``%s``) on the chosen rows, else on every possible
    row, else NULL."""
    chosen = template % f"CASE WHEN {_chosen(i)} THEN c.e{i} END"
    every = template % f"CASE WHEN c.m{i} THEN c.e{i} END"
    return f"COALESCE({chosen}, {every})"


def _count_bounds(i: int, ctx: Context) -> dict[str, str]:
    if ctx.ghosts:  # per cell (lhd_ghosts.py): forced and reachable real rows
        low = f"SUM(CASE WHEN c.rn = 1 THEN c.forced{i} ELSE 0 END)"
        high = f"SUM(CASE WHEN c.rn = 1 THEN c.reach{i} ELSE 0 END)"
    else:
        low, high = _count(f"c.s{i}"), _count(f"c.m{i}")
    return {"low": low, "high": high, "est": f"SUM(CASE WHEN c.m{i} THEN c.f{i} ELSE 0 END)"}


def _sum_bounds(i: int) -> dict[str, str]:
    s, m, lo, hi = f"c.s{i}", f"c.m{i}", f"c.lo{i}", f"c.hi{i}"
    # Without sure rows the selection is still non-empty: with no value of the right
    # sign to add, the best is the one nearest zero.
    no_sure = f"{_count(s)} = 0"
    low = (
        f"SUM(CASE WHEN {s} THEN {lo} WHEN {m} THEN (CASE WHEN {lo} < 0 THEN {lo} ELSE 0 END) END)"
    )
    high = (
        f"SUM(CASE WHEN {s} THEN {hi} WHEN {m} THEN (CASE WHEN {hi} > 0 THEN {hi} ELSE 0 END) END)"
    )
    least, greatest = f"MIN(CASE WHEN {m} THEN {lo} END)", f"MAX(CASE WHEN {m} THEN {hi} END)"
    return {
        "low": f"CASE WHEN {no_sure} AND {least} >= 0 THEN {least} ELSE {low} END",
        "high": f"CASE WHEN {no_sure} AND {greatest} <= 0 THEN {greatest} ELSE {high} END",
        "est": f"SUM(CASE WHEN {m} THEN c.f{i} * c.e{i} END)",
    }


def _extreme_bounds(i: int, func: str) -> dict[str, str]:
    s, m, lo, hi = f"c.s{i}", f"c.m{i}", f"c.lo{i}", f"c.hi{i}"
    if func == "min":
        return {
            "low": f"MIN(CASE WHEN {m} THEN {lo} END)",
            "high": f"COALESCE(MIN(CASE WHEN {s} THEN {hi} END), MAX(CASE WHEN {m} THEN {hi} END))",
            "est": _on_chosen(i, "MIN(%s)"),
        }
    return {
        "low": f"COALESCE(MAX(CASE WHEN {s} THEN {lo} END), MIN(CASE WHEN {m} THEN {lo} END))",
        "high": f"MAX(CASE WHEN {m} THEN {hi} END)",
        "est": _on_chosen(i, "MAX(%s)"),
    }


def _variance_bounds(i: int, func: str) -> dict[str, str]:
    """VAR / STDDEV (see the module doc); values are exact here (lo = hi = w)."""
    s, m, v = f"c.s{i}", f"c.m{i}", f"CAST(c.lo{i} AS DOUBLE)"
    samp = func.endswith("samp")
    var = "VAR_SAMP" if samp else "VAR_POP"
    sure, poss, cand = _count(s), _count(f"({m} AND NOT {s})"), _count(m)
    ss = f"COALESCE(VAR_POP(CASE WHEN {s} THEN {v} END) * {sure}, 0)"
    spread = f"(MAX(CASE WHEN {m} THEN {v} END) - MIN(CASE WHEN {m} THEN {v} END))"
    if samp:
        fewest = f"GREATEST(2, {sure})"
        low = f"{ss} / ({cand} - 1)"
        high = f"{spread} * {spread} * {fewest} / (4.0 * ({fewest} - 1))"
    else:
        low, high = f"{ss} / {cand}", f"{spread} * {spread} / 4.0"
    exact = f"{var}(CASE WHEN {s} THEN {v} END)"
    none = f"{cand} < {2 if samp else 1}"
    low = f"CASE WHEN {none} THEN NULL WHEN {poss} = 0 THEN {exact} ELSE {low} END"
    high = f"CASE WHEN {none} THEN NULL WHEN {poss} = 0 THEN {exact} ELSE {high} END"
    est = _on_chosen(i, f"{var}(CAST(%s AS DOUBLE))")
    est = f"CASE WHEN {none} THEN NULL ELSE COALESCE({est}, {low}) END"
    if func.startswith("stddev"):
        low, high, est = (f"SQRT({x})" for x in (low, high, est))
    return {"low": low, "high": high, "est": est}
