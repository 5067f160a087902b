"""Test support for the rewriter: build (k,e) releases in DuckDB the way release_ke does.

Layout (docs/ARCHITECTURE.md): ``<F>_v1`` holds the quasi columns, ``group_id`` and the
sensitive column permuted within each group; the view ``<F>`` selects from it;
``sqlanon."<F>_v1_bounds"(group_id, rank, value, low_sum, high_sum)``. The private
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

from sqlanon.rewrite import ReleaseInfo, rewrite

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
) -> ReleaseInfo:
    """Write source, release v1, view and bounds table; return the release's info.

    ``quasi`` maps column -> SQL type, ``sensitive`` is (column, SQL type); ``groups``
    gives each row's group id. S is shuffled within each group with ``seed``.
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
    con.execute(f"CREATE TABLE {_ident(table)} ({rel_cols})")
    n_q = len(quasi)
    src_rows = [
        (i, *[r[c] for c in quasi], int(g), r[s_name])
        for i, (r, g) in enumerate(zip(rows, group_arr, strict=True))
    ]
    rel_rows = [
        (*[r[c] for c in quasi], int(g), v)
        for r, g, v in zip(rows, group_arr, shuffled, strict=True)
    ]
    order = rng.permutation(len(rel_rows))
    if src_rows:
        con.executemany(
            f"INSERT INTO {_ident(family)}_source VALUES ({', '.join(['?'] * (n_q + 3))})",  # noqa: S608
            src_rows,
        )
        con.executemany(
            f"INSERT INTO {_ident(table)} VALUES ({', '.join(['?'] * (n_q + 2))})",  # noqa: S608
            [rel_rows[i] for i in order],
        )
    con.execute(f"CREATE VIEW {_ident(family)} AS SELECT * FROM {_ident(table)}")  # noqa: S608
    con.execute(
        f"CREATE TABLE sqlanon.{_ident(table)}_bounds (group_id INTEGER, rank INTEGER, "
        f"value {s_type}, low_sum {s_type}, high_sum {s_type})"
    )
    bounds = []
    for g in np.unique(group_arr):
        ordered = sorted(values[i] for i in np.flatnonzero(group_arr == g))
        for rank in range(1, len(ordered) + 1):
            low, high = sum(ordered[:rank]), sum(ordered[len(ordered) - rank :])
            bounds.append((int(g), rank, ordered[rank - 1], low, high))
    if bounds:
        con.executemany(
            f"INSERT INTO sqlanon.{_ident(table)}_bounds VALUES (?, ?, ?, ?, ?)",  # noqa: S608
            bounds,
        )
    return ReleaseInfo(
        family=family,
        version=1,
        table=table,
        model="ke",
        quasi=tuple(quasi),
        sensitive=(s_name,),
        bounds_table=f"{table}_bounds",
    )


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
    info = make_release(
        con,
        "t_ke",
        {"age": "INTEGER"},
        ("loss", "INTEGER"),
        [{"age": a, "loss": v} for a, v in [(1, 5), (2, -3), (3, 7), (4, 10), (5, 1)]],
        [0, 0, 0, 1, 1],
    )
    rows = con.execute(
        'SELECT group_id, rank, value, low_sum, high_sum FROM sqlanon."t_ke_v1_bounds" '
        "ORDER BY group_id, rank"
    ).fetchall()
    assert rows == [
        (0, 1, -3, -3, 7),
        (0, 2, 5, 2, 12),
        (0, 3, 7, 9, 9),
        (1, 1, 1, 1, 10),
        (1, 2, 10, 11, 11),
    ]
    assert info.bounds_table == "t_ke_v1_bounds"
    source = sorted(con.execute("SELECT group_id, loss FROM t_ke_source").fetchall())
    release = sorted(con.execute("SELECT group_id, loss FROM t_ke_v1").fetchall())
    assert source == release
