"""The command line against the PostgreSQL test server: install-postgres (both halves),
release-ke, erase, audit and query over a postgresql:// URL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from sqlanon.cli import main

pytestmark = pytest.mark.postgres


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_install_release_audit_and_query_by_url(
    pg_url: str, pg_db: str, pg_python_root: Path, capsys: Any, tmp_path: Path
) -> None:
    url = pg_url.rsplit("/", 1)[0] + "/" + conninfo_to_dict(pg_db)["dbname"]
    assert url.startswith("postgresql://")
    code, out, _ = run(capsys, "install-postgres", url, "--python-root", str(pg_python_root))
    assert code == 0 and "roles sqlanon_owner and sqlanon_analyst" in out
    with psycopg.connect(pg_db, autocommit=True) as conn:
        info = conn.execute("SELECT sqlanon.python_info()").fetchone()[0]
        conn.execute("CREATE TABLE people (id integer, age integer, sex text, salary integer)")
        conn.execute(
            "INSERT INTO people SELECT i, 20 + mod(i * 7, 50), CASE mod(i, 3) WHEN 0 THEN 'F'"
            " ELSE 'M' END, mod(i * 37, 60) * 10 FROM generate_series(1, 80) AS i"
        )
    python = ".".join(info["python"].split(".")[:2])
    code, out, _ = run(
        capsys, "install-postgres", "--server-side", "--python-root", str(pg_python_root),
        "--python-version", python, "--extension-dir", str(tmp_path),
    )  # fmt: skip
    # (a folder of the test's: the server's own is tests/test_postgres_extension.py's)
    assert (tmp_path / "sqlanon.control").is_file()
    assert code == 0 and info["python_dir"] in out  # already built: found, not rebuilt
    # ... and the extension's files placed in the server's extension directory
    assert "extension sqlanon " in out and "CREATE EXTENSION sqlanon CASCADE" in out
    code, _, err = run(capsys, "install-postgres", url, "--extension-dir", "/tmp")
    assert code == 2 and "--extension-dir goes with --server-side" in err

    release = [
        "release-ke", "--db", url, "people", "people_ke", "--key", "id",
        "--sensitive", "salary", "--quasi", "age", "sex", "--k", "4", "--e", "10",
    ]  # fmt: skip
    code, out, err = run(capsys, *release)
    assert code == 0 and json.loads(out)["version"] == 1
    assert err.splitlines() == [  # what changed (no progress lines: stderr is no terminal)
        "sqlanon: people_ke version 1 published: 80 inserted, 0 deleted, 0 quasi changed, "
        "0 value changed, 0 ghosts; 0 left out (0 held back, 0 suppressed; 0 of them by the "
        "chain rule)",
    ]
    code, out, err = run(capsys, *release)
    assert code == 0 and json.loads(out)["unchanged"] is True
    assert (
        err.splitlines()[-1] == "sqlanon: people_ke: no change since version 1: nothing published"
    )
    with psycopg.connect(pg_db, autocommit=True) as conn:
        granted = conn.execute(
            "SELECT has_table_privilege('sqlanon_analyst', 'people_ke_v1', 'SELECT'),"
            " has_table_privilege('sqlanon_analyst', 'sqlanon_bounds.people_ke_v1_bounds', 'SELECT'),"
            " has_table_privilege('sqlanon_analyst', 'people', 'SELECT')"
        ).fetchone()
    assert granted == (True, True, False)
    code, out, _ = run(capsys, "audit", "--db", url, "people_ke")
    assert code == 0 and "exposed" in out
    code, out, _ = run(
        capsys, "query", "--db", url, "SELECT sex, SUM(salary) FROM people_ke GROUP BY sex"
    )
    assert code == 0 and "sum_salary_low" in out
    # (after the audit: it does not replay deletions yet)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("DELETE FROM people WHERE id = 7")
    code, out, _ = run(capsys, "erase", "--db", url, "people")
    assert code == 0 and json.loads(out)["deleted"] == 1

    code, _, err = run(capsys, *release[:-1], "-1")
    assert code == 2 and err.startswith("sqlanon: e must be a finite number >= 0")
    code, _, err = run(capsys, "install-postgres")
    assert (
        code == 2 and err.startswith("sqlanon: give a postgresql:// URL") and "--server-side" in err
    )
