"""Preview before publishing (issue 26) on a real PostgreSQL server: ``dry_run => true``
on the SQL functions (PL/Python) and ``dry_run=True`` through psycopg write nothing
(every table of schemas sqlanon and public hashed before and after), leave the
caller's transaction clean (no temporary table, no lock, still usable), return what
the release then returns, and refuse as it does; the old calls still work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

import sqlanon
from sqlanon.errors import InfeasibleError
from sqlanon.postgres.install import install_postgres
from tests.test_postgres_release import ADD_PEOPLE

pytestmark = pytest.mark.postgres

PREVIEW_KEYS = {"dry_run", "why_left_out", "utility", "constrains"}
KE_SQL = (
    "SELECT sqlanon.release_ke('people', %s, key => 'id', sensitive => 'salary', "
    "quasi => ARRAY['age', 'sex'], k => %s, e => 10{dry})"
)
LHD_SQL = (
    "SELECT sqlanon.release_lhd('people', 'people_l', key => 'id', quasi => ARRAY['age'], "
    "sensitive => ARRAY['salary'], l => 3, max_suppression => 0.5{dry})"
)


@pytest.fixture
def people(pg_db: str, pg_python_root: Path, pg_conn: Any) -> Any:
    install_postgres(pg_db, python_root=pg_python_root)
    pg_conn.execute("CREATE TABLE people (id integer, age integer, sex text, salary integer)")
    pg_conn.execute(ADD_PEOPLE, [1, 60])
    return pg_conn


def snapshot(conn: Any) -> dict[str, Any]:
    """Per table of schemas sqlanon and public: rows and an md5 of their sorted text;
    the views and their definitions."""
    tables = conn.execute(
        "SELECT schemaname, tablename FROM pg_tables "
        "WHERE schemaname IN ('sqlanon', 'public') ORDER BY 1, 2"
    ).fetchall()
    state: dict[str, Any] = {}
    for schema, table in tables:
        name = sql.Identifier(schema, table)
        state[f"{schema}.{table}"] = conn.execute(
            sql.SQL(
                "SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) "
                "FROM {} AS t"
            ).format(name)
        ).fetchone()
    state["views"] = conn.execute(
        "SELECT schemaname, viewname, definition FROM pg_views "
        "WHERE schemaname IN ('sqlanon', 'public') ORDER BY 1, 2"
    ).fetchall()
    return state


def leftovers(conn: Any) -> tuple[int, int]:
    """This backend's temporary tables and advisory locks."""
    temp = conn.execute("SELECT count(*) FROM pg_class WHERE relpersistence = 't'").fetchone()[0]
    locks = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
    ).fetchone()[0]
    return temp, locks


def call(conn: Any, text: str, *params: Any, dry: bool) -> dict[str, Any]:
    query = text.format(dry=", dry_run => true" if dry else "")
    return dict(conn.execute(query, list(params)).fetchone()[0])


def without_preview(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in PREVIEW_KEYS}


def test_sql_dry_run_writes_nothing_and_equals_the_release(people: Any) -> None:
    for step in range(2):
        if step:
            people.execute("DELETE FROM people WHERE id < 5")
            people.execute("UPDATE people SET salary = salary + 5 WHERE id = 10")
            people.execute(ADD_PEOPLE, [61, 80])
        before = snapshot(people)
        with people.transaction():  # the caller's transaction, left clean and usable
            dry = call(people, KE_SQL, "people_ke", 3, dry=True)
            assert leftovers(people) == (0, 0)
            assert people.execute("SELECT 1").fetchone() == (1,)
        assert snapshot(people) == before
        assert dry["dry_run"] is True and dry["version"] == step + 1
        assert dry["why_left_out"]["held_back"]["records"] == dry["held_back"]
        assert dry["constrains"]["attributes"] == ["salary"]
        real = call(people, KE_SQL, "people_ke", 3, dry=False)
        assert without_preview(dry) == real
        assert snapshot(people) != before
    assert (real["deleted"], real["value_changed"]) == (4, 1)


def test_old_calls_still_work(people: Any) -> None:
    """The positional call of every earlier signature (no dry_run) publishes."""
    summary = people.execute(
        "SELECT sqlanon.release_ke('people', 'people_ke', 'id', 'salary', ARRAY['age', 'sex'],"
        " 3, 10, 'auto', NULL)"
    ).fetchone()[0]
    assert summary["version"] == 1 and "dry_run" not in summary
    dry = people.execute(
        "SELECT sqlanon.release_ke('people', 'people_ke', 'id', 'salary', ARRAY['age', 'sex'],"
        " 3, 10, 'auto', NULL, true)"
    ).fetchone()[0]
    assert dry["dry_run"] is True and dry["unchanged"] is True


def test_lhd_sql_dry_run(people: Any) -> None:
    people.execute("SELECT sqlanon.hierarchy_widths('people', 'age', ARRAY[10, 20, 40])")
    before = snapshot(people)
    dry = call(people, LHD_SQL, dry=True)
    assert snapshot(people) == before and leftovers(people) == (0, 0)
    assert {"precision_loss", "dm", "classes"} <= set(dry["utility"])
    real = call(people, LHD_SQL, dry=False)
    assert without_preview(dry) == real


def test_psycopg_dry_run_refusals_and_preview(people: Any) -> None:
    args = {"key": "id", "sensitive": "salary", "quasi": ["age", "sex"], "e": 10}
    sqlanon.release_ke(people, "people", "people_ke", **args, k=3)
    before = snapshot(people)
    with people.transaction():
        dry = sqlanon.release_ke(people, "people", "people_ke2", **args, k=3, dry_run=True)
        assert leftovers(people) == (0, 0)
    assert dry["dry_run"] is True and snapshot(people) == before
    refused = []
    for dry_run in (True, False):
        with pytest.raises(InfeasibleError) as exc:
            sqlanon.release_ke(people, "people", "people_ke3", **args, k=50, dry_run=dry_run)
        refused.append(str(exc.value))
    assert refused[0] == refused[1]
    with pytest.raises(psycopg.errors.DataException) as server:
        call(people, KE_SQL, "people_ke3", 50, dry=True)
    assert str(server.value).splitlines()[0] == refused[0]
    rows = sqlanon.preview(people, "people", "people_ke2", "ke", {"k": [2, 3, 50]}, **args)
    assert [r["k"] for r in rows] == [2, 3, 50] and rows[2]["refused"] == refused[0]
    assert rows[1]["rows_published"] == dry["rows_published"]
    assert snapshot(people) == before
    assert json.dumps(rows)  # plain figures
