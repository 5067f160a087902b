"""The private state as changes (issue 27, migration 011): ``sqlanon.members`` and
``sqlanon.cells`` read as the per-version tables they replace, while releases write only
what changed.

- Against a reference of the old layout (one row per record per version, ghosting and
  dropping rewriting every version), over random sequences of versions of two families:
  every version reads what was written for it, and a version writes one span per record
  whose state is new or changed (:func:`test_spans_read_as_the_per_version_layout`).
- Over random live sequences (inserts, deletes, changed quasi-identifiers and sensitive
  values; a (k,e) and an lHD family in one domain), every earlier version of members
  and cells reads after each later release as it did after its own, but for what the
  old layout also rewrote in every version: ghosted keys and dropped held-back records.
- A small change writes about as many spans as records changed.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon import sqltext
from sqlanon.duckdb.session import DuckDBSession
from sqlanon.state import spans
from tests.test_live_duckdb import (
    Table,
    apply,
    families,
    make_table,
    release_in_turn,
    replay,
    sequences,
)

# --- the layout against a reference of the old one ----------------------------------

State = tuple[Any, ...]  # group_id, cell_id, status, row_hash, value_hash, ghost
KEYS = [f"k{i}" for i in range(6)]
STATES = st.tuples(
    st.sampled_from([None, 0, 1]),
    st.sampled_from([None, 5]),
    st.sampled_from(["published", "suppressed", "held_back"]),
    st.sampled_from([1, 2]),
    st.sampled_from([None, 7]),
    st.just(False),
)
CELL = st.tuples(st.sampled_from([1, 2]), st.sampled_from([0.0, 1.5]))
OPS = st.one_of(
    st.tuples(
        st.just("write"),
        st.sampled_from(["a", "b"]),
        st.dictionaries(st.sampled_from(KEYS), STATES, max_size=6),
        st.dictionaries(st.tuples(st.sampled_from([3, 4]), st.sampled_from(["s", "c"])), CELL),
    ),
    st.tuples(st.just("ghost"), st.sampled_from(KEYS), st.none(), st.none()),
    st.tuples(st.just("drop"), st.sampled_from(KEYS), st.none(), st.none()),
)


def _load(session: DuckDBSession, rows: dict[str, State], cells: dict[Any, Any]) -> None:
    session.execute(
        "CREATE TEMP TABLE _sqlanon_state (record_key VARCHAR, group_id INTEGER, "
        "cell_id BIGINT, status VARCHAR, row_hash UBIGINT, value_hash UBIGINT, ghost BOOLEAN)"
    )
    for key, state in rows.items():
        session.execute(
            "INSERT INTO _sqlanon_state VALUES ($1, $2, $3, $4, $5, $6, $7)", [key, *state]
        )
    session.execute(
        "CREATE TEMP TABLE _sqlanon_cells (cell_id BIGINT, attribute VARCHAR, "
        "min_distinct INTEGER, min_spread DOUBLE)"
    )
    for (cell, attribute), (distinct, spread) in cells.items():
        session.execute(
            "INSERT INTO _sqlanon_cells VALUES ($1, $2, $3, $4)",
            [cell, attribute, distinct, spread],
        )


def _members(con: duckdb.DuckDBPyConnection, family: str, version: int) -> list[tuple[Any, ...]]:
    return sorted(
        con.execute(
            "SELECT record_key, group_id, cell_id, status, row_hash, value_hash, ghost "
            "FROM sqlanon.members WHERE family = ? AND version = ?",
            [family, version],
        ).fetchall(),
        key=repr,
    )


def _cells(con: duckdb.DuckDBPyConnection, family: str, version: int) -> list[tuple[Any, ...]]:
    return sorted(
        con.execute(
            "SELECT cell_id, attribute, min_distinct, min_spread FROM sqlanon.cells "
            "WHERE family = ? AND version = ?",
            [family, version],
        ).fetchall()
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=10))
def test_spans_read_as_the_per_version_layout(ops: list[Any]) -> None:
    con = duckdb.connect()
    sqlanon.install(con)
    session = DuckDBSession(con)
    members: dict[tuple[str, int], dict[str, State]] = {}  # the old layout
    cells: dict[tuple[str, int], dict[Any, Any]] = {}
    ghosts = 0
    for kind, what, rows, cell_rows in ops:
        if kind == "write":
            family = what
            version = 1 + max((v for f, v in members if f == family), default=0)
            before = members.get((family, version - 1), {})
            _load(session, rows, cell_rows)
            spans.store_members(session, family, version)
            spans.store_cells(session, family, version, renamed=False)
            members[family, version], cells[family, version] = dict(rows), dict(cell_rows)
            opened = con.execute(
                "SELECT count(*) FROM sqlanon.member_spans WHERE family = ? AND first_version = ?",
                [family, version],
            ).fetchone()[0]
            assert opened == sum(before.get(k) != s for k, s in rows.items())
        elif kind == "ghost":
            ghosts += 1
            ghost = f"ghost:{ghosts}"
            con.execute(
                "UPDATE sqlanon.member_spans SET record_key = ?, ghost = true, row_hash = 0, "
                "value_hash = NULL WHERE record_key = ?",
                [ghost, what],
            )
            for version_rows in members.values():
                if what in version_rows:
                    g, c, status, _, _, _ = version_rows.pop(what)
                    version_rows[ghost] = (g, c, status, 0, None, True)
        else:
            con.execute("DELETE FROM sqlanon.member_spans WHERE record_key = ?", [what])
            for version_rows in members.values():
                version_rows.pop(what, None)
        for (family, version), version_rows in members.items():
            assert _members(con, family, version) == sorted(
                ((k, *s) for k, s in version_rows.items()), key=repr
            ), (family, version)
            assert _cells(con, family, version) == sorted(
                (c, a, d, s) for (c, a), (d, s) in cells[family, version].items()
            ), (family, version)
    con.close()


def test_one_version_is_a_filter_on_the_spans() -> None:
    """Reading one (family, version) scans the spans once: no join bigger than them."""
    con = duckdb.connect()
    sqlanon.install(con)
    plan = "\n".join(
        row[1]
        for row in con.execute(
            "EXPLAIN SELECT * FROM sqlanon.members WHERE family = 'f' AND version = 3"
        ).fetchall()
    )
    assert "IE_JOIN" not in plan and "PIECEWISE_MERGE_JOIN" not in plan, plan
    assert "CROSS_PRODUCT" not in plan, plan
    con.close()


# --- live sequences: earlier versions never change --------------------------------


def _state(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, int], Any]:
    """Every version's members and cells, as multisets."""
    out: dict[tuple[str, int], Any] = {}
    for family, version in con.execute("SELECT family, version FROM sqlanon.releases").fetchall():
        out[family, version] = (
            Counter(
                con.execute(
                    "SELECT record_key, group_id, cell_id, status, row_hash, value_hash, "
                    "coalesce(ghost, false) FROM sqlanon.members "
                    "WHERE family = ? AND version = ?",
                    [family, version],
                ).fetchall()
            ),
            Counter(_cells(con, family, version)),
        )
    return out


