"""Releases of one domain compose (MODELS.md, "Cells"), on real DuckDB files: which
releases share a domain, what a release refuses, and the cells it leaves behind."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import duckdb
import pytest

import sqlanon
from sqlanon.errors import ConcurrentReleaseError, ConfigError, InfeasibleError, UnsafeReleaseError
from tests.test_state_spans import to_layout_before_011


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """Issue 10's four people: (id, age, sex, v)."""
    con = duckdb.connect(str(tmp_path / "domains.duckdb"))
    sqlanon.install(con)
    con.execute("CREATE TABLE src (id INTEGER, age INTEGER, sex VARCHAR, v INTEGER, w INTEGER)")
    con.execute(
        "INSERT INTO src VALUES (1, 30, 'M', 100, 1), (2, 30, 'F', 900, 2), "
        "(3, 50, 'M', 110, 1), (4, 50, 'F', 910, 2)"
    )
    sqlanon.hierarchy_widths(con, "src", "age", [10, 20])
    yield con
    con.close()


def lhd(con: duckdb.DuckDBPyConnection, family: str, **kwargs: object) -> dict:
    args = {"key": "id", "quasi": ["age"], "sensitive": ["v"], "l": 2, **kwargs}
    return sqlanon.release_lhd(con, kwargs.pop("source", "src"), family, **args)  # type: ignore[arg-type]


def ke(con: duckdb.DuckDBPyConnection, family: str, source: str = "src", **kwargs: object) -> dict:
    args = {"key": "id", "quasi": ["age", "sex"], "sensitive": "v", "k": 2, "e": 5, **kwargs}
    return sqlanon.release_ke(con, source, family, **args)  # type: ignore[arg-type]


def groups_of(con: duckdb.DuckDBPyConnection, family: str, version: int = 1) -> dict[str, int]:
    rows = con.execute(
        "SELECT record_key, group_id FROM sqlanon.members WHERE family = ? AND version = ? "
        "AND status = 'published'",
        [family, version],
    ).fetchall()
    return dict(rows)


def candidates(con: duckdb.DuckDBPyConnection, families: list[str]) -> dict[str, set[int]]:
    """The intersection attacker, written here: a record's candidate values are those of
    every group it is in, in every release (membership known: the worst case)."""
    truth = dict(con.execute("SELECT CAST(id AS VARCHAR), v FROM src").fetchall())
    found: dict[str, set[int]] = {}
    for family in families:
        members = groups_of(con, family)
        by_group: dict[int, set[int]] = {}
        for key, group in members.items():
            by_group.setdefault(group, set()).add(truth[key])
        for key, group in members.items():
            found[key] = found.get(key, by_group[group]) & by_group[group]
    return found


def test_an_lhd_release_then_a_ke_release_of_the_same_source_compose(con) -> None:
    """Issue 10, case 2: the (k,e) release used to put (30, M) with (50, M) in {100, 110},
    pinning 100 by intersection with the lHD class {100, 900}. Now the lHD classes are
    cells the (k,e) release keeps whole."""
    lhd(con, "a")
    assert sorted(map(sorted, _classes(groups_of(con, "a")))) == [["1", "2"], ["3", "4"]]
    ke(con, "b")
    found = candidates(con, ["a", "b"])
    assert all(len(values) >= 2 for values in found.values())
    for cell in (["1", "2"], ["3", "4"]):
        assert len({groups_of(con, "b")[k] for k in cell}) == 1
    domains = con.execute("SELECT family, domain, seq FROM sqlanon.releases ORDER BY seq")
    assert domains.fetchall() == [("a", "main.src", 1), ("b", "main.src", 2)]
    assert [r["exposed"] for r in sqlanon.audit(con, "b")][-1] == 0


def _classes(members: dict[str, int]) -> list[list[str]]:
    out: dict[int, list[str]] = {}
    for key, group in members.items():
        out.setdefault(group, []).append(key)
    return list(out.values())


