"""Change capture on PostgreSQL (issue 27): a release over captured changes publishes
exactly what the full pass publishes, falls back to it whenever capture does not cover
every change since the domain's latest release, and the capture gives writers nothing
to do and nothing to read or inject."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

import sqlanon
from sqlanon.errors import ConfigError, SqlanonError
from sqlanon.postgres.install import install_postgres
from sqlanon.state import capture

pytestmark = pytest.mark.postgres

COLUMNS = "id integer PRIMARY KEY, age integer, sex text, salary integer"


@pytest.fixture
def db(pg_db: str, pg_python_root: Path, pg_conn: Any) -> Any:
    """An autocommit connection to a fresh database with sqlanon installed."""
    install_postgres(pg_db, python_root=pg_python_root)
    return pg_conn


@pytest.fixture
def used(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, bool]]]:
    """Every call of :func:`capture.gone` a release made: (source, whether it used the
    capture)."""
    calls: list[tuple[str, bool]] = []
    real = capture.gone

    def spy(session: Any, since: Any, src: Any, key: str) -> Any:
        found = real(session, since, src, key)
        calls.append((src.table, found is not None))
        return found

    monkeypatch.setattr(capture, "gone", spy)
    yield calls


def ident(name: str) -> sql.Composable:
    return sql.Identifier(name)


def make_twins(conn: Any, a: str, b: str, first: int, count: int) -> None:
    """Two equal tables ``a`` and ``b`` of ``count`` people from id ``first``."""
    for table in (a, b):
        conn.execute(sql.SQL("CREATE TABLE {} (" + COLUMNS + ")").format(ident(table)))
        add(conn, table, first, count)


def add(conn: Any, table: str, first: int, count: int) -> None:
    """``count`` people from id ``first``; salaries differ from every other one's."""
    conn.execute(
        sql.SQL(
            "INSERT INTO {} SELECT i, 20 + mod(i * 7, 13), CASE mod(i, 3) WHEN 0 THEN 'F' "
            "ELSE 'M' END, i * 100 FROM generate_series(%s::int, %s::int) AS i"
        ).format(ident(table)),
        [first, first + count - 1],
    )


def release(conn: Any, table: str) -> dict[str, Any] | str:
    """The next version of family ``f_<table>`` (in domain ``d_<table>``: the twins hold
    the same people, which would otherwise make them one domain); a refusal as its error
    class."""
    try:
        return sqlanon.release_ke(
            conn, table, f"f_{table}", key="id", sensitive="salary", quasi=["age", "sex"],
            k=3, e=10, domain=f"d_{table}",
        )  # fmt: skip
    except SqlanonError as exc:
        return type(exc).__name__


def published(conn: Any, family: str) -> list[Any]:
    """The family's newest version, per group: its rows but the value, and its values,
    each sorted; the groups sorted (group ids left out)."""
    cur = conn.execute(sql.SQL("SELECT * FROM {}").format(ident(family)))
    names = [c.name for c in cur.description]
    groups: dict[Any, tuple[list[Any], list[Any]]] = {}
    for row in cur.fetchall():
        values = dict(zip(names, row, strict=True))
        group = groups.setdefault(values.pop("group_id"), ([], []))
        group[1].append(values.pop("salary"))
        group[0].append(tuple(sorted(values.items(), key=str)))
    return sorted(((sorted(r, key=str), sorted(v)) for r, v in groups.values()), key=str)


def state(conn: Any, family: str) -> dict[str, Any]:
    """The family's newest state: its members (a ghost's random id left out), and the
    ghosts, kept values and links of its domain."""
    version = conn.execute(
        "SELECT max(version), max(domain) FROM sqlanon.releases WHERE family = %s", [family]
    ).fetchone()
    members = conn.execute(
        "SELECT CASE WHEN ghost THEN 'ghost' ELSE record_key END, status, ghost "
        "FROM sqlanon.members WHERE family = %s AND version = %s",
        [family, version[0]],
    ).fetchall()
    kept = conn.execute(
        "SELECT attribute, value, record_key LIKE 'ghost:%%' FROM sqlanon.kept_values "
        "WHERE domain = %s",
        [version[1]],
    ).fetchall()
    links = conn.execute(
        "SELECT count(*) FROM sqlanon.links WHERE domain = %s", [version[1]]
    ).fetchone()
    return {
        "version": version[0],
        "members": Counter(members),
        "kept": Counter(kept),
        "links": links[0],
    }