def _kept(then: Any, now: Any, where: str) -> None:
    """``now`` is ``then`` but for what every layout rewrites in every version: a
    published record's key replaced by a ghost id (fingerprints dropped), a held-back
    record that left forgotten (or, when another release of the domain published it, a
    ghost too)."""
    (members_then, cells_then), (members_now, cells_now) = then, now
    assert cells_now == cells_then, where

    def part(rows: Counter[Any], keep: Any) -> Counter[Any]:
        return Counter({r: n for r, n in rows.items() if keep(r)})

    live_now = {r[0] for r in members_now if not r[6]}
    assert part(members_now, lambda r: not r[6]) == part(
        members_then, lambda r: not r[6] and r[0] in live_now
    ), where
    ghosts_then = part(members_then, lambda r: r[6])
    ghosts_now = part(members_now, lambda r: r[6])
    assert ghosts_now & ghosts_then == ghosts_then, where
    ghosted = part(members_then, lambda r: not r[6] and r[0] not in live_now and r[2] is not None)
    forgotten = part(members_then, lambda r: not r[6] and r[0] not in live_now and r[2] is None)
    assert all(r[3] == "held_back" for r in forgotten), where
    # A record this version held back (no cell here) that another release of the domain
    # published becomes a ghost like any published record (its key leaves every release
    # of the domain): its held-back row stays, under the ghost id. The rest are forgotten.
    new_ghosts = Counter(r[1:] for r in (ghosts_now - ghosts_then).elements())
    expected = Counter((*r[1:4], 0, None, True) for r in ghosted.elements())
    held = new_ghosts - expected
    assert not expected - new_ghosts, where
    assert set(held) <= {(None, None, "held_back", 0, None, True)}, where
    assert sum(held.values()) <= sum(forgotten.values()), where


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sequences())
def test_earlier_versions_read_the_same_after_every_later_release(scenario: Any) -> None:
    _model, first, batches, seed = scenario
    seen: dict[tuple[str, int], Any] = {}

    def step(table: Table, where: str) -> None:
        calls = [(f"family {i}", call) for i, call in enumerate(families(table, seed))]
        release_in_turn(table, calls, where)
        now = _state(table.con)
        for version, then in seen.items():
            _kept(then, now[version], f"{version} {where}")
        for version, state in now.items():
            seen.setdefault(version, state)

    def both(table: Table, where: str) -> None:
        table.model = "both"
        step(table, where)

    replay(first, batches, both, scenario)