def test_a_cell_that_cannot_meet_k_e_is_held_back_whole(con) -> None:
    lhd(con, "a")
    with pytest.raises(InfeasibleError, match="no record of main.src can be published"):
        ke(con, "b", k=3)  # each cell holds 2 distinct values; nothing new to add
    con.execute("INSERT INTO src VALUES (5, 40, 'M', 500, 1), (6, 40, 'F', 600, 2), "
                "(7, 41, 'M', 700, 1)")  # fmt: skip
    summary = ke(con, "b", k=3)
    assert summary["rows_published"] == 3 and summary["suppressed"] == 4
    assert summary["held_back"] == 0
    assert set(groups_of(con, "b")) == {"5", "6", "7"}
    status = con.execute(
        "SELECT status, count(*) FROM sqlanon.members WHERE family = 'b' GROUP BY ALL ORDER BY 1"
    ).fetchall()
    assert status == [("published", 3), ("suppressed", 4)]


def test_records_missing_from_the_source_are_refused_and_nothing_is_written(con) -> None:
    lhd(con, "a")
    con.execute("CREATE VIEW young AS SELECT * FROM src WHERE age < 40")
    before = con.execute("SELECT count(*) FROM sqlanon.members").fetchone()
    with pytest.raises(UnsafeReleaseError, match=r"2 records .* are not in main.young"):
        ke(con, "b", source="young")
    assert con.execute("SELECT count(*) FROM sqlanon.members").fetchone() == before
    assert con.execute("SELECT count(*) FROM sqlanon.releases").fetchone() == (1,)


def test_a_changed_value_another_family_published_makes_a_ghost(con) -> None:
    lhd(con, "a", sensitive=["w"], l=2)
    lhd(con, "b", sensitive=["v"], l=2)
    con.execute("UPDATE src SET w = 3 WHERE id = 2")
    summary = ke(con, "c")  # publishes v only; w is constrained by family a's cells
    assert summary["value_changed"] == 1
    assert con.execute("SELECT later FROM sqlanon.links").fetchall() == [("2",)]
    ghost = con.execute("SELECT count(*) FROM sqlanon.members WHERE ghost").fetchone()
    assert ghost == (3,)  # its rows in a_v1, b_v1 and c_v1, under one ghost id


def test_a_ghost_without_a_kept_value_refuses_a_new_attribute(con) -> None:
    lhd(con, "a", sensitive=["w"], l=2)
    con.execute("DELETE FROM src WHERE id = 2")
    lhd(con, "a", sensitive=["w"], l=2)
    before = con.execute("SELECT count(*) FROM sqlanon.releases").fetchone()
    with pytest.raises(ConfigError, match="never published with 'v'"):
        ke(con, "b")  # the deleted person's v was never published: it is gone
    assert con.execute("SELECT count(*) FROM sqlanon.releases").fetchone() == before


def test_how_a_release_finds_its_domain(con, tmp_path: Path) -> None:
    lhd(con, "a")
    # the same source under another domain: refused (a source has one domain)
    with pytest.raises(ConfigError, match="a source belongs to one domain"):
        ke(con, "b", domain="elsewhere")
    # a family keeps its domain
    with pytest.raises(ConfigError, match="keeps its domain"):
        lhd(con, "a", domain="elsewhere")
    # a copy (same keys, same sensitive column) inherits it
    con.execute("CREATE TABLE copy AS SELECT * FROM src")
    assert ke(con, "c", source="copy")["version"] == 1
    assert con.execute("SELECT domain FROM sqlanon.releases WHERE family = 'c'").fetchone() == (
        "main.src",
    )
    # other people whose keys collide but who lack the constrained column: a new domain
    con.execute("CREATE TABLE staff (id INTEGER, age INTEGER, sex VARCHAR, pay INTEGER)")
    con.execute("INSERT INTO staff VALUES (1, 20, 'M', 5), (2, 21, 'F', 9), (3, 22, 'M', 7)")
    ke(con, "s", source="staff", sensitive="pay", e=1)
    assert con.execute(
        "SELECT domain, seq FROM sqlanon.releases WHERE family = 's'"
    ).fetchone() == (
        "main.staff",
        1,
    )
    # a table with the column and colliding keys joins, and is refused for the records
    # it lacks unless it says it is other people
    con.execute("CREATE TABLE others AS SELECT id + 2 AS id, age, sex, v, w FROM src")
    with pytest.raises(UnsafeReleaseError, match="give another domain := name"):
        ke(con, "o", source="others")
    assert ke(con, "o", source="others", domain="others")["version"] == 1


