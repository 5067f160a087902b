"""The DuckDB surface: an analyst's read-only copy, and scripts that never close."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import sqlanon
from sqlanon.errors import ConfigError
from tests.test_release_duckdb import make_people

ROOT = Path(__file__).resolve().parent.parent


def _released(path: Path) -> None:
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    make_people(con, 60)
    sqlanon.release_ke(
        con, "people", "people_ke", key="id", sensitive="salary", quasi=["age", "sex"], k=3, e=10
    )
    con.close()


def test_install_on_a_read_only_copy_registers_the_query_functions(tmp_path: Path) -> None:
    path = tmp_path / "copy.duckdb"
    _released(path)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert sqlanon.install(con) == []
        (row,) = con.execute(
            "SELECT * FROM query(sqlanon_interval('SELECT COUNT(*) AS n FROM people_ke'))"
        ).fetchall()
        assert row[0] == con.execute("SELECT count(*) FROM people_ke").fetchone()[0]
        assert (
            "people_ke_v1"
            in con.execute(
                "SELECT sqlanon_rewrite('SELECT SUM(salary) FROM people_ke')"
            ).fetchone()[0]
        )
        assert sqlanon.interval(con, "SELECT SUM(salary) AS s FROM people_ke")[0]["s_low"] >= 0
        assert len(sqlanon.audit(con, "people_ke")) == 1  # reading the catalog is fine
        with pytest.raises(ConfigError, match="read-only"):
            sqlanon.release_ke(
                con, "people", "people_ke", key="id", sensitive="salary", quasi=["age"], k=3, e=10
            )
        with pytest.raises(ConfigError, match="read-only"):
            sqlanon.set_limit(con, "max_query_depth", 5)
        for call in (
            "SELECT sqlanon_release_ke('people', 'people_ke', key := 'id', "
            "sensitive := 'salary', quasi := ['age'], k := 3, e := 10)",
            "SELECT sqlanon_erase('people')",
            "SELECT sqlanon_set_limit('max_query_depth', 5)",
        ):
            with pytest.raises(duckdb.Error, match="read-only"):
                con.execute(call).fetchall()
    finally:
        con.close()
    writable = duckdb.connect(str(path))  # nothing was written: same releases, no limits
    try:
        assert writable.execute("SELECT count(*) FROM sqlanon.releases").fetchone() == (1,)
        assert writable.execute("SELECT count(*) FROM sqlanon.query_limits").fetchone() == (0,)
    finally:
        writable.close()


def test_install_on_a_read_only_file_without_the_catalog_says_what_to_do(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plain.duckdb"
    duckdb.connect(str(path)).close()
    con = duckdb.connect(str(path), read_only=True)
    try:
        with pytest.raises(ConfigError, match="read-only database lacks sqlanon's migrations"):
            sqlanon.install(con)
    finally:
        con.close()


SCRIPT = """
import duckdb, sqlanon
con = duckdb.connect({path!r})
sqlanon.install(con)
other = duckdb.connect()
sqlanon.install(other)
sqlanon.install(other)
print(sqlanon.interval(con, "SELECT COUNT(*) AS n FROM people_ke")[0]["n"])
"""


def test_a_script_that_never_closes_its_connection_exits_quietly(tmp_path: Path) -> None:
    """DuckDB's Python UDFs used to outlive the interpreter: ~43 lines of nanobind
    'leaked instances' on stderr at exit."""
    path = tmp_path / "script.duckdb"
    _released(path)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(path=str(path))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().isdigit()
    assert done.stderr == ""