# --- storage grows with the change ---------------------------------------------------


def test_a_small_change_writes_about_as_many_spans_as_records_changed() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        con = duckdb.connect(str(Path(tmp) / "grow.duckdb"))
        sqlanon.install(con)
        con.execute(
            "CREATE TABLE src AS SELECT CAST(i AS VARCHAR) AS id, 20 + i % 50 AS age, "
            "i % 97 AS s FROM range(2000) AS t(i)"
        )
        args = {"key": "id", "sensitive": "s", "quasi": ["age"], "k": 5, "e": 1}
        sqlanon.release_ke(con, "src", "grow", **args)
        first = con.execute("SELECT count(*) FROM sqlanon.member_spans").fetchone()[0]
        assert first == 2000
        con.execute("INSERT INTO src SELECT CAST(i AS VARCHAR), 20 + i % 50, i % 89 "
                    "FROM range(2000, 2020) AS t(i)")  # fmt: skip
        con.execute("DELETE FROM src WHERE CAST(id AS INTEGER) % 500 = 7")  # 4 deleted
        con.execute("UPDATE src SET age = age + 1 WHERE CAST(id AS INTEGER) % 500 = 11")  # 4
        sqlanon.release_ke(con, "src", "grow", **args)
        opened = con.execute(
            "SELECT count(*) FROM sqlanon.member_spans WHERE first_version = 2"
        ).fetchone()[0]
        closed = con.execute(
            "SELECT count(*) FROM sqlanon.member_spans WHERE last_version = 1"
        ).fetchone()[0]
        per_version = con.execute(
            "SELECT count(*) FROM sqlanon.members WHERE family = 'grow' AND version = 2"
        ).fetchone()[0]
        con.close()
    assert per_version >= 2000
    # 20 inserted, 4 deleted (ghosts, with their old state), 4 changed: 28 records
    assert 20 <= opened <= 2 * 28, opened
    assert closed <= 2 * 28, closed


def test_the_state_files_are_what_the_module_runs() -> None:
    for name in ("state_version", "write_member_spans", "write_cell_spans"):
        assert sqltext.load("duckdb", name)


# --- migration 011 -------------------------------------------------------------------

