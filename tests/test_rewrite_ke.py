"""Soundness and tightness of interval answers over (k,e) releases, on real DuckDB.

Soundness: the true answer on the private source lies in [low, high] for every aggregate
of every output row (and the estimate lies there too). Tightness: on tiny releases,
enumerating every assignment of each group's values to its records (every within-group
permutation, i.e. every source consistent with the release) reaches low and high.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import duckdb
import numpy as np
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from sqlanon.rewriter import rewrite
from tests.test_rewrite_support import (
    answer,
    catalog_of,
    fetch,
    insert_rows,
    make_release,
    on_source,
)

pytestmark = pytest.mark.slow  # a long file: handed out first (tests/conftest.py)

AGGS = {
    "cnt": ("count", "COUNT(*)"),
    "cb": ("count", "COUNT(b)"),
    "cs": ("count", "COUNT(s)"),
    "sm": ("sum", "SUM(s)"),
    "av": ("avg", "AVG(s)"),
    "mn": ("min", "MIN(s)"),
    "mx": ("max", "MAX(s)"),
}
EPS = 1e-9

# --- random releases and queries ----------------------------------------------------------

record = st.fixed_dictionaries(
    {
        "a": st.integers(0, 5),
        "b": st.sampled_from(["x", "y", "zz", None]),
        "s": st.integers(-6, 12),
    }
)


def _int(draw: Any) -> str:
    return str(draw(st.integers(-1, 6)))


@st.composite
def qi_atom(draw: Any) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return f"a {draw(st.sampled_from(['=', '<>', '<', '<=', '>', '>=']))} {_int(draw)}"
    if kind == 1:
        lo, hi = sorted([int(_int(draw)), int(_int(draw))])
        return f"a BETWEEN {lo} AND {hi}"
    if kind == 2:
        values = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
        neg = draw(st.sampled_from(["", "NOT "]))
        return f"a {neg}IN ({', '.join(map(str, values))})"
    if kind == 3:
        return f"b LIKE '{draw(st.sampled_from(['x%', '%z', 'y', '%']))}'"
    if kind == 4:
        return f"b IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == 5:
        return f"b {draw(st.sampled_from(['=', '<>']))} '{draw(st.sampled_from(['x', 'y']))}'"
    if kind == 6:
        return "b IN ('x', 'zz')"
    if kind == 7:
        return f"group_id = {draw(st.integers(0, 2))}"
    if kind == 8:
        return "a > 2 AND b IS NOT NULL"
    return f"NOT (a < {_int(draw)})"


@st.composite
def s_atom(draw: Any) -> str:
    kind = draw(st.integers(0, 4))
    v = draw(st.integers(-6, 12))
    if kind == 0:
        return f"s {draw(st.sampled_from(['=', '<>', '<', '<=', '>', '>=']))} {v}"
    if kind == 1:
        return f"s BETWEEN {v} AND {v + draw(st.integers(0, 8))}"
    if kind == 2:
        values = draw(st.lists(st.integers(-6, 12), min_size=1, max_size=4))
        return f"s IN ({', '.join(map(str, values))})"
    if kind == 3:
        return f"NOT (s > {v})"
    return f"(s < {v} OR s > {v + draw(st.integers(0, 6))})"


@st.composite
def combine(draw: Any, atom: Any, depth: int = 2) -> str:
    """``atom``s under AND, OR and NOT, up to ``depth`` levels (4 atoms at most). Written
    out rather than with ``st.recursive``, whose check that ``extend`` uses its argument
    sometimes misfires on composite atoms (a HypothesisDeprecationWarning, an error here)."""
    kind = draw(st.integers(0, 2)) if depth else 0
    if kind == 0:
        return str(draw(atom))
    if kind == 1:
        return f"NOT ({draw(combine(atom, depth - 1))})"
    left, right = draw(combine(atom, depth - 1)), draw(combine(atom, depth - 1))
    return f"({left} {draw(st.sampled_from(['AND', 'OR']))} {right})"


@st.composite
def queries(draw: Any) -> tuple[str, list[str]]:
    groups = draw(st.sampled_from([[], ["a"], ["b"], ["a", "b"], ["group_id"]]))
    aggs = draw(st.lists(st.sampled_from(sorted(AGGS)), min_size=1, max_size=7, unique=True))
    terms = []
    if draw(st.booleans()):
        terms.append(draw(combine(qi_atom())))
    if draw(st.booleans()):
        terms.append(draw(combine(s_atom())))
    select = ", ".join([*groups, *[f"{AGGS[n][1]} AS {n}" for n in aggs]])
    sql = f"SELECT {select} FROM fam"  # noqa: S608 - test query text
    if terms:
        sql += " WHERE " + " AND ".join(terms)
    if groups:
        sql += " GROUP BY " + ", ".join(groups)
    return sql, aggs


@st.composite
def releases(draw: Any, max_size: int = 30) -> tuple[list[dict[str, Any]], list[int]]:
    rows = draw(st.lists(record, min_size=1, max_size=max_size))
    n_groups = draw(st.integers(1, 3))
    group_of = draw(st.lists(st.integers(0, n_groups - 1), min_size=len(rows), max_size=len(rows)))
    return rows, group_of


_CON: list[duckdb.DuckDBPyConnection] = []


def build(
    rows: list[dict[str, Any]],
    groups: list[int],
    seed: int = 0,
    ghosts: list[bool] | None = None,
) -> tuple[Any, Any]:
    """A release of ``rows`` in a reused in-memory DuckDB (connecting costs ~0.1 s);
    ``ghosts`` flags the rows that are ghosts (see make_release)."""
    if not _CON:
        _CON.append(duckdb.connect())
    con = _CON[0]
    con.execute("DROP VIEW IF EXISTS fam")
    for table in ("fam_v1", "fam_source", "worlds", 'sqlanon."fam_v1_bounds"'):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    info = make_release(
        con, "fam", {"a": "INTEGER", "b": "VARCHAR"}, ("s", "INTEGER"), rows, groups, seed, ghosts
    )
    return con, info


# --- checks ------------------------------------------------------------------------------


def _key(row: dict[str, Any], groups: list[str]) -> tuple[Any, ...]:
    return tuple(row[g] for g in groups)


def group_names(sql: str) -> list[str]:
    tree = sqlglot.parse_one(sql, read="duckdb")
    group = tree.args.get("group")
    return [c.name for c in group.expressions] if group else []


def check_sound(
    out: list[dict[str, Any]], truth: list[dict[str, Any]], sql: str, aggs: dict[str, str]
) -> None:
    """Every true value lies in its row's interval; ``aggs`` maps output name -> function."""
    groups = group_names(sql)
    out_by = {_key(r, groups): r for r in out}
    truth_by = {_key(r, groups): r for r in truth}
    assert len(out_by) == len(out), "duplicate output groups"
    assert set(truth_by) <= set(out_by), (sql, truth_by.keys(), out_by.keys())
    for key, row in out_by.items():
        true_row = truth_by.get(key)
        for name, func in aggs.items():
            value = true_row[name] if true_row is not None else None
            low, high, est = row[f"{name}_low"], row[f"{name}_high"], row[f"{name}_est"]
            if func == "sum" and low is None and high is None:
                assert value is None, (sql, key, name, row)
                continue
            if func in ("count", "sum"):
                value = value or 0
            if value is None:
                continue
            assert low is not None and high is not None, (sql, key, name, row)
            assert low - EPS <= value <= high + EPS, (sql, key, name, value, row)
            assert est is not None and low - EPS <= est <= high + EPS, (sql, key, name, row)
            if func == "count" and row[f"{name}_low"] == row[f"{name}_high"] and name in row:
                assert row[name] == value


SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(releases(), queries(), st.integers(0, 3))
def test_intervals_contain_the_truth(release: Any, query: Any, seed: int) -> None:
    rows, groups = release
    sql, aggs = query
    con, info = build(rows, groups, seed)
    catalog = catalog_of(info)
    out = answer(con, sql, catalog)
    truth = fetch(con, on_source(sql, info))
    check_sound(out, truth, sql, {n: AGGS[n][0] for n in aggs})


# --- tightness: enumerate every source consistent with the release --------------------------


def _assignments(rows: list[dict[str, Any]], groups: list[int]) -> list[list[int]]:
    """Every S vector obtained by permuting values within groups."""
    by_group: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(g, []).append(i)
    per_group = [
        [(idx, perm) for perm in set(itertools.permutations([rows[i]["s"] for i in idx]))]
        for idx in by_group.values()
    ]
    result = []
    for combo in itertools.product(*per_group):
        s = [0] * len(rows)
        for idx, perm in combo:
            for i, v in zip(idx, perm, strict=True):
                s[i] = v
        result.append(s)
    return result


def _all_answers(
    con: Any,
    rows: list[dict[str, Any]],
    groups: list[int],
    sql: str,
    ghosts: list[bool] | None = None,
) -> tuple[int, list[dict[str, Any]]]:
    """The query answered on every consistent source, tagged with the source's id.

    With ``ghosts``, values are permuted over every slot of a group (ghosts included)
    and the query runs on the real rows only."""
    assignments = _assignments(rows, groups)
    dead = ghosts or [False] * len(rows)
    con.execute(
        "CREATE TABLE worlds (aid INTEGER, a INTEGER, b VARCHAR, group_id INTEGER, s INTEGER)"
    )
    tuples = [
        (aid, r["a"], r["b"], g, s[i])
        for aid, s in enumerate(assignments)
        for i, (r, g) in enumerate(zip(rows, groups, strict=True))
        if not dead[i]
    ]
    insert_rows(con, "worlds", tuples)
    tree = sqlglot.parse_one(sql, read="duckdb")
    tree = tree.transform(lambda n: exp.table_("worlds") if isinstance(n, exp.Table) else n)
    tree = tree.select("aid").group_by("aid")
    return len(assignments), fetch(con, tree.sql("duckdb"))