def same(conn: Any, a: str, b: str) -> None:
    """Both families publish and keep the same."""
    fa, fb = f"f_{a}", f"f_{b}"
    assert published(conn, fa) == published(conn, fb)
    assert state(conn, fa) == state(conn, fb)


def alike(one: dict[str, Any] | str, other: dict[str, Any] | str) -> None:
    if isinstance(one, str) or isinstance(other, str):
        assert one == other
        return
    skip = {"family", "table", "domain"}
    assert {k: v for k, v in one.items() if k not in skip} == {
        k: v for k, v in other.items() if k not in skip
    }


# --- Capture on and off give the same versions -------------------------------------------

WRITES = [
    st.tuples(st.just("insert"), st.integers(1, 8)),
    st.tuples(st.just("delete"), st.integers(2, 6), st.integers(0, 5)),
    st.tuples(st.just("quasi"), st.integers(2, 6), st.integers(0, 5)),
    st.tuples(st.just("value"), st.integers(2, 6), st.integers(0, 5)),
    st.tuples(st.just("key"), st.integers(3, 8), st.integers(0, 7)),
]
BREAKS = [
    st.tuples(st.just("truncate"), st.integers(9, 20)),
    st.tuples(st.just("restart")),
    st.tuples(st.just("stop")),
]
#: Writes four times as likely as what breaks the capture (each of those falls back).
ACTIONS = st.one_of(*(WRITES * 4), *BREAKS)
STEPS = st.lists(st.lists(ACTIONS, min_size=1, max_size=4), min_size=1, max_size=4)


def act(conn: Any, table: str, action: tuple[Any, ...], step: int, next_id: int) -> None:
    """One write to ``table`` (the same on both twins)."""
    kind, t = action[0], ident(table)
    where = "mod(id * 7 + %s, %s) = 0"
    if kind == "insert":
        add(conn, table, next_id, action[1])
    elif kind == "delete":
        conn.execute(sql.SQL("DELETE FROM {} WHERE " + where).format(t), [action[2], action[1]])
    elif kind == "quasi":
        conn.execute(
            sql.SQL("UPDATE {} SET age = age + 1, sex = 'F' WHERE " + where).format(t),
            [action[2], action[1]],
        )
    elif kind == "value":  # + step + 1 stays below the next person's salary
        conn.execute(
            sql.SQL("UPDATE {} SET salary = salary + %s WHERE " + where).format(t),
            [step + 1, action[2], action[1]],
        )
    elif kind == "key":
        conn.execute(
            sql.SQL("UPDATE {} SET id = id + %s WHERE " + where).format(t),
            [1_000_000 * (step + 1), action[2], action[1]],
        )
    elif kind == "truncate":
        conn.execute(sql.SQL("TRUNCATE {}").format(t))
        add(conn, table, next_id, action[1])


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(first=st.integers(12, 30), steps=STEPS)
def test_capture_on_and_off_publish_the_same_versions(
    db: Any, used: list[tuple[str, bool]], first: int, steps: list[list[tuple[Any, ...]]]
) -> None:
    """Random live sequences on two copies of a source, the first captured (stopped and
    started again sometimes): every version and the state after it are the same, and the
    release used the capture exactly when it covered every change since the last
    version."""
    tag = uuid.uuid4().hex[:8]
    a, b = f"a_{tag}", f"b_{tag}"
    make_twins(db, a, b, 1, first)
    sqlanon.capture_changes(db, a, key="id")
    alike(release(db, a), release(db, b))
    same(db, a, b)
    next_id, on, covered = 100_000, True, True  # covered: unbroken since the last version
    for step, actions in enumerate(steps):
        for action in actions:
            if action[0] in ("restart", "stop"):
                sqlanon.stop_capture(db, a)
                on, covered = action[0] == "restart", False
                if on:
                    sqlanon.capture_changes(db, a, key="id")
                continue
            for table in (a, b):
                act(db, table, action, step, next_id)
            next_id += 100
            covered = covered and action[0] != "truncate"
        used.clear()
        one, other = release(db, a), release(db, b)
        alike(one, other)
        same(db, a, b)
        assert all(not took for table, took in used if table == b)
        assert all(took == (on and covered) for table, took in used if table == a), used
        if isinstance(one, dict) and not one.get("unchanged"):
            covered = on  # the new version's mark: capture in force before its read
        if on and covered:
            left = db.execute(
                "SELECT count(*) FROM sqlanon.captured WHERE relid = %s::regclass", [a]
            ).fetchone()[0]
            assert left == 0  # the one domain of the source read past every entry