#: sqlanon.members and sqlanon.cells as migrations 001, 005 and 007 left them.
_OLD_TABLES = (
    "CREATE TABLE sqlanon.members (family VARCHAR NOT NULL, version INTEGER NOT NULL, "
    "record_key VARCHAR NOT NULL, group_id INTEGER, cell_id BIGINT, status VARCHAR NOT NULL "
    "CHECK (status IN ('published', 'held_back', 'suppressed')), row_hash UBIGINT NOT NULL, "
    "value_hash UBIGINT, ghost BOOLEAN DEFAULT false)",
    "CREATE TABLE sqlanon.cells (family VARCHAR NOT NULL, version INTEGER NOT NULL, "
    "cell_id BIGINT NOT NULL, attribute VARCHAR NOT NULL, min_distinct INTEGER NOT NULL, "
    "min_spread DOUBLE NOT NULL)",
)


def relabelled(cell: int | None, version: int) -> int | None:
    """A cell id as the layout before 011 wrote it: numbered afresh by each release."""
    return None if cell is None else cell * 1000 + version


def to_layout_before_011(con: duckdb.DuckDBPyConnection) -> None:
    """Turn a catalog back into the layout before migration 011, as the code before it
    wrote it: one row per record (cell, attribute) per version, cells numbered afresh
    by every release (:func:`relabelled`)."""
    con.execute("CREATE TEMP TABLE old_members AS SELECT * FROM sqlanon.members")
    con.execute("CREATE TEMP TABLE old_cells AS SELECT * FROM sqlanon.cells")
    con.execute("DROP VIEW sqlanon.members")
    con.execute("DROP VIEW sqlanon.cells")
    for name in ("member_spans", "cell_spans", "state_versions"):
        con.execute(f"DROP TABLE sqlanon.{name}")
    for statement in _OLD_TABLES:
        con.execute(statement)
    con.execute(
        "INSERT INTO sqlanon.members SELECT family, version, record_key, group_id, "
        "cell_id * 1000 + version, status, row_hash, value_hash, ghost FROM old_members"
    )
    con.execute(
        "INSERT INTO sqlanon.cells SELECT family, version, cell_id * 1000 + version, "
        "attribute, min_distinct, min_spread FROM old_cells"
    )
    con.execute("DROP TABLE old_members")
    con.execute("DROP TABLE old_cells")
    con.execute("DELETE FROM sqlanon.migrations WHERE name = '011_member_spans'")


def _relabel_state(state: dict[tuple[str, int], Any]) -> dict[tuple[str, int], Any]:
    out = {}
    for (family, version), (members, cells) in state.items():
        out[family, version] = (
            Counter(
                {(r[0], r[1], relabelled(r[2], version), *r[3:]): n for r, n in members.items()}
            ),
            Counter({(relabelled(c[0], version), *c[1:]): n for c, n in cells.items()}),
        )
    return out


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sequences())
def test_migration_011_keeps_every_version(scenario: Any) -> None:
    """Releases of a live sequence, turned back into the layout before 011 (cells
    numbered afresh per version, as that code wrote them): after the migration every
    version reads the same through the views, and the next release builds on them."""
    _model, first, batches, seed = scenario

    def step(table: Table, where: str) -> None:
        table.model = "both"
        calls = [(f"family {i}", call) for i, call in enumerate(families(table, seed))]
        release_in_turn(table, calls, where)

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "live.duckdb")
        con = duckdb.connect(path)
        sqlanon.install(con)
        table = make_table(con, Path(tmp) / "hier", "both")
        for person in first:
            table.insert(*person)
        for batch in [[], *batches]:
            apply(table, batch)
            step(table, "before the migration")
        expected = _relabel_state(_state(con))
        rows = con.execute("SELECT count(*) FROM sqlanon.members").fetchone()[0]
        to_layout_before_011(con)
        assert con.execute("SELECT count(*) FROM sqlanon.members").fetchone()[0] == rows
        con.close()
        con = duckdb.connect(path)
        assert sqlanon.install(con) == ["011_member_spans"]
        assert _state(con) == expected
        spans_rows = con.execute("SELECT count(*) FROM sqlanon.member_spans").fetchone()[0]
        assert spans_rows <= rows
        table.con = con
        step(table, "after the migration")
        con.close()
