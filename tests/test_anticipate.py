"""An lHD release plans new records so that the other families of its domain can publish
them later (issue 26, mixed models): a cell only shrinks, so a piece of new records with
fewer than k distinct values could never be in a later (k,e) release of the domain.

On a real DuckDB file: an lHD family A (l=3) and a (k,e) family K (k=5, e=20) on one
Adult source, A v1, K v1, rows appended, A v2, K v2. Checked from ``sqlanon.members``
and the source with code of this test: every piece of A v2's new records (its records
in one class) has 5 distinct capital-loss values spanning 20, and K v2 leaves none of
those records out; the audit's attacker over every release finds nobody exposed.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import duckdb

import sqlanon
from sqlanon.demo import load_adult

A = {"key": "id", "quasi": ["age", "sex", "education"], "sensitive": ["capital_loss"], "l": 3}
K = {"key": "id", "sensitive": "capital_loss", "quasi": ["age", "sex"], "k": 5, "e": 20}


def published(con: duckdb.DuckDBPyConnection, family: str, version: int) -> dict[str, int]:
    return dict(
        con.execute(
            "SELECT record_key, group_id FROM sqlanon.members WHERE family = ? AND version = ? "
            "AND status = 'published' AND NOT coalesce(ghost, false)",
            [family, version],
        ).fetchall()
    )


def test_new_lhd_pieces_meet_the_ke_family_of_their_domain(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "mixed.duckdb"))
    sqlanon.install(con)
    load_adult(con, "adult_all")
    sqlanon.load_hierarchies(con, "adult")
    con.execute("CREATE TABLE adult AS SELECT * FROM adult_all ORDER BY id LIMIT 700")
    sqlanon.release_lhd(con, "adult", "a_fam", **A, max_suppression=1.0)
    sqlanon.release_ke(con, "adult", "k_fam", **K)
    con.execute("INSERT INTO adult SELECT * FROM adult_all ORDER BY id OFFSET 700 LIMIT 300")
    sqlanon.release_lhd(con, "adult", "a_fam", **A, max_suppression=1.0)
    summary = sqlanon.release_ke(con, "adult", "k_fam", **K)
    loss = dict(con.execute("SELECT CAST(id AS VARCHAR), capital_loss FROM adult").fetchall())
    before = published(con, "a_fam", 1)
    new = {r: g for r, g in published(con, "a_fam", 2).items() if r not in before}
    assert len(new) > 200, len(new)
    pieces: dict[int, list[int]] = defaultdict(list)
    for record, group in new.items():
        pieces[group].append(loss[record])
    for group, values in pieces.items():
        assert len(set(values)) >= 5 and max(values) - min(values) >= 20, (group, values)
    k_v2 = published(con, "k_fam", 2)
    assert not [r for r in new if r not in k_v2], summary
    assert all(row["exposed"] == 0 for row in sqlanon.audit(con, "k_fam"))
    con.close()


def test_other_families_are_a_preference_within_max_suppression(tmp_path: Path) -> None:
    """New records that cannot hold what the (k,e) family asks (two distinct values
    among ten) are published l-diverse anyway rather than held back beyond
    ``max_suppression``: anticipation never refuses a release."""
    con = duckdb.connect(str(tmp_path / "small.duckdb"))
    sqlanon.install(con)
    con.execute("CREATE TABLE t (id INTEGER, age INTEGER, s INTEGER)")
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?)", [(i, 20 + i % 40, 100 * (i % 9)) for i in range(60)]
    )
    sqlanon.hierarchy_widths(con, "t", "age", [10, 20])
    sqlanon.release_ke(con, "t", "t_ke", key="id", sensitive="s", quasi=["age"], k=5, e=300)
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?)", [(60 + i, 30 + i, 1 + i % 2) for i in range(10)]
    )
    summary = sqlanon.release_lhd(con, "t", "t_l", key="id", quasi=["age"], sensitive=["s"], l=2)
    assert summary["left_out"] <= 0.05 * summary["records"], summary
    new = published(con, "t_l", 1)
    assert {str(60 + i) for i in range(10)} <= set(new)
    assert all(row["exposed"] == 0 for row in sqlanon.audit(con, "t_l"))
    con.close()
