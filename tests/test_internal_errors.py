"""A bug inside sqlanon reaches the caller as an InternalError that names the exception's
type and sqlanon line, never its text, says to report it, and leaves nothing written
(issue 26: a raw ValueError stopped a family). The bug is planted with monkeypatch in
the planner, where a real one was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import sqlanon
from sqlanon import cli
from sqlanon.errors import InternalError, SqlanonError
from sqlanon.models import ke_incremental

SECRET = "Jane Roe earns 4321"


def people(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE people (id INTEGER, age INTEGER, loss DOUBLE)")
    con.execute("INSERT INTO people SELECT i, 20 + i % 7, (i * 37) % 11 FROM range(1, 41) t(i)")
    sqlanon.install(con)
    sqlanon.release_ke(
        con, "people", "people_ke", key="id", sensitive="loss", quasi=["age"], k=3, e=1
    )
    con.execute("INSERT INTO people VALUES (41, 22, 5), (42, 23, 7), (43, 24, 9)")


def plant_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError(SECRET)

    monkeypatch.setattr(ke_incremental, "plan_release", broken)


def state(con: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    releases = con.execute("SELECT count(*) FROM sqlanon.releases").fetchone()
    members = con.execute("SELECT count(*) FROM sqlanon.members").fetchone()
    tables = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'people_ke%'"
    ).fetchone()
    return (releases, members, tables)


def check(error: BaseException) -> None:
    message = str(error)
    assert "internal error in sqlanon" in message and "ValueError at sqlanon/" in message
    assert "please report it" in message
    assert "Jane" not in message and "4321" not in message


def test_a_bug_in_the_python_api_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    con = duckdb.connect()
    people(con)
    before = state(con)
    plant_bug(monkeypatch)
    with pytest.raises(InternalError) as caught:
        sqlanon.release_ke(
            con, "people", "people_ke", key="id", sensitive="loss", quasi=["age"], k=3, e=1
        )
    check(caught.value)
    assert isinstance(caught.value, SqlanonError)
    assert isinstance(caught.value.__cause__, ValueError)  # kept for the report
    assert state(con) == before


def test_a_bug_in_a_sql_function_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    con = duckdb.connect()
    people(con)
    before = state(con)
    plant_bug(monkeypatch)
    with pytest.raises(duckdb.Error) as caught:
        con.execute(
            "SELECT sqlanon_release_ke('people', 'people_ke', 'id', 'loss', ['age'], 3, 1)"
        ).fetchall()
    assert "InternalError" in str(caught.value)
    check(caught.value)
    assert state(con) == before


def test_bad_input_and_database_errors_stay_what_they_are() -> None:
    con = duckdb.connect()
    people(con)
    with pytest.raises(sqlanon.ConfigError):
        sqlanon.release_ke(
            con, "people", "people_ke", key="id", sensitive="loss", quasi=["age"], k=0, e=1
        )
    con.close()
    with pytest.raises(duckdb.Error):
        sqlanon.interval(con, "SELECT COUNT(*) FROM people_ke")


def test_the_cli_prints_one_line_and_the_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "people.duckdb")
    with duckdb.connect(path) as con:
        people(con)
    plant_bug(monkeypatch)
    argv = ["release-ke", "--db", path, "people", "people_ke"]
    argv += ["--key", "id", "--sensitive", "loss", "--quasi", "age", "--k", "3", "--e", "1"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("sqlanon: internal error")]
    assert len(lines) == 1  # progress lines come before it
    assert lines[0].startswith("sqlanon: internal error in sqlanon.release_ke: ValueError")
    assert "Jane" not in lines[0]
    assert "Traceback" in err  # the cause, for the report


class Stop(Exception):
    """The caller's own exception, raised from its progress callback."""


def test_the_callers_own_exception_passes_through_unchanged() -> None:
    con = duckdb.connect()
    people(con)
    before = state(con)

    def stop(stage: str, count: int) -> None:
        if stage == "rows written":
            raise Stop(stage)

    with pytest.raises(Stop):
        sqlanon.release_ke(
            con, "people", "people_ke", key="id", sensitive="loss", quasi=["age"], k=3, e=1,
            progress=stop,
        )  # fmt: skip
    assert state(con) == before
