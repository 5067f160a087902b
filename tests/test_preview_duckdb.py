"""Preview before publishing (issue 26) on real DuckDB files: a dry run plans as the
release would, refuses as it would, returns what it would return, and writes nothing
(every table of schemas sqlanon and main, and every temporary table, hashed before and
after); ``sqlanon.preview`` sweeps settings; the CLI's ``--dry-run`` and ``preview``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

import sqlanon
from sqlanon.cli import main
from sqlanon.errors import ConfigError, InfeasibleError
from tests.test_release_duckdb import make_people
from tests.test_release_lhd_duckdb import make_employees

KE = {"key": "id", "sensitive": "salary", "quasi": ["age", "sex"], "k": 3, "e": 10}
LHD = {"key": "id", "quasi": ["position", "gender"], "sensitive": ["salary"], "l": 2,
       "max_suppression": 0.5}  # fmt: skip
#: What only a dry run's summary has.
PREVIEW_KEYS = {"dry_run", "why_left_out", "utility", "constrains"}


def snapshot(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Per table and view of every schema (temporary ones too): its rows' count and an
    order-free hash of their content; the sequences' values."""
    tables = con.execute(
        "SELECT database_name, schema_name, table_name FROM duckdb_tables() "
        "WHERE NOT internal ORDER BY ALL"
    ).fetchall()
    state: dict[str, Any] = {}
    for db, schema, table in tables:
        name = f'"{db}"."{schema}"."{table}"'
        state[name] = con.execute(
            f"SELECT count(*), coalesce(sum(hash(CAST(t AS VARCHAR))), 0) FROM {name} AS t"  # noqa: S608
        ).fetchone()
    state["views"] = con.execute(
        "SELECT schema_name, view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY ALL"
    ).fetchall()
    return state


def without_preview(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in PREVIEW_KEYS}


def dry_then_real(con: duckdb.DuckDBPyConnection, verb: Any, family: str, **args: Any) -> dict:
    """A dry run that changes nothing, then the release it previews, with the same
    summary; returns the dry run's."""
    before = snapshot(con)
    dry = verb(con, "people" if verb is sqlanon.release_ke else "emp", family, **args, dry_run=True)
    assert snapshot(con) == before
    assert dry["dry_run"] is True
    real = verb(con, "people" if verb is sqlanon.release_ke else "emp", family, **args)
    assert "dry_run" not in real
    assert without_preview(dry) == real
    assert snapshot(con) != before
    return dry


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(tmp_path / "clinic.duckdb"))
    sqlanon.install(con)
    make_people(con, 60)
    yield con
    con.close()


@pytest.fixture
def emp(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(tmp_path / "lhd.duckdb"))
    sqlanon.install(con)
    make_employees(con, tmp_path / "hier")
    yield con
    con.close()


def change_people(con: duckdb.DuckDBPyConnection) -> None:
    """Deletes (published records become ghosts), a corrected value, inserts."""
    con.execute("DELETE FROM people WHERE id < 5")
    con.execute("UPDATE people SET salary = salary + 5 WHERE id = 10")
    make_people(con, 10, start=100)


@pytest.mark.parametrize("policy", ["auto", "paper"])  # the engine path; the row path
def test_ke_dry_run_writes_nothing_and_equals_the_release(
    db: duckdb.DuckDBPyConnection, policy: str
) -> None:
    first = dry_then_real(db, sqlanon.release_ke, "people_ke", **KE, policy=policy)
    assert first["version"] == 1 and first["rows_published"] == 60
    assert first["constrains"] == {
        "domain": "main.people", "attributes": ["salary"], "new_attributes": ["salary"],
    }  # fmt: skip
    assert first["utility"]["sum_of_errors"] == first["sum_of_errors"]
    assert first["utility"]["error_ratio"] >= 1
    change_people(db)
    second = dry_then_real(db, sqlanon.release_ke, "people_ke", **KE, policy=policy)
    assert (second["version"], second["deleted"], second["value_changed"]) == (2, 5, 1)
    left_out = second["why_left_out"]
    assert set(left_out) == {"held_back", "suppressed", "chain_held"}
    for name, why in left_out.items():
        assert why["records"] == second[name] and why["rule"]
    assert second["constrains"]["new_attributes"] == []
    # nothing new: the dry run says so as the release does
    again = db.execute(
        "SELECT sqlanon_release_ke('people', 'people_ke', key := 'id', sensitive := 'salary', "
        f"quasi := ['age', 'sex'], k := 3, e := 10, policy := '{policy}', dry_run := true)"
    ).fetchone()[0]
    assert json.loads(again)["unchanged"] is True and json.loads(again)["dry_run"] is True