def test_releases_of_one_domain_cannot_share_a_place_in_its_sequence(con) -> None:
    lhd(con, "a")
    with pytest.raises(duckdb.ConstraintException):
        con.execute(
            "INSERT INTO sqlanon.releases (family, version, table_name, model, source, "
            "parameters, rows_published, groups, source_rows, domain, seq) VALUES "
            "('z', 1, 'z_v1', 'ke', 'main.src', '{}', 0, 0, 0, 'main.src', 1)"
        )


def test_migration_005_replays_older_catalogs(tmp_path: Path) -> None:
    """A file released before domains: two families of one source, each with cells of
    its own. install() puts them in one domain in the order they were made and rebuilds
    the cells over both; the next release composes with both."""
    path = str(tmp_path / "old.duckdb")
    con = duckdb.connect(path)
    sqlanon.install(con)
    con.execute("CREATE TABLE src (id INTEGER, age INTEGER, sex VARCHAR, v INTEGER)")
    con.execute(
        "INSERT INTO src SELECT i, 20 + i % 40, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END, "
        "(i * 37) % 101 FROM range(200) AS t(i)"
    )
    sqlanon.hierarchy_widths(con, "src", "age", [5, 10, 20])
    sqlanon.release_lhd(con, "src", "a", key="id", quasi=["age"], sensitive=["v"], l=3)
    sqlanon.release_ke(con, "src", "b", key="id", quasi=["age", "sex"], sensitive="v", k=3, e=5)
    state = con.execute(
        "SELECT family, record_key, cell_id, status FROM sqlanon.members ORDER BY ALL"
    ).fetchall()
    cells = con.execute("SELECT * FROM sqlanon.cells ORDER BY ALL").fetchall()
    # back to the layout before 005: no domain, family-level cells, no cells table rows
    to_layout_before_011(con)
    con.execute("DROP INDEX sqlanon.releases_domain_seq")
    for column in ("domain", "seq"):
        con.execute(f"ALTER TABLE sqlanon.releases DROP COLUMN {column}")
    con.execute("ALTER TABLE sqlanon.members DROP COLUMN value_hash")
    con.execute("UPDATE sqlanon.members SET cell_id = group_id")
    parameters = con.execute("SELECT family, CAST(parameters AS VARCHAR) FROM sqlanon.releases")
    for family, text in parameters.fetchall():
        old = {k: v for k, v in json.loads(text).items() if k != "domain_attributes"}
        con.execute(
            "UPDATE sqlanon.releases SET parameters = CAST(? AS JSON) WHERE family = ?",
            [json.dumps(old), family],
        )
    con.execute("DROP TABLE sqlanon.cells")
    con.execute("ALTER TABLE sqlanon.members DROP COLUMN ghost")
    con.execute("DROP TABLE sqlanon.kept_values")
    con.execute("DROP TABLE sqlanon.links")
    con.execute("DROP TABLE sqlanon.query_limits")
    con.execute("DELETE FROM sqlanon.migrations WHERE name >= '005' AND name < '009'")
    con.close()

    con = duckdb.connect(path)
    assert sqlanon.install(con) == [
        "005_domains",
        "006_domain_seq_unique",
        "007_live_tables",
        "008_query_limits",
        "011_member_spans",
    ]
    # 007 keeps the published records' values from the source, for ghosts to come
    assert con.execute("SELECT count(*) FROM sqlanon.kept_values").fetchone() == (200,)
    assert con.execute(
        "SELECT family, domain, seq FROM sqlanon.releases ORDER BY seq"
    ).fetchall() == [("a", "main.src", 1), ("b", "main.src", 2)]
    assert (
        con.execute(
            "SELECT family, record_key, cell_id, status FROM sqlanon.members ORDER BY ALL"
        ).fetchall()
        == state
    )
    assert con.execute("SELECT * FROM sqlanon.cells ORDER BY ALL").fetchall() == cells
    con.execute("INSERT INTO src VALUES (200, 33, 'F', 5), (201, 34, 'M', 50), (202, 35, 'F', 95)")
    summary = sqlanon.release_lhd(con, "src", "a", key="id", quasi=["age"], sensitive=["v"], l=3)
    assert summary["version"] == 2
    assert [r["exposed"] for r in sqlanon.audit(con, "a")][-1] == 0
    con.execute("DELETE FROM src WHERE id IN (3, 4)")  # ghosts carry the kept values
    summary = sqlanon.release_lhd(con, "src", "a", key="id", quasi=["age"], sensitive=["v"], l=3)
    assert (summary["version"], summary["deleted"], summary["ghosts"]) == (3, 2, 2)
    con.close()


