"""Migration 011 and the spans layout on a real PostgreSQL server: releases of a (k,e)
and an lHD family with inserts, deletes and changes between them read, after the catalog
is turned back into the layout before 011 and migrated again, as they did before; the
plan of one version's read is one version row joined to a scan of its family's spans;
and analysts may read neither the views nor the spans."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sqlanon.postgres.install import install_postgres

pytestmark = pytest.mark.postgres

RELEASE_KE = (
    "SELECT sqlanon.release_ke('people', 'people_ke', key => 'id', sensitive => 'salary',"
    " quasi => ARRAY['age'], k => 3, e => 10)"
)
RELEASE_LHD = (
    "SELECT sqlanon.release_lhd('people', 'people_lhd', key => 'id', quasi => ARRAY['age'],"
    " sensitive => ARRAY['salary'], l => 2, max_suppression => 0.5)"
)
OLD_TABLES = (
    "CREATE TABLE sqlanon.members (family text NOT NULL, version integer NOT NULL,"
    " record_key text NOT NULL, group_id integer, cell_id bigint, status text NOT NULL"
    " CHECK (status IN ('published', 'held_back', 'suppressed')), row_hash bigint NOT NULL,"
    " value_hash bigint, ghost boolean DEFAULT false)",
    "CREATE INDEX members_family_version ON sqlanon.members USING brin (family, version)",
    "CREATE TABLE sqlanon.cells (family text NOT NULL, version integer NOT NULL,"
    " cell_id bigint NOT NULL, attribute text NOT NULL, min_distinct integer NOT NULL,"
    " min_spread double precision NOT NULL)",
    "CREATE INDEX cells_family_version ON sqlanon.cells USING brin (family, version)",
)


def versions(conn: Any) -> dict[tuple[str, int], Any]:
    out = {}
    for family, version in conn.execute("SELECT family, version FROM sqlanon.releases").fetchall():
        members = conn.execute(
            "SELECT record_key, group_id, cell_id * 1000 + version, status, row_hash,"
            " value_hash, ghost FROM sqlanon.members WHERE family = %s AND version = %s",
            [family, version],
        ).fetchall()
        cells = conn.execute(
            "SELECT cell_id * 1000 + version, attribute, min_distinct, min_spread"
            " FROM sqlanon.cells WHERE family = %s AND version = %s",
            [family, version],
        ).fetchall()
        out[family, version] = (Counter(members), Counter(cells))
    return out


def test_migration_011_on_postgres(pg_db: str, pg_python_root: Path, pg_conn: Any) -> None:
    install_postgres(pg_db, python_root=pg_python_root)
    conn = pg_conn
    conn.execute("CREATE TABLE people (id integer, age integer, salary integer)")
    conn.execute(
        "INSERT INTO people SELECT i, 20 + (i * 7) % 30, (i * 37) % 50 * 10"
        " FROM generate_series(1, 80) AS i"
    )
    conn.execute("SELECT sqlanon.hierarchy_widths('people', 'age', '{5,10,20}')")
    for step in range(3):
        conn.execute(RELEASE_KE)
        conn.execute(RELEASE_LHD)
        conn.execute("DELETE FROM people WHERE id = %s", [3 + step])
        conn.execute("UPDATE people SET age = age + 1 WHERE id IN (%s, %s)", [10 + step, 20 + step])
        conn.execute("UPDATE people SET salary = salary + 10 WHERE id = %s", [30 + step])
        conn.execute("INSERT INTO people VALUES (%s, 33, 120)", [100 + step])
    before = versions(conn)
    assert len(before) == 6
    rows = conn.execute("SELECT count(*) FROM sqlanon.members").fetchone()[0]
    spans = conn.execute("SELECT count(*) FROM sqlanon.member_spans").fetchone()[0]
    assert spans < rows
    # back to the layout before 011, cells numbered afresh by every release
    conn.execute("CREATE TEMP TABLE m AS SELECT * FROM sqlanon.members")
    conn.execute("CREATE TEMP TABLE c AS SELECT * FROM sqlanon.cells")
    conn.execute("DROP VIEW sqlanon.members, sqlanon.cells")
    conn.execute("DROP TABLE sqlanon.member_spans, sqlanon.cell_spans, sqlanon.state_versions")
    for statement in OLD_TABLES:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO sqlanon.members SELECT family, version, record_key, group_id,"
        " cell_id * 1000 + version, status, row_hash, value_hash, ghost FROM m"
    )
    conn.execute(
        "INSERT INTO sqlanon.cells SELECT family, version, cell_id * 1000 + version,"
        " attribute, min_distinct, min_spread FROM c"
    )
    conn.execute("DELETE FROM sqlanon.migrations WHERE name = '011_member_spans'")
    installed = install_postgres(pg_db, python_root=pg_python_root)
    assert "011_member_spans" in installed.migrations
    after = {
        key: (
            Counter({(r[0], r[1], r[2] and r[2] // 1000, *r[3:]): n for r, n in members.items()}),
            Counter({(r[0] // 1000, *r[1:]): n for r, n in cells.items()}),
        )
        for key, (members, cells) in versions(conn).items()
    }
    assert after == before
    # The old layout numbered cells afresh per version: a record with a cell changed
    # state at every release, so those rows collapse only where their labels agree.
    migrated = conn.execute("SELECT count(*) FROM sqlanon.member_spans").fetchone()[0]
    assert migrated <= rows
    conn.execute("UPDATE people SET age = age + 1 WHERE id = 40")
    conn.execute(RELEASE_KE)  # the next release builds on the migrated state
    grown = conn.execute("SELECT count(*) FROM sqlanon.member_spans").fetchone()[0] - migrated
    assert grown <= 10, grown  # its cells keep the migrated version's ids
    # one version's read: the version's row, then the family's spans by BRIN
    plan = "\n".join(
        r[0]
        for r in conn.execute(
            "EXPLAIN SELECT count(*) FROM sqlanon.members"
            " WHERE family = 'people_ke' AND version = 2"
        ).fetchall()
    )
    assert "Nested Loop" in plan and "member_spans" in plan, plan
    privileges = conn.execute(
        "SELECT has_table_privilege('sqlanon_analyst', t, 'SELECT'),"
        " has_table_privilege('sqlanon_owner', t, 'SELECT')"
        " FROM unnest(ARRAY['sqlanon.members', 'sqlanon.cells', 'sqlanon.member_spans',"
        " 'sqlanon.cell_spans', 'sqlanon.state_versions']) AS t"
    ).fetchall()
    assert privileges == [(False, True)] * 5
