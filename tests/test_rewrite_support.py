"""Test support for the rewriter: build (k,e) releases in DuckDB the way release_ke does.

Layout (docs/ARCHITECTURE.md): ``<F>_v1`` holds the quasi columns, ``group_id`` and the
sensitive column permuted within each group; the view ``<F>`` selects from it;
``sqlanon."<F>_v1_bounds"`` (runs of sorted values by block of ranks, see
sqlanon/models/ke_bounds.py). The private
source ``<F>_source`` keeps the true values (and, for the tests' convenience, each
record's group_id) so the true answer of any query can be computed on it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import sqlglot
from sqlglot import exp

from sqlanon.rewriter import ReleaseInfo, rewrite

Row = dict[str, Any]


def _ident(name: str) -> str:
    assert re.fullmatch(r"[a-z_][a-z0-9_]*", name), name
    return name


def make_release(
    con: duckdb.DuckDBPyConnection,
    family: str,
    quasi: dict[str, str],
    sensitive: tuple[str, str],
    rows: Sequence[Row],
    groups: Sequence[int],
    seed: int = 0,
    ghosts: Sequence[bool] | None = None,
) -> ReleaseInfo:
    """Write source, release v1, view and bounds table; return the release's info.

    ``quasi`` maps column -> SQL type, ``sensitive`` is (column, SQL type); ``groups``
    gives each row's group id. S is shuffled within each group with ``seed``.

    ``ghosts`` (one flag per row) makes the flagged rows ghosts (deleted records,
    MODELS.md "Changing tables"): they stay in the source's group multisets and in the
    shuffle, the release shows them with NULL quasi columns and ``ghost`` true, the
    bounds table counts them, and the private source (the truth) lacks them.
    """
    s_name, s_type = sensitive
    table = f"{family}_v1"
    rng = np.random.default_rng(seed)
    group_arr = np.asarray(groups, dtype=np.int64)
    values = [r[s_name] for r in rows]
    shuffled = list(values)
    for g in np.unique(group_arr):
        idx = np.flatnonzero(group_arr == g)
        perm = rng.permutation(idx)
        for i, j in zip(idx, perm, strict=True):
            shuffled[i] = values[j]

    con.execute("CREATE SCHEMA IF NOT EXISTS sqlanon")
    src_cols = ", ".join(
        ["key INTEGER"]
        + [f"{_ident(c)} {t}" for c, t in quasi.items()]
        + ["group_id INTEGER", f"{_ident(s_name)} {s_type}"]
    )
    con.execute(f"CREATE TABLE {_ident(family)}_source ({src_cols})")
    rel_cols = ", ".join(
        [f"{_ident(c)} {t}" for c, t in quasi.items()]
        + ["group_id INTEGER", f"{_ident(s_name)} {s_type}"]
    )
    if ghosts is not None:
        rel_cols += ", ghost BOOLEAN"
    con.execute(f"CREATE TABLE {_ident(table)} ({rel_cols})")
    dead = list(ghosts) if ghosts is not None else [False] * len(rows)
    src_rows = [
        (i, *[r[c] for c in quasi], int(g), r[s_name])
        for i, (r, g) in enumerate(zip(rows, group_arr, strict=True))
        if not dead[i]
    ]
    rel_rows = [
        (*[None if d else r[c] for c in quasi], int(g), v, *([d] if ghosts is not None else []))
        for r, g, v, d in zip(rows, group_arr, shuffled, dead, strict=True)
    ]
    order = rng.permutation(len(rel_rows))
    insert_rows(con, f"{_ident(family)}_source", src_rows)
    insert_rows(con, _ident(table), [rel_rows[i] for i in order])
    con.execute(f"CREATE VIEW {_ident(family)} AS SELECT * FROM {_ident(table)}")  # noqa: S608
    con.execute(
        f"CREATE TABLE sqlanon.{_ident(table)}_bounds (group_id INTEGER, descending BOOLEAN, "
        f"block INTEGER, lo_rank INTEGER, hi_rank INTEGER, value {s_type}, prior_sum {s_type}, "
        f"n INTEGER, total {s_type}, vmin {s_type}, vmax {s_type})"
    )
    bounds = []
    for g in np.unique(group_arr):
        bounds += bounds_rows(int(g), [values[i] for i in np.flatnonzero(group_arr == g)])
    insert_rows(con, f"sqlanon.{_ident(table)}_bounds", bounds)
    return ReleaseInfo(
        family=family,
        version=1,
        table=table,
        model="ke",
        quasi=tuple(quasi),
        sensitive=(s_name,),
        bounds_table=f"{table}_bounds",
        ghosts=sum(dead),
    )


def insert_rows(
    con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[tuple[Any, ...]]
) -> None:
    """Append ``rows`` to ``table`` (in order) with one statement: each column goes in as
    one list parameter, unnested side by side (executemany costs ~0.5 ms a row, and a
    literal VALUES list built with sqlglot more than the query it feeds)."""
    if not rows:
        return
    columns = [list(column) for column in zip(*rows, strict=True)]
    unnest = ", ".join(f"unnest(${i})" for i in range(1, len(columns) + 1))
    con.execute(f"INSERT INTO {table} SELECT {unnest}", columns)  # noqa: S608


def bounds_rows(group_id: int, values: Sequence[Any]) -> list[tuple[Any, ...]]:
    """One group's rows of the bounds table, spelled out rank by rank (the reference for
    sqlanon/models/ke_bounds.py): ranked ascending, then descending, one row per run of
    equal values and per block of 64 ranks it overlaps."""
    ordered = sorted(values)
    n, total = len(ordered), sum(ordered)
    rows: list[tuple[Any, ...]] = []
    for descending, ranked in ((False, ordered), (True, ordered[::-1])):
        for rank, value in enumerate(ranked, start=1):
            lo = ranked.index(value) + 1
            hi = lo + ranked.count(value) - 1
            row = (group_id, descending, (rank - 1) // 64, lo, hi, value, sum(ranked[: lo - 1]))
            if not rows or rows[-1][:5] != row[:5]:
                rows.append((*row, n, total, ordered[0], ordered[-1]))
    return rows


def catalog_of(*infos: ReleaseInfo) -> dict[str, ReleaseInfo]:
    catalog: dict[str, ReleaseInfo] = {}
    for info in infos:
        catalog[info.table] = info
        catalog[info.family] = info
    return catalog


def on_source(sql: str, info: ReleaseInfo) -> str:
    """The analyst's query pointed at the private source (for the true answer).

    Unaliased aggregates get the rewriter's names (``count_star``, ``sum_loss``...).
    """
    tree = sqlglot.parse_one(sql, read="duckdb")

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and node.name.lower() in (info.family, info.table):
            return exp.table_(f"{info.family}_source", alias=node.alias or None)
        return node

    tree = tree.transform(swap)
    assert isinstance(tree, exp.Select)
    named = []
    for item in tree.expressions:
        if isinstance(item, exp.AggFunc):
            arg = item.this
            column = "star" if isinstance(arg, exp.Star) else arg.name
            item = exp.alias_(item, f"{item.key}_{column}")
        named.append(item)
    return tree.select(*named, append=False).sql("duckdb")


def fetch(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def answer(
    con: duckdb.DuckDBPyConnection, sql: str, catalog: dict[str, ReleaseInfo]
) -> list[dict[str, Any]]:
    return fetch(con, rewrite(sql, catalog, "duckdb"))


def test_bounds_table_layout() -> None:
    con = duckdb.connect()
    data = [(0, 5), (0, -3), (0, 7), (0, 5), *[(1, 2)] * 70, (1, 9)]
    info = make_release(
        con,
        "t_ke",
        {"age": "INTEGER"},
        ("loss", "INTEGER"),
        [{"age": a, "loss": v} for a, (_, v) in enumerate(data)],
        [g for g, _ in data],
    )
    rows = con.execute(
        'SELECT * FROM sqlanon."t_ke_v1_bounds" ORDER BY descending, group_id, block, lo_rank'
    ).fetchall()
    n0, n1 = (4, 14, -3, 7), (71, 149, 2, 9)  # n, total, vmin, vmax of each group
    assert rows == [
        # group, descending, block, lo_rank, hi_rank, value, prior_sum, ...
        (0, False, 0, 1, 1, -3, 0, *n0),
        (0, False, 0, 2, 3, 5, -3, *n0),
        (0, False, 0, 4, 4, 7, 7, *n0),
        (1, False, 0, 1, 70, 2, 0, *n1),  # the run of 70 twos spans blocks 0 and 1
        (1, False, 1, 1, 70, 2, 0, *n1),
        (1, False, 1, 71, 71, 9, 140, *n1),
        (0, True, 0, 1, 1, 7, 0, *n0),
        (0, True, 0, 2, 3, 5, 7, *n0),
        (0, True, 0, 4, 4, -3, 17, *n0),
        (1, True, 0, 1, 1, 9, 0, *n1),
        (1, True, 0, 2, 71, 2, 9, *n1),  # ranks 2..71 from the top: blocks 0 and 1
        (1, True, 1, 2, 71, 2, 9, *n1),
    ]
    assert info.bounds_table == "t_ke_v1_bounds"
    source = sorted(con.execute("SELECT group_id, loss FROM t_ke_source").fetchall())
    release = sorted(con.execute("SELECT group_id, loss FROM t_ke_v1").fetchall())
    assert source == release
