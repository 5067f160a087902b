"""(k,e) releases on PostgreSQL through both sessions: psycopg in the client and
PL/Python in the server must publish the same tables from the same data and seed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

import sqlanon
from sqlanon.errors import InfeasibleError
from sqlanon.pg_install import install_postgres, with_prologue

pytestmark = pytest.mark.postgres

ADD_PEOPLE = (
    "INSERT INTO people SELECT i, 20 + mod(i * 7, 50), CASE mod(i, 3) WHEN 0 THEN 'F' ELSE 'M'"
    " END, mod(i * 37, 60) * 10 FROM generate_series(%s::int, %s::int) AS i"
)


@pytest.fixture
def people(pg_db: str, pg_python_root: Path, pg_conn: Any) -> Any:
    """A database with sqlanon installed, 60 people and ``server_release_ke(family)``:
    the release run inside the server through ``PlpySession``."""
    installed = install_postgres(pg_db, python_root=pg_python_root)
    pg_conn.execute("CREATE TABLE people (id integer, age integer, sex text, salary integer)")
    pg_conn.execute(ADD_PEOPLE, [1, 60])
    pg_conn.execute(
        with_prologue(
            "CREATE FUNCTION server_release_ke(family text, k int) RETURNS text"
            " LANGUAGE plpython3u AS $py$\n"
            "# sqlanon: prologue\n"
            "import json\n"
            "from sqlanon import release\n"
            "from sqlanon.backends.postgres import PlpySession\n"
            "return json.dumps(release.release_ke(PlpySession(plpy), 'people', family,"
            " key='id', sensitive='salary', quasi=['age', 'sex'], k=k, e=10, seed=7),"
            " default=float)\n$py$",
            installed.python_dir,
            installed.deps_dir,
        )
    )
    return pg_conn


def client_release(conn: Any, family: str, k: int = 3) -> dict[str, Any]:
    return sqlanon.release_ke(
        conn, "people", family, key="id", sensitive="salary", quasi=["age", "sex"], k=k, e=10,
        seed=7,
    )  # fmt: skip


def server_release(conn: Any, family: str, k: int = 3) -> dict[str, Any]:
    return dict(
        json.loads(conn.execute("SELECT server_release_ke(%s, %s)", [family, k]).fetchone()[0])
    )


def rows(conn: Any, table: str) -> list[tuple[Any, ...]]:
    return conn.execute(
        psycopg.sql.SQL("SELECT age, sex, group_id, salary FROM {} ORDER BY 1, 2, 3, 4").format(
            psycopg.sql.Identifier(table)
        )
    ).fetchall()


def test_client_and_server_publish_the_same_versions(people: Any) -> None:
    for version, (first, last) in enumerate([(1, 60), (61, 90)], start=1):
        if version > 1:
            people.execute(ADD_PEOPLE, [first, last])
        by_client = client_release(people, "client_ke")
        by_server = server_release(people, "server_ke")
        assert by_client["version"] == by_server["version"] == version
        assert by_client["rows_published"] == last
        assert {k: v for k, v in by_client.items() if k not in ("family", "table")} == {
            k: v for k, v in by_server.items() if k not in ("family", "table")
        }
        assert rows(people, f"client_ke_v{version}") == rows(people, f"server_ke_v{version}")
    assert people.execute(
        "SELECT family, version, rows_published FROM sqlanon.releases ORDER BY 1, 2"
    ).fetchall() == [
        ("client_ke", 1, 60),
        ("client_ke", 2, 90),
        ("server_ke", 1, 60),
        ("server_ke", 2, 90),
    ]
    assert [a["exposed"] for a in sqlanon.audit(people, "server_ke")] == [0, 0]


def test_a_refused_release_writes_nothing_on_either_side(people: Any) -> None:
    before = people.execute("SELECT count(*) FROM pg_class").fetchone()
    with pytest.raises(InfeasibleError):
        client_release(people, "client_ke", k=1000)
    with pytest.raises(psycopg.errors.ExternalRoutineException, match="InfeasibleError"):
        server_release(people, "server_ke", k=1000)
    assert people.execute("SELECT count(*) FROM sqlanon.releases").fetchone() == (0,)
    assert people.execute("SELECT count(*) FROM sqlanon.members").fetchone() == (0,)
    assert people.execute("SELECT count(*) FROM pg_class").fetchone() == before


@pytest.mark.parametrize("column_type", ["integer", "numeric(9,2)", "double precision"])
def test_bounds_and_intervals_for_each_sensitive_type(people: Any, column_type: str) -> None:
    """numpy writes the bounds of integers, PostgreSQL's own arithmetic those of numeric
    and double columns: intervals hold the truth either way, with groups over 64 rows."""
    people.execute(ADD_PEOPLE, [61, 400])
    people.execute(f"ALTER TABLE people ALTER salary TYPE {column_type}")
    if column_type != "integer":
        people.execute("UPDATE people SET salary = salary + 0.25 * mod(id, 4)")
    sqlanon.release_ke(
        people, "people", "typed_ke", key="id", sensitive="salary", quasi=["age", "sex"], k=3,
        e=300, seed=7,
    )  # fmt: skip
    assert people.execute('SELECT max(block) FROM sqlanon."typed_ke_v1_bounds"').fetchone()[0] > 0
    query = (
        "SELECT sex, SUM(salary) AS total, AVG(salary) AS mean, MIN(salary) AS lo, "
        "MAX(salary) AS hi FROM typed_ke WHERE age < 45 GROUP BY sex"
    )
    truth = {
        r[0]: r[1:]
        for r in people.execute(query.replace("FROM typed_ke", "FROM people")).fetchall()
    }
    answers = sqlanon.interval(people, query)
    assert {a["sex"] for a in answers} == set(truth)
    for a in answers:
        for name, value in zip(("total", "mean", "lo", "hi"), truth[a["sex"]], strict=True):
            slack = 1e-9 * max(1.0, abs(float(value)))
            assert float(a[f"{name}_low"]) - slack <= float(value) <= float(a[f"{name}_high"]) + slack
