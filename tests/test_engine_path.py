"""The engine path of (k,e) releases (sqlanon/release/ke_engine.py) against the row path.

Both paths release the same random append sequences on real DuckDB databases; the row
path is forced by turning the engine path off. Every version must agree on what the
data owner and the analysts can see of the plan: the summary's counts and errors, each
record's status (published, held back, suppressed), and, when no two records share a
value (the plan is then unique up to numbering), each record's group and every group's
multiset. With ties the groups may split equal values differently at the same cost.
Deletions and changed values between releases (ghosts and chains) take the engine
path too and must agree the same way. The within-group shuffle, a keyed order of the keys
under a per-release secret, is checked for uniformity on a small group of consecutive
keys, as the row path's is (tests/test_ke_model.py), and the release stops rather than
pair a record with another group's value.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon import sqltext
from sqlanon.errors import InfeasibleError
from sqlanon.release import ke_engine as release_engine

COLUMNS = "id INTEGER, age INTEGER, sex VARCHAR, salary INTEGER"


@contextmanager
def row_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with monkeypatch.context() as m:
        m.setattr(release_engine, "release_ke", lambda *a, **kw: None)
        yield


def state(con: duckdb.DuckDBPyConnection, version: int) -> dict[str, Any]:
    """Members by key (ghosts, whose ids are random, as counts per status), and each
    group's values and ages."""
    members = con.execute(
        "SELECT CASE WHEN ghost THEN 'ghost' ELSE record_key END AS who, status, "
        "CASE WHEN ghost THEN count(*) ELSE min(group_id) END "
        "FROM sqlanon.members WHERE family = 'fam' AND version = ? "
        "GROUP BY who, status, ghost, CASE WHEN ghost THEN '' ELSE record_key END "
        "ORDER BY who, status",
        [version],
    ).fetchall()
    groups = con.execute(
        f"SELECT group_id, list(salary ORDER BY salary), list(age ORDER BY age) "  # noqa: S608
        f"FROM fam_v{version} GROUP BY group_id ORDER BY group_id"
    ).fetchall()
    return {"members": members, "groups": groups}


def release(con: duckdb.DuckDBPyConnection, k: int, e: float, policy: str) -> dict[str, Any]:
    return sqlanon.release_ke(
        con, "people", "fam", key="id", sensitive="salary", quasi=["age", "sex"], k=k, e=e,
        policy=policy, )  # fmt: skip