def test_lhd_dry_run_writes_nothing_and_equals_the_release(
    emp: duckdb.DuckDBPyConnection,
) -> None:
    first = dry_then_real(emp, sqlanon.release_lhd, "emp_l", **LHD)
    assert set(first["utility"]) >= {"classes", "precision_loss", "dm", "left_out_fraction"}
    assert first["utility"]["precision_loss"] == first["precision_loss"]
    assert first["utility"]["dm"] == first["dm"]
    emp.execute("INSERT INTO emp SELECT id + 100, position, gender, zip, salary + 1 FROM emp")
    second = dry_then_real(emp, sqlanon.release_lhd, "emp_l", **LHD)
    assert second["version"] == 2 and second["inserted"] == 7


def test_lhd_row_path_dry_run_after_a_corrected_value(emp: duckdb.DuckDBPyConnection) -> None:
    sqlanon.release_lhd(emp, "emp", "emp_l", **LHD)
    emp.execute("UPDATE emp SET salary = 11000 WHERE id = 1")
    emp.execute("DELETE FROM emp WHERE id = 2")
    before = snapshot(emp)
    dry = sqlanon.release_lhd(emp, "emp", "emp_l", **LHD, dry_run=True)
    assert snapshot(emp) == before
    real = sqlanon.release_lhd(emp, "emp", "emp_l", **LHD)
    # the ghosts' stand-ins are drawn at random (lhd_job.stand_ins): the counts agree
    for name in ("version", "rows_published", "held_back", "suppressed", "chain_held",
                 "deleted", "value_changed", "ghosts"):  # fmt: skip
        assert dry[name] == real[name], name


def test_dry_run_refuses_as_the_release_does(db: duckdb.DuckDBPyConnection) -> None:
    sqlanon.release_ke(db, "people", "people_ke", **KE)
    before = snapshot(db)
    refusals = []
    for dry_run in (True, False):
        with pytest.raises(InfeasibleError) as infeasible:
            sqlanon.release_ke(db, "people", "other", **{**KE, "k": 50}, dry_run=dry_run)
        with pytest.raises(ConfigError) as changed:
            sqlanon.release_ke(db, "people", "people_ke", **{**KE, "k": 4}, dry_run=dry_run)
        refusals.append((str(infeasible.value), str(changed.value)))
    assert refusals[0] == refusals[1]
    assert snapshot(db) == before


def test_preview_sweeps_one_row_per_setting_in_order(db: duckdb.DuckDBPyConnection) -> None:
    sqlanon.release_ke(db, "people", "people_ke", **KE)
    change_people(db)
    before = snapshot(db)
    args = {k: v for k, v in KE.items() if k != "k"}
    rows = sqlanon.preview(db, "people", "people_ke2", "ke", {"k": [2, 3, 5, 40]}, **args)
    assert snapshot(db) == before
    assert [r["k"] for r in rows] == [2, 3, 5, 40]
    for row in rows[:3]:
        alone = sqlanon.release_ke(db, "people", "people_ke2", **args, k=row["k"], dry_run=True)
        assert row["rows_published"] == alone["rows_published"]
        assert row["sum_of_errors"] == alone["sum_of_errors"] and row["refused"] is None
    assert "k=40" in rows[3]["refused"] and rows[3]["rows_published"] is None
    both = sqlanon.preview(
        db, "people", "people_ke2", "ke", {"k": [2, 3], "policy": ["auto", "merge"]}, **args
    )
    assert [(r["k"], r["policy"]) for r in both] == [(2, "auto"), (2, "merge"), (3, "auto"),
                                                     (3, "merge")]  # fmt: skip
    with pytest.raises(ConfigError, match="varies"):
        sqlanon.preview(db, "people", "x", "ke", {"l": [2]}, **args)
    with pytest.raises(ConfigError, match="takes no"):
        sqlanon.preview(db, "people", "x", "ke", {"k": [2]}, **args, colour="red")


def test_preview_lhd_sweep(emp: duckdb.DuckDBPyConnection) -> None:
    args = {k: v for k, v in LHD.items() if k != "l"}
    rows = sqlanon.preview(emp, "emp", "emp_l", "lhd", {"l": [2, 3]}, **args)
    assert [r["l"] for r in rows] == [2, 3]
    assert rows[0]["precision_loss"] is not None and rows[0]["classes"] >= 1


def test_cli_dry_run_and_preview(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "cli.duckdb")
    con = duckdb.connect(path)
    sqlanon.install(con)
    make_people(con, 60)
    before = snapshot(con)
    con.close()
    common = ["--db", path, "people", "people_ke", "--key", "id", "--sensitive", "salary",
              "--quasi", "age", "sex", "--e", "10"]  # fmt: skip
    assert main(["release-ke", *common, "--k", "3", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["dry_run"] is True and summary["rows_published"] == 60
    assert "dry run" in err and "nothing written" in err
    assert main(["preview", "ke", *common, "--sweep", "k=2,3,40"]) == 0
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["k", "rows_published"] and len(lines) == 4
    assert [line.split()[0] for line in lines[1:]] == ["2", "3", "40"]
    con = duckdb.connect(path)
    sqlanon.install(con)
    assert snapshot(con) == before
    con.close()
