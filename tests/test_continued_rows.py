"""A continued (k,e) group's rows (sqlanon/state/continued_rows.py), on a real DuckDB
file, against what must hold whatever the planner did: the version shows exactly the
group's new quasi-identifier and value multisets; it writes no more rows than the two
multisets changed; and what it writes does not depend on which row the release paired
with which value (the only way the true pairing could reach it)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlanon.duckdb.session import DuckDBSession
from sqlanon.state import continued_rows

Row = tuple[int, int, int]  # (quasi-identifier, ghost flag as 0/1, value)

groups = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 1), st.integers(0, 4)), min_size=1, max_size=9
)


def _write(path: Path, old: dict[int, list[Row]], new: dict[int, list[Row]], seed: float) -> list:
    """Version 1's current rows ``old`` (per group), the release's rows ``new`` of
    version 2 (every group continued), written by :func:`continued_rows.write`; returns
    the current rows, the history rows, and version 2's rows as the view would read."""
    session = DuckDBSession(duckdb.connect(str(path)))
    con = session._cur
    con.execute("SET threads = 1")  # random() draws in one order, for the seeded rerun
    con.execute(
        "CREATE TABLE rows_t (q INTEGER, ghost BOOLEAN, group_id INTEGER, s INTEGER,"
        " sqlanon_first INTEGER)"
    )
    con.execute("CREATE TABLE history_t AS SELECT *, 0 AS sqlanon_last FROM rows_t LIMIT 0")
    con.execute("CREATE TABLE staging (q INTEGER, ghost BOOLEAN, group_id INTEGER, s INTEGER)")
    for g, rows in old.items():
        con.executemany(
            "INSERT INTO rows_t VALUES (?, ?, ?, ?, 1)", [(q, bool(h), g, s) for q, h, s in rows]
        )
    for g, rows in new.items():
        con.executemany(
            "INSERT INTO staging VALUES (?, ?, ?, ?)", [(q, bool(h), g, s) for q, h, s in rows]
        )
    con.execute(
        "CREATE TEMP TABLE _sqlanon_group_ids AS SELECT group_id AS new_id, group_id AS "
        "final_id, false AS kept, true AS continued FROM (SELECT DISTINCT group_id FROM staging)"
    )
    con.execute("SELECT setseed($1)", [seed])
    q = session.quote_ident
    columns = [q(c) for c in ("q", "ghost", "group_id", "s")]
    continued_rows.write(
        session, q("rows_t"), q("history_t"), q("staging"), columns, q("group_id"), q("s"), 2
    )
    current = con.execute("SELECT q, ghost, group_id, s, sqlanon_first FROM rows_t").fetchall()
    history = con.execute("SELECT q, ghost, group_id, s, sqlanon_last FROM history_t").fetchall()
    session.close()
    return [sorted(current), sorted(history)]


def _multiset(rows: list[Row], pick: slice) -> Counter:
    return Counter(tuple(r[pick]) for r in rows)


@settings(max_examples=40, deadline=None)
@given(
    old=st.dictionaries(st.integers(0, 2), groups, min_size=1, max_size=3),
    new_rows=groups,
    more=groups,
    shuffle=st.randoms(use_true_random=False),
    seed=st.floats(-1, 1),
)
def test_a_continued_group_shows_its_new_multisets_and_writes_only_what_changed(
    tmp_path_factory, old, new_rows, more, shuffle, seed
) -> None:
    new = {g: list(new_rows if i % 2 == 0 else more) for i, g in enumerate(old)}
    folder = tmp_path_factory.mktemp("continued")
    current, history = _write(folder / "a.duckdb", old, new, seed)
    for g in old:
        shown = [(r[0], int(r[1]), r[3]) for r in current if r[2] == g]
        # the version shows the group's new quasi-identifiers and values, as multisets
        assert _multiset(shown, slice(0, 2)) == _multiset(new[g], slice(0, 2))
        assert Counter(r[2] for r in shown) == Counter(r[2] for r in new[g])
        # a row closed is one the change forced out: no more than the two multisets moved
        closed = [r for r in history if r[2] == g]
        qi_moved = sum((_multiset(old[g], slice(0, 2)) - _multiset(new[g], slice(0, 2))).values())
        values_moved = sum((Counter(r[2] for r in old[g]) - Counter(r[2] for r in new[g])).values())
        assert len(closed) <= qi_moved + values_moved
        assert all(r[4] == 1 for r in closed)
        # the rows that stay are version 1's rows, unchanged
        stayed = Counter((r[0], r[1], r[3]) for r in current if r[2] == g and r[4] == 1)
        assert not stayed - Counter((q, bool(h), s) for q, h, s in old[g])
    # The release's own pairing of quasi-identifiers and values (the staging rows) never
    # reaches the rows written: pair the same multisets differently, same draws, same rows.
    repaired = {}
    for g, rows in new.items():
        values = [s for _q, _h, s in rows]
        shuffle.shuffle(values)
        repaired[g] = [(q, h, s) for (q, h, _s), s in zip(rows, values, strict=True)]
    assert _write(folder / "b.duckdb", old, repaired, seed) == [current, history]


def test_a_group_that_loses_a_value_it_still_shows_keeps_the_row_showing_it(
    tmp_path: Path,
) -> None:
    """One record leaves a group of four and another with the same quasi-identifiers
    enters with another value: one row changes, whichever value the leaving record had."""
    old = {0: [(1, 0, 10), (1, 0, 20), (2, 0, 30), (3, 0, 40)]}
    new = {0: [(1, 0, 10), (1, 0, 50), (2, 0, 30), (3, 0, 40)]}
    current, history = _write(tmp_path / "a.duckdb", old, new, 0.5)
    assert [r[3] for r in history] == [20]
    assert sorted(r[3] for r in current) == [10, 30, 40, 50]
    assert sum(1 for r in current if r[4] == 2) == 1
