"""(k,e) releases on PostgreSQL through both sessions: psycopg in the client and
PL/Python in the server must publish the same groups from the same data (which record
of a group shows which of its values is drawn per release, from a secret nobody
chooses)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

import sqlanon
from sqlanon.errors import InfeasibleError
from sqlanon.postgres.install import install_postgres, with_prologue

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
            "from sqlanon.release import ke_release as release\n"
            "from sqlanon.postgres.session import PlpySession\n"
            "return json.dumps(release.release_ke(PlpySession(plpy), 'people', family,"
            " key='id', sensitive='salary', quasi=['age', 'sex'], k=k, e=10),"
            " default=float)\n$py$",
            installed.python_dir,
            installed.deps_dir,
        )
    )
    return pg_conn


def client_release(conn: Any, family: str, k: int = 3) -> dict[str, Any]:
    return sqlanon.release_ke(
        conn, "people", family, key="id", sensitive="salary", quasi=["age", "sex"], k=k, e=10,
        )  # fmt: skip


def server_release(conn: Any, family: str, k: int = 3) -> dict[str, Any]:
    return dict(
        json.loads(conn.execute("SELECT server_release_ke(%s, %s)", [family, k]).fetchone()[0])
    )


def groups(conn: Any, table: str) -> dict[int, tuple[list[Any], list[Any]]]:
    """Per group: its quasi-identifier rows and its values, each sorted."""
    found: dict[int, tuple[list[Any], list[Any]]] = {}
    for age, sex, group, salary in conn.execute(
        psycopg.sql.SQL("SELECT age, sex, group_id, salary FROM {}").format(
            psycopg.sql.Identifier(table)
        )
    ).fetchall():
        found.setdefault(group, ([], []))[0].append((age, sex))
        found[group][1].append(salary)
    return {g: (sorted(q), sorted(v)) for g, (q, v) in found.items()}


def test_client_and_server_publish_the_same_versions(people: Any) -> None:
    for version, (first, last) in enumerate([(1, 60), (61, 90)], start=1):
        if version > 1:
            people.execute(ADD_PEOPLE, [first, last])
        by_client = client_release(people, "client_ke")
        by_server = server_release(people, "server_ke")
        assert by_client["version"] == by_server["version"] == version
        assert by_client["rows_published"] == last
        # Both families release one source: one domain, in which each has its own seq.
        assert by_server["seq"] == by_client["seq"] + 1
        assert {k: v for k, v in by_client.items() if k not in ("family", "table", "seq")} == {
            k: v for k, v in by_server.items() if k not in ("family", "table", "seq")
        }
        assert groups(people, f"client_ke_v{version}") == groups(people, f"server_ke_v{version}")
    assert people.execute(
        "SELECT family, version, rows_published FROM sqlanon.releases ORDER BY 1, 2"
    ).fetchall() == [
        ("client_ke", 1, 60),
        ("client_ke", 2, 90),
        ("server_ke", 1, 60),
        ("server_ke", 2, 90),
    ]
    # One source, one domain: the audit of either family holds all four releases.
    audit = sqlanon.audit(people, "server_ke")
    assert sorted((a["family"], a["version"]) for a in audit) == [
        ("client_ke", 1),
        ("client_ke", 2),
        ("server_ke", 1),
        ("server_ke", 2),
    ]
    assert [a["seq"] for a in audit] == [1, 2, 3, 4] and all(a["exposed"] == 0 for a in audit)


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
        e=300, )  # fmt: skip
    assert (
        people.execute('SELECT max(block) FROM sqlanon_bounds."typed_ke_v1_bounds"').fetchone()[0]
        > 0
    )
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
            assert (
                float(a[f"{name}_low"]) - slack <= float(value) <= float(a[f"{name}_high"]) + slack
            )


def catalog_state(conn: Any) -> list[Any]:
    return [
        conn.execute("SELECT family, version FROM sqlanon.releases ORDER BY 1, 2").fetchall(),
        conn.execute("SELECT count(*), sum(row_hash) FROM sqlanon.members").fetchone(),
        conn.execute("SELECT count(*) FROM pg_class").fetchone(),
    ]


@pytest.mark.parametrize(
    ("change", "counts"),
    [
        ("DELETE FROM people WHERE id IN (5, 9)", {"deleted": 2, "ghosts": 2}),
        ("UPDATE people SET salary = salary + 1 WHERE id = 11", {"value_changed": 1}),
        ("UPDATE people SET age = age + 1 WHERE id = 12", {"quasi_changed": 1, "ghosts": 0}),
        ("UPDATE people SET sex = NULL WHERE id = 13", {"quasi_changed": 1, "ghosts": 0}),
    ],
)
def test_deleted_or_changed_published_rows_are_released_live_on_both_sides(
    people: Any, change: str, counts: dict[str, int]
) -> None:
    client_release(people, "client_ke")
    server_release(people, "server_ke")
    people.execute(change)
    people.execute(ADD_PEOPLE, [61, 70])
    client = client_release(people, "client_ke")
    assert {name: client[name] for name in counts} == counts
    # the other family of the domain carries the same ghosts (made by the first release)
    server = server_release(people, "server_ke")
    assert server["version"] == 2 and server["ghosts"] == client["ghosts"]
    gone = people.execute(
        "SELECT count(*) FROM sqlanon.members WHERE record_key IN ('5', '9')"
    ).fetchone()[0]
    assert gone == (0 if "deleted" in counts else 8)  # 2 keys x 2 families x 2 versions
    # the audit replays the ghosts (kept values) and chains: nothing exposed
    audit = sqlanon.audit(people, "client_ke", records=True)
    assert len(audit) == 4 and all(a["exposed"] == 0 for a in audit), audit
    published = [k for a in audit for k in a["records"]["exposed"]]
    assert published == []


@pytest.mark.parametrize(
    "column_type",
    ["numeric(9,2)", "double precision"],
)
def test_the_audit_reads_ghosts_back_as_their_type(people: Any, column_type: str) -> None:
    """Kept values are text: the audit reads them back as numbers (spreads), on the
    server too (the SQL function)."""
    people.execute(f"ALTER TABLE people ALTER COLUMN salary TYPE {column_type}")
    people.execute("UPDATE people SET salary = salary + 0.25")
    client_release(people, "client_ke")
    people.execute("DELETE FROM people WHERE id IN (5, 9)")
    people.execute("UPDATE people SET salary = salary + 0.5 WHERE id IN (11, 12)")
    people.execute(ADD_PEOPLE, [61, 75])
    assert client_release(people, "client_ke")["ghosts"] >= 2
    assert people.execute("SELECT count(*) FROM sqlanon.links").fetchone()[0] == 2
    audit = sqlanon.audit(people, "client_ke")
    assert [a["exposed"] for a in audit] == [0, 0]
    server = people.execute("SELECT sqlanon.audit('client_ke')").fetchone()[0]
    assert server == audit


# The fingerprint releases stored before hashtextextended: the first 64 bits of md5.
LEGACY_FINGERPRINTS = (
    "UPDATE sqlanon.member_spans AS m SET row_hash = CAST(CAST('x' || substr(md5(CAST(ROW(p.age,"
    " p.sex, p.salary) AS text)), 1, 16) AS bit(64)) AS bigint) FROM people AS p"
    " WHERE m.record_key = CAST(p.id AS text)"
)


def test_fingerprints_stored_by_older_releases_still_compare(people: Any) -> None:
    server_release(people, "server_ke")
    people.execute(LEGACY_FINGERPRINTS)
    # nothing changed: the legacy fingerprints match, no new version
    assert server_release(people, "server_ke")["unchanged"] is True
    people.execute("UPDATE people SET age = age + 1 WHERE id IN (3, 4)")
    people.execute(ADD_PEOPLE, [61, 90])
    second = server_release(people, "server_ke")
    assert (second["rows_published"], second["quasi_changed"]) == (90, 2)
    # The new version stores the new fingerprint, which the next release compares.
    people.execute("UPDATE people SET age = age + 1 WHERE id = 70")
    assert server_release(people, "server_ke")["quasi_changed"] == 1
    assert people.execute(
        "SELECT count(*) FROM sqlanon.members AS m JOIN people AS p"
        " ON m.record_key = CAST(p.id AS text) WHERE m.version = 2"
        " AND m.row_hash = hashtextextended(CAST(ROW(p.age, p.sex, p.salary) AS text), 0)"
    ).fetchone() == (89,)


@pytest.mark.parametrize("key_type", ["text", "uuid", "numeric(8, 2)"])
def test_keys_that_are_not_integers_join_as_their_own_type(people: Any, key_type: str) -> None:
    key = {
        "text": "'p' || id",
        "uuid": "CAST(lpad(to_hex(id), 32, '0') AS uuid)",
        "numeric(8, 2)": "id + 0.5",
    }[key_type]
    people.execute(
        f"CREATE TABLE keyed AS SELECT CAST({key} AS {key_type}) AS pid, age, sex, salary"
        " FROM people"
    )
    release = (
        "SELECT sqlanon.release_ke('keyed', 'keyed_ke', key => 'pid', sensitive => 'salary',"
        " quasi => ARRAY['age', 'sex'], k => 3, e => 10)"
    )
    assert people.execute(release).fetchone()[0]["rows_published"] == 60
    people.execute(f"INSERT INTO keyed SELECT CAST({key} AS {key_type}), 30, 'F', 100 FROM"
                   " generate_series(61, 63) AS id")  # fmt: skip
    second = people.execute(release).fetchone()[0]
    assert second["rows_published"] + second["held_back"] == 63
    assert people.execute(
        "SELECT count(*), count(*) FILTER (WHERE m.status = 'published') FROM sqlanon.members"
        " AS m JOIN keyed AS k ON m.record_key = CAST(k.pid AS text) WHERE m.version = 2"
    ).fetchone() == (63, second["rows_published"])
    people.execute(f"UPDATE keyed SET salary = salary + 1 FROM (SELECT 7 AS id) AS one"
                   f" WHERE pid = CAST({key} AS {key_type})")  # fmt: skip
    third = people.execute(release).fetchone()[0]
    assert (third["version"], third["value_changed"]) == (3, 1)


def test_versions_share_their_rows_and_analysts_read_only_the_views(people: Any) -> None:
    """Versions are views of the family's current rows and history: every version reads
    as it did after later releases (client and server side), a kept group keeps its
    rows, and the analyst role reads the views but not the tables behind them."""
    seen = {}
    for step, release in enumerate([client_release, server_release, client_release]):
        if step:
            people.execute("DELETE FROM people WHERE id = %s", [step])
            people.execute("UPDATE people SET age = age + 1 WHERE id = %s", [10 + step])
            people.execute(ADD_PEOPLE, [100 + 10 * step, 104 + 10 * step])
        release(people, "fam")
        for v in range(1, step + 2):
            rows = sorted(map(repr, people.execute(f"SELECT * FROM fam_v{v}").fetchall()))  # noqa: S608
            assert seen.setdefault(v, rows) == rows
    kinds = dict(
        people.execute(
            "SELECT table_schema || '.' || table_name, table_type FROM information_schema.tables"
            " WHERE table_name LIKE 'fam%%'"
        ).fetchall()
    )
    assert kinds["public.fam_v1"] == kinds["sqlanon_bounds.fam_v3_bounds"] == "VIEW"
    assert kinds["sqlanon_bounds.fam__rows"] == kinds["sqlanon_bounds.fam__history"] == "BASE TABLE"
    current, history = people.execute(
        "SELECT (SELECT count(*) FROM sqlanon_bounds.fam__rows),"
        " (SELECT count(*) FROM sqlanon_bounds.fam__history)"
    ).fetchone()
    assert current == len(seen[3]) and history > 0
    privileges = people.execute(
        "SELECT has_table_privilege('sqlanon_analyst', 'public.fam_v1', 'SELECT'),"
        " has_table_privilege('sqlanon_analyst', 'sqlanon_bounds.fam_v2_bounds', 'SELECT'),"
        " has_table_privilege('sqlanon_analyst', 'sqlanon_bounds.fam__rows', 'SELECT'),"
        " has_table_privilege('sqlanon_analyst', 'sqlanon_bounds.fam__history', 'SELECT'),"
        " has_table_privilege('sqlanon_analyst', 'sqlanon_bounds.fam__bounds', 'SELECT')"
    ).fetchone()
    assert privileges == (True, True, False, False, False)


def test_a_small_change_writes_only_the_rows_it_changes(people: Any) -> None:
    """Continued groups on PostgreSQL (sqlanon/state/continued_rows.py), client and server
    side, with NULL quasi-identifiers among the tuples compared: changed ages close the
    changed records' old rows and append their new ones; no other row is written."""
    people.execute("UPDATE people SET sex = NULL WHERE mod(id, 4) = 0")
    client_release(people, "fam")
    for step, release in enumerate([server_release, client_release], start=1):
        changed = [10 + step, 30 + step]
        before = sorted(
            people.execute("SELECT age, sex FROM people WHERE id = ANY(%s)", [changed]).fetchall(),
            key=repr,
        )
        people.execute("UPDATE people SET age = age + 1 WHERE id = ANY(%s)", [changed])
        after = sorted(
            people.execute("SELECT age, sex FROM people WHERE id = ANY(%s)", [changed]).fetchall(),
            key=repr,
        )
        summary = release(people, "fam")
        assert summary["quasi_changed"] == 2
        version = step + 1
        appended = people.execute(
            "SELECT age, sex FROM sqlanon_bounds.fam__rows WHERE sqlanon_first = %s", [version]
        ).fetchall()
        closed = people.execute(
            "SELECT age, sex FROM sqlanon_bounds.fam__history WHERE sqlanon_last = %s",
            [version - 1],
        ).fetchall()
        assert sorted(appended, key=repr) == after and sorted(closed, key=repr) == before
        values = (
            "SELECT group_id, array_agg(salary ORDER BY salary) FROM fam_v{} GROUP BY 1 ORDER BY 1"
        )
        assert (
            people.execute(values.format(version - 1)).fetchall()
            == people.execute(values.format(version)).fetchall()
        )