# --- The writers' side ---------------------------------------------------------------------


def as_role(conn: Any, role: str, statement: str) -> None:
    """``statement`` run as ``role`` (SET LOCAL ROLE in a transaction of its own)."""
    with conn.transaction():
        conn.execute(sql.SQL("SET LOCAL ROLE {}").format(ident(role)))
        conn.execute(statement)


def test_a_writer_with_no_right_on_sqlanon_writes_and_cannot_reach_the_capture(
    db: Any, used: list[tuple[str, bool]]
) -> None:
    tag = uuid.uuid4().hex[:8]
    writer, owner = f"writer_{tag}", f"owner_{tag}"
    db.execute(sql.SQL("CREATE TABLE people (" + COLUMNS + ")"))
    add(db, "people", 1, 60)
    db.execute(
        "SELECT sqlanon.release_ke('people', 'fam', key => 'id', sensitive => 'salary', "
        "quasi => ARRAY['age', 'sex'], k => 3, e => 10)"
    )
    started = db.execute("SELECT sqlanon.capture_changes('people', 'id')").fetchone()[0]
    assert started == {"source": "public.people", "key": "id", "capturing": True, "started": True}
    again = db.execute("SELECT sqlanon.capture_changes('people')").fetchone()[0]
    assert again["started"] is False
    # a version made with capture on, so that the next one may read the capture
    add(db, "people", 61, 3)
    db.execute(
        "SELECT sqlanon.release_ke('people', 'fam', key => 'id', sensitive => 'salary', "
        "quasi => ARRAY['age', 'sex'], k => 3, e => 10)"
    )
    db.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(ident(writer)))
    db.execute(sql.SQL("CREATE ROLE {} NOLOGIN IN ROLE sqlanon_owner").format(ident(owner)))
    try:
        db.execute(
            sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON people TO {}").format(ident(writer))
        )
        db.execute(
            sql.SQL("GRANT CREATE ON SCHEMA public TO {}, {}").format(ident(writer), ident(owner))
        )
        db.execute(sql.SQL("GRANT SELECT ON people TO {}").format(ident(owner)))
        as_role(db, writer, "INSERT INTO people VALUES (1000, 30, 'F', 1)")
        as_role(db, writer, "UPDATE people SET id = 2000 WHERE id = 1000")
        as_role(db, writer, "UPDATE people SET age = age + 1 WHERE id <= 10")
        as_role(db, writer, "DELETE FROM people WHERE id BETWEEN 11 AND 14")
        # more than 10 rows: the trigger takes its other way (the key's cast, not JSON)
        as_role(db, writer, "UPDATE people SET id = id + 5000 WHERE id BETWEEN 31 AND 50")
        captured = ["1000", "11", "12", "13", "14", *(str(i) for i in range(31, 51))]
        assert sorted(
            r[0] for r in db.execute("SELECT record_key FROM sqlanon.captured").fetchall()
        ) == sorted(captured)
        for role in (writer, "sqlanon_analyst"):
            for statement in (
                "SELECT * FROM sqlanon.captured",
                "SELECT * FROM sqlanon.capture_sources",
                "INSERT INTO sqlanon.captured (relid, record_key) VALUES (1, '1')",
                "SELECT sqlanon.capture_trigger()",
                "SELECT sqlanon.capture_changes('people', 'id')",
                "SELECT sqlanon.stop_capture('people')",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    as_role(db, role, statement)
        # nor put the trigger function on a table of its own
        as_role(db, writer, "CREATE TABLE mine (id integer)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            as_role(
                db,
                writer,
                "CREATE TRIGGER t AFTER DELETE ON mine REFERENCING OLD TABLE AS sqlanon_old "
                "FOR EACH STATEMENT EXECUTE FUNCTION sqlanon.capture_trigger()",
            )
        # An owner may put it on its own table, where it records nothing (not registered),
        # and may not turn capture on or off for a table it does not own.
        as_role(db, owner, "CREATE TABLE theirs (id integer)")
        as_role(
            db,
            owner,
            "CREATE TRIGGER t AFTER DELETE ON theirs REFERENCING OLD TABLE AS sqlanon_old "
            "FOR EACH STATEMENT EXECUTE FUNCTION sqlanon.capture_trigger()",
        )
        as_role(db, owner, "INSERT INTO theirs VALUES (7)")
        as_role(db, owner, "DELETE FROM theirs")
        for statement in (
            "SELECT sqlanon.capture_changes('people', 'id')",
            "SELECT sqlanon.stop_capture('people')",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only the owner") as e:
                as_role(db, owner, statement)
            assert "1000" not in str(e.value)
        assert db.execute("SELECT count(*) FROM sqlanon.captured").fetchone() == (25,)
        # An owner captures and releases its own table with an owner's rights only.
        as_role(db, owner, "CREATE TABLE own (" + COLUMNS + ")")
        as_role(db, owner, "INSERT INTO own SELECT * FROM people WHERE id <= 30")
        as_role(db, owner, "SELECT sqlanon.capture_changes('own', 'id')")
        own_release = (
            "SELECT sqlanon.release_ke('own', 'own_fam', key => 'id', sensitive => 'salary', "
            "quasi => ARRAY['age', 'sex'], k => 3, e => 10)"
        )
        as_role(db, owner, own_release)
        as_role(db, owner, "DELETE FROM own WHERE id <= 3")
        as_role(db, owner, own_release)
        assert db.execute(
            "SELECT version, (metrics ->> 'deleted')::int FROM sqlanon.releases "
            "WHERE family = 'own_fam' ORDER BY 1"
        ).fetchall() == [(1, 0), (2, 3)]
        assert db.execute(
            "SELECT count(*) FROM sqlanon.captured WHERE relid = 'own'::regclass"
        ).fetchone() == (0,)
        assert db.execute(
            "SELECT count(*) FROM sqlanon.capture_marks WHERE family = 'own_fam'"
        ).fetchone() == (2,)
        # The next release reads the deleted records from the capture.
        summary = sqlanon.release_ke(
            db, "people", "fam", key="id", sensitive="salary", quasi=["age", "sex"], k=3, e=10
        )
        assert summary["deleted"] == 24 and used == [("people", True)]
        assert db.execute("SELECT count(*) FROM sqlanon.captured").fetchone() == (0,)
        stopped = db.execute("SELECT sqlanon.stop_capture('people')").fetchone()[0]
        assert stopped == {"source": "public.people", "capturing": False, "stopped": True}
        assert db.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'people'::regclass"
        ).fetchone() == (0,)
    finally:
        db.execute("DROP TABLE IF EXISTS mine, theirs, own")
        db.execute("DROP VIEW IF EXISTS own_fam")
        for role in (writer, owner):
            db.execute(sql.SQL("DROP OWNED BY {}").format(ident(role)))
            db.execute(sql.SQL("DROP ROLE {}").format(ident(role)))


# --- Falling back ---------------------------------------------------------------------------


def test_a_release_falls_back_to_the_full_pass_whenever_capture_may_have_missed_a_change(
    db: Any, used: list[tuple[str, bool]]
) -> None:
    a, b = "cap", "full"
    make_twins(db, a, b, 1, 40)
    alike(release(db, a), release(db, b))

    def step(change: str, *, expected: bool) -> None:
        for table in (a, b):
            db.execute(sql.SQL(change).format(ident(table)))
        used.clear()
        alike(release(db, a), release(db, b))
        same(db, a, b)
        assert [took for table, took in used if table == a] == [expected], change

    # turned on after the family's last version: that version has no mark
    sqlanon.capture_changes(db, a, key="id")
    step("DELETE FROM {} WHERE id <= 2", expected=False)
    step("DELETE FROM {} WHERE id BETWEEN 3 AND 4", expected=True)
    # a TRUNCATE (the table refilled)
    for table in (a, b):
        db.execute(sql.SQL("TRUNCATE {}").format(ident(table)))
        add(db, table, 1, 40)
    step("DELETE FROM {} WHERE id = 5", expected=False)
    step("DELETE FROM {} WHERE id = 6", expected=True)
    # stopped and started again between two versions
    sqlanon.stop_capture(db, a)
    sqlanon.capture_changes(db, a, key="id")
    step("DELETE FROM {} WHERE id = 7", expected=False)
    # the triggers disabled then enabled: capture_changes starts a new capture
    db.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER sqlanon_capture_delete").format(ident(a)))
    step("DELETE FROM {} WHERE id = 8", expected=False)
    assert sqlanon.capture_changes(db, a, key="id")["started"] is True
    step("DELETE FROM {} WHERE id = 9", expected=False)
    step("DELETE FROM {} WHERE id = 10", expected=True)
    # the key's type changed
    for table in (a, b):
        db.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN id TYPE bigint").format(ident(table)))
    step("DELETE FROM {} WHERE id = 11", expected=False)
    step("DELETE FROM {} WHERE id = 12", expected=True)
    # capture off: the full pass, and nothing left behind
    sqlanon.stop_capture(db, a)
    step("DELETE FROM {} WHERE id = 13", expected=False)
    assert db.execute("SELECT count(*) FROM sqlanon.capture_sources").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM sqlanon.captured").fetchone() == (0,)


def test_capture_refuses_what_its_triggers_would_not_see_whole(db: Any) -> None:
    db.execute("CREATE TABLE parent (id integer, age integer)")
    db.execute("CREATE TABLE child () INHERITS (parent)")
    db.execute("CREATE VIEW v AS SELECT * FROM parent")
    for table in ("parent", "child"):
        with pytest.raises(ConfigError, match="only plain tables"):
            sqlanon.capture_changes(db, table, key="id")
    with pytest.raises(ConfigError, match="not a table"):
        sqlanon.capture_changes(db, "v", key="id")
    db.execute("CREATE TABLE t (id integer)")
    with pytest.raises(ConfigError, match="name the key column"):
        sqlanon.capture_changes(db, "t")


def test_duckdb_refuses_change_capture() -> None:
    con = duckdb.connect()
    sqlanon.install(con)
    con.execute("CREATE TABLE t (id INTEGER)")
    for call in (
        lambda: sqlanon.capture_changes(con, "t", key="id"),
        lambda: sqlanon.stop_capture(con, "t"),
    ):
        with pytest.raises(ConfigError, match="needs PostgreSQL triggers; DuckDB reads the whole"):
            call()


@pytest.mark.parametrize(
    ("key_type", "key_of"),
    [
        ("text", "'k' || i"),
        ("timestamp", "timestamp '2020-01-01' + i * interval '1 hour'"),
        ("numeric(12, 2)", "i + 0.5"),
        ("char(8)", "'c' || i"),
    ],
)
def test_keys_of_other_types_read_back_as_the_members_keys(
    db: Any, used: list[tuple[str, bool]], key_type: str, key_of: str
) -> None:
    """A key captured as JSON writes it (a statement of a few rows) or as its cast does
    (more than 10) reads back as the text sqlanon.members holds."""
    for table in ("ka", "kb"):
        db.execute(
            sql.SQL(
                "CREATE TABLE {} (id " + key_type + " PRIMARY KEY, age integer, sex text, "
                "salary integer)"
            ).format(ident(table))
        )
        db.execute(
            sql.SQL(
                "INSERT INTO {} SELECT " + key_of + ", 20 + mod(i * 7, 13), CASE mod(i, 3) "
                "WHEN 0 THEN 'F' ELSE 'M' END, i * 100 FROM generate_series(1, 60) AS i"
            ).format(ident(table))
        )
    sqlanon.capture_changes(db, "ka", key="id")
    alike(release(db, "ka"), release(db, "kb"))
    for change in (
        "DELETE FROM {} WHERE salary <= 300",
        "DELETE FROM {} WHERE salary BETWEEN 1000 AND 2500",
    ):
        for table in ("ka", "kb"):
            db.execute(sql.SQL(change).format(ident(table)))
        used.clear()
        one = release(db, "ka")
        alike(one, release(db, "kb"))
        same(db, "ka", "kb")
        assert isinstance(one, dict) and one["deleted"] > 0
        assert [took for table, took in used if table == "ka"] == [True]
