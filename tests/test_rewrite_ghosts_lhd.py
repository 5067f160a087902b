"""Interval answers over lHD releases with ghosts, on real DuckDB (and PostgreSQL).

A ghost row carries its class's labels and its own sensitive values; the release shows
only ``class_ghosts`` per class (MODELS.md, "Changing tables"). Tiny random releases are
answered and compared with every world consistent with what is published: every choice
of which g rows of each class are the ghosts, times every raw value under each real
row's labels. The truth is over real rows only. Each interval must equal [least, greatest]
answer over those worlds (so it contains the truth, and is tight), the estimate must lie
in it, and the output must have a row for exactly the groups some world produces.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.rewriter import ReleaseInfo, rewrite
from tests.test_rewrite_lhd import TINY_DOMAINS
from tests.test_rewrite_support import fetch

FUNCS = ("count", "sum", "avg", "min", "max")
A_LABELS = sorted(TINY_DOMAINS["a"].leaves)
C_LABELS = sorted(TINY_DOMAINS["c"].leaves)

Row = tuple[str, str, int, int, int]  # a label, c label, s, class_id, class_ghosts
Pred = Callable[[int, str, int], bool]

# One component per quasi column (as the tightness argument needs), each with its twin.
PREDICATES: list[tuple[str | None, Pred]] = [
    (None, lambda a, c, s: True),
    ("a >= 2", lambda a, c, s: a >= 2),
    ("a IN (1, 4)", lambda a, c, s: a in (1, 4)),
    ("c = 'r'", lambda a, c, s: c == "r"),
    ("s > 1", lambda a, c, s: s > 1),
    ("s BETWEEN -1 AND 3", lambda a, c, s: -1 <= s <= 3),
    ("a > 2 AND s < 4", lambda a, c, s: a > 2 and s < 4),
    ("a = 1 OR s > 2", lambda a, c, s: a == 1 or s > 2),
    ("NOT (a < 3 AND c IN ('r', 'b'))", lambda a, c, s: not (a < 3 and c in ("r", "b"))),
    ("c <> 'g' AND NOT s = 0", lambda a, c, s: c != "g" and s != 0),
]
GROUPS: list[str | None] = [None, "a", "c", "s"]


@st.composite
def ghost_releases(draw: Any, max_rows: int = 6) -> list[Row]:
    """Classes sharing their labels (as releases publish them), or now and then rows of
    one class with different labels (the rewriter must not rely on it)."""
    rows: list[Row] = []
    for cid in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, max(1, min(4, max_rows - len(rows)))))
        ghosts = draw(st.integers(0, size))
        shared = draw(st.sampled_from(A_LABELS)), draw(st.sampled_from(C_LABELS))
        mixed = draw(st.integers(0, 5)) == 0
        for _ in range(size):
            a, c = (
                (draw(st.sampled_from(A_LABELS)), draw(st.sampled_from(C_LABELS)))
                if mixed
                else shared
            )
            rows.append((a, c, draw(st.integers(-3, 6)), cid, ghosts))
        if len(rows) >= max_rows:
            break
    return rows


def _query(where: str | None, group: str | None) -> str:
    select = ", ".join(f"{f}({'*' if f == 'count' else 's'}) AS {f}_x" for f in FUNCS)
    sql = f"SELECT {group + ', ' if group else ''}{select} FROM tiny"  # noqa: S608 - test text
    if where:
        sql += f" WHERE {where}"
    if group:
        sql += f" GROUP BY {group}"
    return sql


def _info(rows: list[Row]) -> ReleaseInfo:
    ghosts = sum({cid: g for *_, cid, g in rows}.values())
    return ReleaseInfo(
        "tiny", 1, "tiny_v1", "lhd", ("a", "c"), ("s",), domains=TINY_DOMAINS, ghosts=ghosts
    )


def _key(row: Row, group: str | None) -> Any:
    a, c, s, _, _ = row
    return {None: None, "a": a, "c": c, "s": s}[group]


def world_answers(rows: list[Row], pred: Pred, group: str | None) -> dict[Any, list[dict]]:
    """Per output key, the answer in every consistent world (None: no row that world)."""
    truths = []
    for a_label, c_label, s, _, _ in rows:
        a_vals = [int(v) for v in TINY_DOMAINS["a"].leaves[a_label]]
        c_vals = TINY_DOMAINS["c"].leaves[c_label]
        truths.append(sorted({pred(a, c, s) for a in a_vals for c in c_vals}))
    classes: dict[int, list[int]] = {}
    for i, (*_, cid, _) in enumerate(rows):
        classes.setdefault(cid, []).append(i)
    ghost_choices = [
        list(itertools.combinations(members, rows[members[0]][4])) for members in classes.values()
    ]
    keys = {_key(r, group) for r in rows} if group else {None}
    answers: dict[Any, list[dict]] = {k: [] for k in keys}
    for ghost_sets in itertools.product(*ghost_choices):
        dead = {i for chosen in ghost_sets for i in chosen}
        for choice in itertools.product(*truths):
            chosen: dict[Any, list[int]] = {}
            for i, row in enumerate(rows):
                if i not in dead and choice[i]:
                    chosen.setdefault(_key(row, group), []).append(row[2])
            for k in keys:
                vals = chosen.get(k)
                if group and not vals:
                    answers[k].append({})
                    continue
                answers[k].append(
                    {
                        "count": len(vals or []),
                        "sum": sum(vals) if vals else None,
                        "avg": sum(vals) / len(vals) if vals else None,
                        "min": min(vals) if vals else None,
                        "max": max(vals) if vals else None,
                    }
                )
    return answers


def check(
    out: list[dict], rows: list[Row], where: str | None, pred: Pred, group: str | None
) -> None:
    answers = world_answers(rows, pred, group)
    produced = {k for k, worlds in answers.items() if any(worlds_row for worlds_row in worlds)}
    out_by = {(r[group] if group else None): r for r in out}
    context = (where, group, rows)
    assert len(out_by) == len(out), context
    if group:
        assert set(out_by) == produced, (context, out_by.keys(), produced)
    for key, row in out_by.items():
        worlds = answers[key]
        for f in FUNCS:
            raw = [w.get(f) for w in worlds]
            if f in ("count", "sum"):
                values = [v or 0 for v in raw]
            else:
                values = [v for v in raw if v is not None]
            low, high, est = row[f"{f}_x_low"], row[f"{f}_x_high"], row[f"{f}_x_est"]
            if not values or (f == "sum" and all(v is None for v in raw)):
                assert low is None and high is None, (context, key, f, row)
                continue
            assert math.isclose(low, min(values), abs_tol=1e-9), (context, key, f, row, values)
            assert math.isclose(high, max(values), abs_tol=1e-9), (context, key, f, row, values)
            assert low - 1e-9 <= est <= high + 1e-9, (context, key, f, row)
        if "count_x" in row and row["count_x"] is not None:
            assert row["count_x"] == row["count_x_low"] == row["count_x_high"], (context, row)


_CON: list[duckdb.DuckDBPyConnection] = []


def load(con: Any, rows: list[Row]) -> None:
    con.execute("DROP TABLE IF EXISTS tiny_v1")
    con.execute(
        "CREATE TABLE tiny_v1 (a VARCHAR, c VARCHAR, s INTEGER, class_id INTEGER, "
        "class_ghosts INTEGER)"
    )
    if hasattr(con, "executemany"):
        con.executemany("INSERT INTO tiny_v1 VALUES (?, ?, ?, ?, ?)", rows)
    else:  # psycopg connection
        with con.cursor() as cur:
            cur.executemany("INSERT INTO tiny_v1 VALUES (%s, %s, %s, %s, %s)", rows)


def duck() -> duckdb.DuckDBPyConnection:
    if not _CON:
        _CON.append(duckdb.connect())
    return _CON[0]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(ghost_releases(), st.sampled_from(PREDICATES), st.sampled_from(GROUPS))
def test_intervals_are_tight_over_every_ghost_placement(
    rows: list[Row], predicate: tuple[str | None, Pred], group: str | None
) -> None:
    where, pred = predicate
    con = duck()
    load(con, rows)
    out = fetch(con, rewrite(_query(where, group), {"tiny": _info(rows)}))
    check(out, rows, where, pred, group)


def test_counts_of_a_class_with_ghosts() -> None:
    # One class of 5 rows {1, 2, 3, 4, 10} (labels '*'), 2 of them ghosts.
    rows: list[Row] = [("*", "*", v, 0, 2) for v in (1, 2, 3, 4, 10)]
    con = duck()
    load(con, rows)
    catalog = {"tiny": _info(rows)}
    out = fetch(con, rewrite("SELECT COUNT(*) AS n, SUM(s) AS t, MIN(s) AS lo FROM tiny", catalog))
    # 3 real rows, any 3 of the 5 values.
    assert (out[0]["n"], out[0]["n_low"], out[0]["n_high"]) == (3, 3, 3)
    assert (out[0]["t_low"], out[0]["t_high"]) == (6, 17)
    assert out[0]["t_est"] == pytest.approx(20 * 3 / 5)
    assert (out[0]["lo_low"], out[0]["lo_high"]) == (1, 3)
    out = fetch(con, rewrite("SELECT COUNT(*) AS n FROM tiny WHERE s > 2", catalog))
    # c = 3 rows match; 3 real rows: between max(0, 3 - 2) and min(3, 3).
    assert (out[0]["n_low"], out[0]["n_high"]) == (1, 3)


# --- PostgreSQL ----------------------------------------------------------------------------


@pytest.mark.postgres
def test_postgres_matches_every_world(pg_conn: Any) -> None:
    from tests.test_rewrite_postgres import _pg_fetch

    rng = random.Random(11)
    for _ in range(6):
        rows: list[Row] = []
        for cid in range(rng.randint(1, 3)):
            size, labels = rng.randint(1, 3), (rng.choice(A_LABELS), rng.choice(C_LABELS))
            ghosts = rng.randint(0, size)
            rows += [(*labels, rng.randint(-3, 6), cid, ghosts) for _ in range(size)]
        load(pg_conn, rows)
        for where, pred in PREDICATES:
            for group in GROUPS:
                sql = rewrite(_query(where, group), {"tiny": _info(rows)}, "postgres")
                out = _pg_fetch(pg_conn, sql)
                check(out, rows, where, pred, group)


def test_several_sensitive_columns_are_answered_each_on_its_own() -> None:
    """Two sensitive columns, AVG and the rest of both in one query (each its own pools):
    every interval equals the one of the query asking for that aggregate alone."""
    rng = random.Random(3)
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE two_v1 (a VARCHAR, c VARCHAR, s INTEGER, u DOUBLE, class_id INTEGER, "
        "class_ghosts INTEGER)"
    )
    rows = []
    for cid in range(6):
        labels, size = (rng.choice(A_LABELS), rng.choice(C_LABELS)), rng.randint(2, 5)
        ghosts = rng.randint(0, size)
        rows += [
            (*labels, rng.randint(-3, 6), rng.uniform(-2, 9), cid, ghosts) for _ in range(size)
        ]
    con.executemany("INSERT INTO two_v1 VALUES (?, ?, ?, ?, ?, ?)", rows)
    ghosts = sum({r[4]: r[5] for r in rows}.values())
    info = ReleaseInfo(
        "two", 1, "two_v1", "lhd", ("a", "c"), ("s", "u"), domains=TINY_DOMAINS, ghosts=ghosts
    )
    catalog = {"two": info}
    items = [f"{f}({x}) AS {f}_{x}" for x in ("s", "u") for f in ("sum", "avg", "min", "max")]
    for where, group in [("a >= 2", "c"), ("u > 1", None), ("s < 4 OR a = 1", "s")]:
        head = f"{group}, " if group else ""
        tail = f" WHERE {where}" + (f" GROUP BY {group}" if group else "")
        both = fetch(con, rewrite(f"SELECT {head}{', '.join(items)} FROM two{tail}", catalog))
        key = (lambda r, g=group: r[g]) if group else (lambda r: None)
        both_by = {key(r): r for r in both}
        for item in items:
            alone = fetch(con, rewrite(f"SELECT {head}{item} FROM two{tail}", catalog))
            name = item.rsplit(" AS ", 1)[1]
            for row in alone:
                for side in ("low", "high", "est"):
                    got, want = both_by[key(row)][f"{name}_{side}"], row[f"{name}_{side}"]
                    assert got == pytest.approx(want), (where, group, name, side)
