"""Erasure and what releases say about changes, on real DuckDB files and PostgreSQL.

``sqlanon.erase`` applies the deletions from a released source to sqlanon's state at
once, without publishing a version: afterwards no table of schema ``sqlanon`` holds an
erased person's key, and the next release publishes the ghost. The CLI's release
commands say when a run published nothing, and the change counts otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest

import sqlanon
from sqlanon.cli import main
from sqlanon.display import change_line
from sqlanon.errors import ConfigError
from tests.test_release_duckdb import make_people
from tests.test_release_lhd_duckdb import make_employees

FIRST = 100_000  # keys no value of the sources or the catalog can collide with
RELEASE = {"key": "id", "sensitive": "salary", "quasi": ["age", "sex"], "k": 3, "e": 10,
           "policy": "defer"}  # fmt: skip

TEXT_COLUMNS = (
    "SELECT table_name, column_name FROM information_schema.columns "
    "WHERE table_schema = 'sqlanon' AND lower(data_type) IN ('varchar', 'text', "
    "'character varying') ORDER BY 1, 2"
)


def keys_in_catalog(rows: Any, keys: list[int]) -> list[tuple[str, str]]:
    """(table, column) of every text column of schema sqlanon that holds one of ``keys``;
    ``rows(sql, params)`` runs a query."""
    found = []
    for table, column in rows(TEXT_COLUMNS, []):
        sql = f'SELECT count(*) FROM sqlanon."{table}" WHERE "{column}" IN (%s, %s)'  # noqa: S608
        if rows(sql, [str(k) for k in keys])[0][0]:
            found.append((table, column))
    return found


def status(rows: Any, family: str, key: int) -> str:
    return rows(
        "SELECT status FROM sqlanon.members WHERE family = %s AND record_key = %s "
        "ORDER BY version DESC LIMIT 1",
        [family, str(key)],
    )[0][0]


@pytest.fixture
def people(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(tmp_path / "erase.duckdb"))
    sqlanon.install(con)
    make_people(con, 60, start=FIRST)
    yield con
    con.close()


def duck_rows(con: duckdb.DuckDBPyConnection) -> Any:
    return lambda sql, params: con.execute(sql.replace("%s", "?"), params).fetchall()


def erase_and_release_again(rows: Any, release: Any, erase: Any) -> None:
    """Shared by both backends: ``release()`` publishes the next version of people_ke
    from people, ``erase()`` erases from people."""
    assert release()["version"] == 1
    rows(  # two newcomers cannot form a valid piece under `defer`: held back
        "INSERT INTO people VALUES (%s, 30, 'F', 100), (%s, 40, 'M', 200)",
        [FIRST + 500, FIRST + 501],
    )
    second = release()
    assert (second["version"], second["held_back"]) == (2, 2)
    gone, held = FIRST + 5, FIRST + 500
    assert (status(rows, "people_ke", gone), status(rows, "people_ke", held)) == (
        "published",
        "held_back",
    )
    # the scan sees them before (the published one's kept values too)
    assert {("members", "record_key"), ("kept_values", "record_key")} <= set(
        keys_in_catalog(rows, [gone, held])
    )
    rows("DELETE FROM people WHERE id IN (%s, %s)", [gone, held])
    done = erase()
    assert done == {
        "source": done["source"],
        "domain": done["domain"],
        "deleted": 2,
        "ghosts": 1,
        "forgotten": 1,
    }
    assert done["source"].endswith(".people")
    assert keys_in_catalog(rows, [gone, held]) == []
    assert rows("SELECT count(*) FROM sqlanon.releases", [])[0][0] == 2  # nothing published
    assert erase()["deleted"] == 0  # nothing more to erase

    third = release()  # publishes the ghost, though the source shows no change now
    assert (third["version"], third["ghosts"], third["deleted"]) == (3, 1, 2)
    assert "unchanged" not in third
    assert rows("SELECT count(*) FROM people_ke_v3 WHERE ghost", [])[0][0] == 1
    assert release()["unchanged"] is True


def test_erase_on_duckdb(people: duckdb.DuckDBPyConnection) -> None:
    def release() -> dict[str, Any]:
        return json.loads(
            people.execute(
                "SELECT sqlanon_release_ke('people', 'people_ke', key := 'id', "
                "sensitive := 'salary', quasi := ['age', 'sex'], k := 3, e := 10, "
                "policy := 'defer')"
            ).fetchone()[0]
        )

    def erase() -> dict[str, Any]:
        return json.loads(people.execute("SELECT sqlanon_erase('people')").fetchone()[0])

    erase_and_release_again(duck_rows(people), release, erase)
    assert sqlanon.erase(people, "main.people")["deleted"] == 0  # the Python verb


def snapshot(con: duckdb.DuckDBPyConnection) -> list[Any]:
    return [
        con.execute(f"SELECT * FROM sqlanon.{t} ORDER BY ALL").fetchall()  # noqa: S608
        for t in ("releases", "members", "kept_values", "links")
    ]


def test_erase_refuses_a_source_never_released(people: duckdb.DuckDBPyConnection) -> None:
    sqlanon.release_ke(people, "people", "people_ke", **RELEASE)
    people.execute("CREATE TABLE others AS SELECT * FROM people")
    people.execute("DELETE FROM others WHERE id = $1", [FIRST + 5])
    before = snapshot(people)
    with pytest.raises(ConfigError, match="main.others was never released"):
        sqlanon.erase(people, "others")
    with pytest.raises(ConfigError, match="does not exist"):
        sqlanon.erase(people, "nothing_here")
    assert snapshot(people) == before


def test_erase_refuses_a_domain_of_several_sources(people: duckdb.DuckDBPyConnection) -> None:
    sqlanon.release_ke(people, "people", "people_ke", **RELEASE)
    people.execute("CREATE VIEW everyone AS SELECT * FROM people")
    second = sqlanon.release_ke(people, "everyone", "everyone_ke", **RELEASE)
    assert second["domain"] == "main.people"  # the view inherits the table's domain
    people.execute("DELETE FROM people WHERE id = $1", [FIRST + 5])
    before = snapshot(people)
    for source in ("people", "everyone"):
        with pytest.raises(ConfigError, match="released from several sources"):
            sqlanon.erase(people, source)
    assert snapshot(people) == before


# --- The command line ------------------------------------------------------------------


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_release_ke_says_what_changed_and_erases(tmp_path: Path, capsys: Any) -> None:
    db = str(tmp_path / "cli.duckdb")
    con = duckdb.connect(db)
    make_people(con, 60, start=FIRST)
    con.close()
    release = [
        "release-ke", "--db", db, "people", "people_ke", "--key", "id", "--sensitive",
        "salary", "--quasi", "age", "sex", "--k", "3", "--e", "10", ]  # fmt: skip
    code, out, err = run(capsys, *release)
    assert code == 0 and json.loads(out)["version"] == 1
    assert "sqlanon: people_ke version 1 published: 60 inserted, 0 deleted," in err
    code, out, err = run(capsys, *release)
    assert code == 0 and json.loads(out)["unchanged"] is True
    assert err.splitlines()[-1] == (
        "sqlanon: people_ke: no change since version 1: nothing published"
    )

    con = duckdb.connect(db)
    con.execute("DELETE FROM people WHERE id = $1", [FIRST + 5])
    con.execute("UPDATE people SET age = age + 1 WHERE id = $1", [FIRST + 6])
    con.close()
    code, out, err = run(capsys, "erase", "--db", db, "people")
    assert code == 0 and json.loads(out)["deleted"] == 1
    assert "main.people: 1 published records are ghosts now" in err
    code, out, err = run(capsys, *release)
    assert code == 0
    assert err.splitlines()[-1] == (
        "sqlanon: people_ke version 2 published: 0 inserted, 1 deleted, 1 quasi changed, "
        "0 value changed, 1 ghosts; 0 left out (0 held back, 0 suppressed; 0 of them by the "
        "chain rule)"
    )
    code, _, err = run(capsys, "erase", "--db", db, "no_such_table")
    assert code == 2 and err.startswith("sqlanon: source table 'no_such_table' does not exist")


def test_cli_release_lhd_says_what_changed(tmp_path: Path, capsys: Any) -> None:
    db = str(tmp_path / "lhd.duckdb")
    con = duckdb.connect(db)
    sqlanon.install(con)
    make_employees(con, tmp_path / "hier")
    con.close()
    release = [
        "release-lhd", "--db", db, "emp", "emp_pg", "--key", "id", "--quasi", "position",
        "gender", "--sensitive", "salary", "--l", "2", "--max-suppression", "0.5",
    ]  # fmt: skip
    code, _, err = run(capsys, *release)
    assert code == 0 and "sqlanon: emp_pg version 1 published: 7 inserted" in err
    code, _, err = run(capsys, *release)
    assert code == 0
    assert err.splitlines()[-1] == "sqlanon: emp_pg: no change since version 1: nothing published"
    con = duckdb.connect(db)
    con.execute("UPDATE emp SET salary = 11000 WHERE id = 1")
    con.close()
    code, _, err = run(capsys, *release)
    assert code == 0 and "1 value changed" in err.splitlines()[-1]


def test_change_line_reads_any_summary() -> None:
    assert change_line("f", {"version": 3, "unchanged": True}) == (
        "f: no change since version 3: nothing published"
    )
    assert change_line("f", {"version": 1}).startswith("f version 1 published: 0 inserted")


# --- PostgreSQL --------------------------------------------------------------------------


@pytest.mark.postgres
def test_erase_on_postgres(pg_db: str, pg_python_root: Path, pg_conn: Any) -> None:
    from sqlanon.postgres.install import install_postgres

    install_postgres(pg_db, python_root=pg_python_root)
    pg_conn.execute("CREATE TABLE people (id integer, age integer, sex text, salary integer)")
    pg_conn.execute(
        "INSERT INTO people SELECT i, 20 + mod(i * 7, 50), CASE mod(i, 3) WHEN 0 THEN 'F'"
        " ELSE 'M' END, mod(i * 37, 60) * 10 FROM generate_series(%s::int, %s::int) AS i",
        [FIRST, FIRST + 59],
    )

    def rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        cursor = pg_conn.execute(sql, params)
        return cursor.fetchall() if cursor.description else []

    def release() -> dict[str, Any]:
        return dict(
            pg_conn.execute(
                "SELECT sqlanon.release_ke('people', 'people_ke', key => 'id', "
                "sensitive => 'salary', quasi => ARRAY['age', 'sex'], k => 3, e => 10, "
                "policy => 'defer')"
            ).fetchone()[0]
        )

    def erase() -> dict[str, Any]:
        return dict(pg_conn.execute("SELECT sqlanon.erase('people')").fetchone()[0])

    erase_and_release_again(rows, release, erase)
    assert sqlanon.erase(pg_conn, "public.people")["deleted"] == 0  # the client session
    # the data owner's verb: the analyst role may not call it
    granted = pg_conn.execute(
        "SELECT has_function_privilege('sqlanon_owner', 'sqlanon.erase(text)', 'EXECUTE'),"
        " has_function_privilege('sqlanon_analyst', 'sqlanon.erase(text)', 'EXECUTE'),"
        " has_function_privilege('sqlanon_analyst', 'sqlanon._erase(text, text)', 'EXECUTE')"
    ).fetchone()
    assert granted == (True, False, False)
    with pytest.raises(psycopg.Error, match="never released"):
        pg_conn.execute("CREATE TABLE others (id integer)")
        pg_conn.execute("SELECT sqlanon.erase('others')")


def test_old_version_tables_may_be_dropped(people: duckdb.DuckDBPyConnection) -> None:
    """README, "Changing tables": the owner may stop serving old versions; interval
    answers over the newest keep working (lHD label domains skip dropped tables)."""
    sqlanon.hierarchy_widths(people, "people", "age", [5, 10, 20])
    lhd = {"key": "id", "quasi": ["age"], "sensitive": ["salary"], "l": 2}
    sqlanon.release_lhd(people, "people", "people_lhd", **lhd)
    sqlanon.release_ke(people, "people", "people_ke", **RELEASE)
    make_people(people, 30, start=FIRST + 1000)
    assert sqlanon.release_lhd(people, "people", "people_lhd", **lhd)["version"] == 2
    assert sqlanon.release_ke(people, "people", "people_ke", **RELEASE)["version"] == 2
    for view in ("people_lhd_v1", "people_ke_v1", 'sqlanon."people_ke_v1_bounds"'):
        people.execute(f"DROP VIEW {view}")
    for family in ("people_lhd", "people_ke"):
        (row,) = sqlanon.interval(people, f"SELECT COUNT(*) FROM {family}")  # noqa: S608
        published = people.execute(f"SELECT count(*) FROM {family}").fetchone()[0]  # noqa: S608
        assert row["count_star_low"] == row["count_star_high"] == published


@pytest.mark.parametrize("erased_first", [False, True])
def test_an_infeasible_k_counts_the_sources_records_apart_from_ghosts(
    tmp_path: Path, erased_first: bool
) -> None:
    """Issue 28: "2161 were published by earlier releases" of a 2,119-row source. The
    refusal counts the source's records published before, of how many, and the ghosts
    (deleted records, which the planner also places) apart."""
    from sqlanon.errors import InfeasibleError
    from tests.test_release_duckdb import make_people

    con = duckdb.connect(str(tmp_path / "history.duckdb"))
    sqlanon.install(con)
    make_people(con, 60)
    args = {"key": "id", "sensitive": "salary", "quasi": ["age", "sex"], "e": 10}
    assert sqlanon.release_ke(con, "people", "people_ke", k=3, **args)["rows_published"] == 60
    con.execute("DELETE FROM people WHERE id IN (SELECT id FROM people ORDER BY id LIMIT 9)")
    if erased_first:
        sqlanon.erase(con, "people")
    (live,) = con.execute("SELECT count(*) FROM people").fetchone()
    assert live == 51
    with pytest.raises(InfeasibleError) as refused:
        sqlanon.release_ke(con, "people", "people_k50", k=50, **args)
    assert (
        "51 of its 51 records were published by earlier releases of domain 'main.people' "
        "(and 9 deleted or changed ones, now ghosts)" in str(refused.value)
    )
    con.close()