def test_concurrent_releases_of_two_families_of_one_domain(tmp_path: Path) -> None:
    """Each release of a domain must see the one before it: two families released at
    once in two threads (one connection each) cannot both take the next place."""
    path = str(tmp_path / "race.duckdb")
    con = duckdb.connect(path)
    sqlanon.install(con)
    con.execute(
        "CREATE TABLE people AS SELECT i AS id, 20 + i % 50 AS age, "
        "CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END AS sex, (i * 7919) % 1000 AS salary "
        "FROM range(3000) AS t(i)"
    )
    args = {"key": "id", "sensitive": "salary", "quasi": ["age", "sex"], "k": 3, "e": 10}
    sqlanon.release_ke(con, "people", "f0", **args)  # type: ignore[arg-type]
    outcomes: list[object] = []

    def run(family: str) -> None:
        own = duckdb.connect(path)
        sqlanon.install(own)
        try:
            outcomes.append(sqlanon.release_ke(own, "people", family, **args)["seq"])  # type: ignore[arg-type]
        except ConcurrentReleaseError as exc:
            outcomes.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=run, args=(f,)) for f in ("fa", "fb")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seqs = con.execute("SELECT seq FROM sqlanon.releases ORDER BY seq").fetchall()
    assert seqs in ([(1,), (2,)], [(1,), (2,), (3,)])
    assert len([o for o in outcomes if isinstance(o, ConcurrentReleaseError)]) == 3 - len(seqs)
    con.close()


def test_a_source_whose_default_domain_was_taken_is_refused() -> None:
    """A domain named after a table (its default name) but started by another source is
    not joined by that table's first release without a word: it asks for a name."""
    con = duckdb.connect()
    sqlanon.install(con)
    for table, start in (("bait", 0), ("people", 1000)):
        con.execute(f"CREATE TABLE {table} (id INTEGER, age INTEGER, salary INTEGER)")
        con.execute(
            f"INSERT INTO {table} SELECT {start} + i, 20 + i % 30, 10 * (i % 17) "  # noqa: S608
            "FROM range(60) AS t(i)"
        )
    args = {"key": "id", "sensitive": "salary", "quasi": ["age"], "k": 3, "e": 5}
    sqlanon.release_ke(con, "bait", "bait_ke", domain="main.people", **args)
    with pytest.raises(ConfigError, match="give domain := a name of your own"):
        sqlanon.release_ke(con, "people", "people_ke", **args)
    assert sqlanon.release_ke(con, "people", "people_ke", domain="mine", **args)["version"] == 1