sequences = st.tuples(
    st.lists(
        st.lists(st.tuples(st.integers(20, 70), st.sampled_from("FM"), st.integers(0, 60)),
                 min_size=1, max_size=30),
        min_size=1,
        max_size=4,
    ),
    st.integers(2, 4),
    st.sampled_from([0.0, 30.0, 150.0]),
    st.sampled_from(["auto", "merge", "defer"]),
    st.booleans(),
    st.lists(st.tuples(st.integers(0, 200), st.integers(0, 2)), max_size=12),
)  # fmt: skip


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sequences)
def test_engine_and_row_paths_agree(monkeypatch: pytest.MonkeyPatch, sequence: Any) -> None:
    batches, k, e, policy, distinct, edits = sequence
    engine, rows = duckdb.connect(), duckdb.connect()
    for con in (engine, rows):
        sqlanon.install(con)
        con.execute(f"CREATE TABLE people ({COLUMNS})")
    next_id = 0
    for batch in batches:
        data = []
        for age, sex, salary in batch:
            # distinct: every salary unique (the plan is unique up to numbering)
            data.append((next_id, age, sex, next_id * 7 + 1 if distinct else salary * 10))
            next_id += 1
        for con in (engine, rows):
            con.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", data)
            # live tables: between releases some rows leave, some values change
            for victim, what in edits[: len(batch) // 3]:
                if what == 0:
                    con.execute("DELETE FROM people WHERE id = ?", [victim % next_id])
                elif what == 1:
                    con.execute(
                        "UPDATE people SET salary = salary + 70 WHERE id = ?", [victim % next_id]
                    )
        try:
            by_engine = release(engine, k, e, policy)
        except InfeasibleError:
            with row_path(monkeypatch), pytest.raises(InfeasibleError):
                release(rows, k, e, policy)
            continue
        with row_path(monkeypatch):
            by_rows = release(rows, k, e, policy)
        fields = ("version", "rows_published", "held_back", "suppressed", "inserted")
        fields += ("deleted", "value_changed", "quasi_changed", "ghosts", "chain_held")
        for field in fields:
            assert by_engine[field] == by_rows[field], field
        assert by_engine.get("unchanged") == by_rows.get("unchanged")
        for field in ("sum_of_errors", "static_optimum", "published_optimum"):
            a, b = by_engine[field], by_rows[field]
            assert (a is None) == (b is None) and (a is None or math.isclose(a, b)), field
        mine, theirs = state(engine, by_engine["version"]), state(rows, by_rows["version"])
        assert [m[:2] for m in mine["members"]] == [m[:2] for m in theirs["members"]]
        ghosts = [m for m in mine["members"] if m[0] == "ghost"]
        assert ghosts == [m for m in theirs["members"] if m[0] == "ghost"]
        if distinct and not edits:
            assert mine == theirs
        assert sqlanon.audit(engine, "fam")[-1]["exposed"] == 0


def test_engine_path_writes_every_piece() -> None:
    """A first version and an append on the engine path: the bounds table, the members,
    the kept values and the cells are those the row path writes."""
    results = []
    for engine in (True, False):
        con = duckdb.connect()
        sqlanon.install(con)
        con.execute(f"CREATE TABLE people ({COLUMNS})")
        rng = np.random.default_rng(5)
        rows = [(i, int(rng.integers(20, 70)), "FM"[i % 2], int(rng.integers(0, 50)) * 10)
                for i in range(200)]  # fmt: skip
        con.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", rows[:150])
        with pytest.MonkeyPatch.context() as m:
            if not engine:
                m.setattr(release_engine, "release_ke", lambda *a, **kw: None)
            release(con, 3, 20.0, "auto")
            con.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", rows[150:])
            release(con, 3, 20.0, "auto")
        results.append(
            [
                con.execute(sql).fetchall()
                for sql in (
                    "SELECT * FROM sqlanon.fam_v2_bounds ORDER BY ALL",
                    "SELECT family, version, status, count(*) FROM sqlanon.members "
                    "GROUP BY ALL ORDER BY ALL",
                    "SELECT attribute, count(*), sum(CAST(value AS INTEGER)) FROM "
                    "sqlanon.kept_values GROUP BY ALL ORDER BY ALL",
                    "SELECT version, attribute, min_distinct, min_spread, count(*) "
                    "FROM sqlanon.cells GROUP BY ALL ORDER BY ALL",
                )
            ]
        )
    engine_result, row_result = results
    assert engine_result[1:] == row_result[1:]
    # the bounds table depends only on each group's multiset: equal when the groups are
    assert len(engine_result[0]) > 0


def _small_release(con: duckdb.DuckDBPyConnection) -> str:
    """Two groups of three records (consecutive keys) with their values as the plan
    publishes them (``_sqlanon_runs``); the release statement over them."""
    con.execute(
        "CREATE TEMP TABLE _sqlanon_read AS SELECT * FROM (VALUES (1, 10.0, -1, 'a', 10), "
        "(2, 20.0, -1, 'b', 20), (3, 30.0, -1, 'c', 30), (4, 40.0, -1, 'd', 40), "
        "(5, 50.0, -1, 'e', 50), (6, 60.0, -1, 'f', 60)) AS t(record_value, s, domain_cell, "
        "c0, c1)"
    )
    con.execute(
        "CREATE TEMP TABLE _sqlanon_plan AS SELECT * FROM (VALUES (-1, 10.0, 0, 0), "
        "(-1, 20.0, 0, 0), (-1, 30.0, 0, 0), (-1, 40.0, 1, 1), (-1, 50.0, 1, 1), "
        "(-1, 60.0, 1, 1)) AS t(domain_cell, s, group_id, cell_id)"
    )
    con.execute(
        "CREATE TEMP TABLE _sqlanon_runs AS SELECT CAST(group_id AS INTEGER) AS group_id, "
        "CAST(s AS INTEGER) AS value, CAST(1 AS BIGINT) AS c FROM _sqlanon_plan"
    )
    return sqltext.render(
        sqltext.load("duckdb", "ke_engine_release"),
        release='"out"',
        quasi_r='"r"."c0"',
        quasi_out='"who"."c0" AS "name"',
        sensitive='"salary"',
        plan_match=sqltext.match('"p"', '"r"', ['"domain_cell"', '"s"']),
    )


def test_shuffle_is_uniform_on_a_small_group() -> None:
    """Three records of one group with three values: over many secrets each of the 6
    assignments of values to records comes out about equally often (chi-square), and
    so does the order of the group's rows; no record gets another group's value."""
    con = duckdb.connect()
    sql = _small_release(con)
    seen: Counter[tuple[Any, ...]] = Counter()
    orders: Counter[tuple[Any, ...]] = Counter()
    trials = 600
    for _ in range(trials):
        con.execute(sql, [release_engine.shuffle_key()])
        rows = con.execute("SELECT name, salary FROM out").fetchall()
        assert sorted(s for name, s in rows if name > "c") == [40, 50, 60]
        first = [(name, s) for name, s in rows if name <= "c"]
        seen[tuple(sorted(first))] += 1
        orders[tuple(name for name, _ in first)] += 1
        con.execute("DROP TABLE out")
    for counter in (seen, orders):
        assert len(counter) == 6
        expected = trials / 6
        chi2 = sum((c - expected) ** 2 / expected for c in counter.values())
        # 5 degrees of freedom, p < 1e-5: every key is drawn afresh, so a uniform shuffle
        # fails it once in 50,000 suites (p = 0.001 failed one run of 718 tests here)
        assert chi2 < 30.86, counter


def test_release_stops_when_rows_and_values_are_out_of_step() -> None:
    """Values that do not match the rows group by group (one moved from group 0 to
    group 1) stop the release instead of pairing a record with another group's value."""
    con = duckdb.connect()
    sql = _small_release(con)
    con.execute("UPDATE _sqlanon_runs SET group_id = 1 WHERE value = 30")
    with pytest.raises(duckdb.Error, match="out of step"):
        con.execute(sql, [release_engine.shuffle_key()])