def check_tight(
    out: list[dict[str, Any]], worlds: int, answers: list[dict[str, Any]], sql: str, aggs: list[str]
) -> None:
    groups = group_names(sql)
    per_key: dict[tuple[Any, ...], dict[int, dict[str, Any]]] = {}
    for r in answers:
        per_key.setdefault(_key(r, groups), {})[r["aid"]] = r
    out_by = {_key(r, groups): r for r in out}
    assert set(per_key) <= set(out_by)
    for key, row in out_by.items():
        seen = per_key.get(key, {})
        for name in aggs:
            func = AGGS[name][0]
            raw = [seen[aid][name] if aid in seen else None for aid in range(worlds)]
            if func == "count" or (func == "sum" and any(v is not None for v in raw)):
                raw = [v or 0 for v in raw]
            values = [v for v in raw if v is not None]
            low, high = row[f"{name}_low"], row[f"{name}_high"]
            if not values:
                assert low is None and high is None, (sql, key, name, row)
                continue
            assert math.isclose(low, min(values), abs_tol=1e-9), (sql, key, name, low, min(values))
            assert math.isclose(high, max(values), abs_tol=1e-9), (
                sql,
                key,
                name,
                high,
                max(values),
            )
    # every group some world can produce is in the output, and no other
    assert set(out_by) == set(per_key) or not groups, (sql, out_by.keys(), per_key.keys())


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(releases(max_size=6), queries())
def test_intervals_are_tight(release: Any, query: Any) -> None:
    rows, groups = release
    sql, aggs = query
    con, info = build(rows, groups)
    out = answer(con, sql, catalog_of(info))
    worlds, answers = _all_answers(con, rows, groups, sql)
    check_tight(out, worlds, answers, sql, aggs)


# --- hand-made cases the properties may take long to hit ------------------------------------


@pytest.mark.parametrize(
    ("values", "pred", "expected"),
    [
        # m=2 of n=4, all values negative or positive mixed: SUM low takes every negative.
        ([-5, -4, 3, 7], "", (-9, 10)),
        ([-5, -4, 3, 7], "s < 5", (-9, 3)),
        ([-5, -4, 3, 7], "s > -5", (-4, 10)),
    ],
)
def test_sum_bounds_with_negative_values(
    values: list[int], pred: str, expected: tuple[int, int]
) -> None:
    rows = [{"a": i, "b": "x", "s": v} for i, v in enumerate(values)]
    con, info = build(rows, [0] * len(rows))
    where = "a < 2" + (f" AND {pred}" if pred else "")
    out = answer(con, f"SELECT SUM(s) AS sm FROM fam WHERE {where}", catalog_of(info))  # noqa: S608
    assert (out[0]["sm_low"], out[0]["sm_high"]) == expected


def test_empty_selection_without_group_by() -> None:
    con, info = build([{"a": 1, "b": "x", "s": 3}, {"a": 2, "b": "y", "s": 4}], [0, 0])
    out = answer(
        con,
        "SELECT COUNT(*) AS c, SUM(s), AVG(s), MIN(s), MAX(s) FROM fam WHERE a > 10",
        catalog_of(info),
    )
    assert out == [
        {
            "c": 0,
            "c_low": 0,
            "c_high": 0,
            "c_est": 0,
            **{
                f"{f}_s_{side}": None
                for f in ("sum", "avg", "min", "max")
                for side in ("low", "high", "est")
            },
        }
    ]


def test_exact_count_has_bare_value_and_uncertain_count_has_not() -> None:
    con, info = build([{"a": i, "b": "x", "s": i} for i in range(6)], [0, 0, 0, 1, 1, 1])
    exact = answer(con, "SELECT COUNT(*) FROM fam WHERE a >= 2", catalog_of(info))
    assert exact == [
        {"count_star": 4, "count_star_low": 4, "count_star_high": 4, "count_star_est": 4}
    ]
    uncertain = answer(con, "SELECT COUNT(*) FROM fam WHERE a >= 2 AND s > 2", catalog_of(info))
    assert set(uncertain[0]) == {"count_star_low", "count_star_high", "count_star_est"}


def test_family_view_and_versioned_name_give_the_same_sql() -> None:
    con, info = build([{"a": i, "b": "x", "s": i} for i in range(4)], [0, 0, 1, 1])
    from sqlanon.rewriter import rewrite

    catalog = catalog_of(info)
    assert rewrite("SELECT SUM(s) FROM fam", catalog) == rewrite(
        "SELECT SUM(s) FROM fam_v1", catalog
    )
    assert '"fam_v1"' in rewrite("SELECT SUM(s) FROM fam", catalog)


def _closed_form(values: list[int], m: int, satisfies: Any) -> dict[str, Any]:
    """The derivation's bounds for one cell of m of a group's records, spelled out."""
    sat = sorted(v for v in values if satisfies(v))
    lo, hi = max(0, m + len(sat) - len(values)), min(m, len(sat))
    optional = sat[lo:hi]
    return {
        "c_low": lo,
        "c_high": hi,
        "sm_low": sum(sat[:lo]) + sum(v for v in optional if v < 0),
        "sm_high": sum(sat[len(sat) - lo :])
        + sum(v for v in sat[len(sat) - hi : len(sat) - lo] if v > 0),
        "mn_low": sat[0] if hi else None,
        "mx_high": sat[-1] if hi else None,
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(-3, 6), min_size=70, max_size=300),
    st.integers(0, 2**32 - 1),
    st.integers(-2, 5),
)
def test_condition_on_s_over_runs_spanning_blocks(values: list[int], seed: int, cut: int) -> None:
    """Groups of hundreds of records with few distinct values: the bounds table's runs
    span several blocks of ranks, and a condition on S is answered from those runs."""
    rng = np.random.default_rng(seed)
    chosen = rng.random(len(values)) < 0.6
    rows = [{"a": int(c), "b": "x", "s": v} for c, v in zip(chosen, values, strict=True)]
    con, info = build(rows, [0] * len(rows))
    out = answer(
        con,
        f"SELECT COUNT(*) AS c, SUM(s) AS sm, MIN(s) AS mn, MAX(s) AS mx FROM fam "  # noqa: S608
        f"WHERE a = 1 AND s > {cut}",
        catalog_of(info),
    )
    expected = _closed_form(values, int(chosen.sum()), lambda v: v > cut)
    if expected["c_high"] == 0:
        assert out[0]["sm_low"] is None and out[0]["c_high"] == 0
        return
    assert {name: out[0][name] for name in expected} == expected


QUANTILE_QUERIES = [
    "SELECT b, MEDIAN(s) AS m FROM fam WHERE a < 2 GROUP BY b",
    "SELECT quantile_disc(s, 0.7) AS m FROM fam",
    "SELECT b, quantile_cont(s, 0.3) AS m FROM fam GROUP BY b",
    "SELECT a, percentile_disc(0.5) WITHIN GROUP (ORDER BY s) AS m FROM fam GROUP BY a",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(releases(max_size=6), st.sampled_from(QUANTILE_QUERIES))
def test_quantiles_without_a_condition_on_s_are_exact(release: Any, query: str) -> None:
    """Quantiles of S from the bounds table's runs: low and high are the least and the
    greatest answer over every assignment of each group's values to its records."""
    rows, groups = release
    con, info = build(rows, groups)
    sql = rewrite(query, catalog_of(info))
    assert "sqlanon_qpool" in sql  # the bounds-table path, not the general builder
    out = {tuple(r[:-3]): r[-3:] for r in con.execute(sql).fetchall()}
    members = {g: [i for i, h in enumerate(groups) if h == g] for g in sorted(set(groups))}
    seen: dict[tuple[Any, ...], list[float]] = {}
    choices = [set(itertools.permutations([rows[i]["s"] for i in m])) for m in members.values()]
    con.execute("CREATE OR REPLACE TEMP TABLE world (a INTEGER, b VARCHAR, s INTEGER)")
    for perms in itertools.product(*choices):
        held = {
            i: v
            for m, p in zip(members.values(), perms, strict=True)
            for i, v in zip(m, p, strict=True)
        }
        con.execute("DELETE FROM world")
        con.executemany(
            "INSERT INTO world VALUES (?, ?, ?)",
            [(r["a"], r["b"], held[i]) for i, r in enumerate(rows)],
        )
        for row in con.execute(query.replace("FROM fam", "FROM world")).fetchall():
            seen.setdefault(tuple(row[:-1]), []).append(float(row[-1]))
    assert set(seen) == set(out)
    for key, values in seen.items():
        low, high, est = out[key]
        assert low == pytest.approx(min(values)) and high == pytest.approx(max(values))
        assert low - EPS <= est <= high + EPS
