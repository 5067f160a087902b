"""What a PostgreSQL client sees of sqlanon's SQL functions: one clean ERROR line with
a SQLSTATE per failure, no NOTICE from a release, cancellation by statement_timeout,
``sqlanon.interval`` as real columns, REPEATABLE READ releases, quoted names."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from sqlanon.postgres.install import PostgresInstall, install_postgres, with_prologue

pytestmark = pytest.mark.postgres

RELEASE = (
    "SELECT sqlanon.release_ke('people', 'people_ke', key => 'id', sensitive => 'loss',"
    " quasi => ARRAY['age', 'sex'], k => 3, e => 5)"
)
QUERY = "SELECT sex, SUM(loss) AS total, COUNT(*) AS n FROM people_ke GROUP BY sex ORDER BY sex"


def create_people(conn: Any, rows: int = 240) -> None:
    conn.execute("CREATE TABLE people (id integer, age integer, sex text, loss integer)")
    add_people(conn, rows)


def add_people(conn: Any, rows: int, first: int = 0) -> None:
    conn.execute(
        "INSERT INTO people SELECT g, 20 + g %% 40, CASE WHEN g %% 3 = 0 THEN 'F' ELSE 'M' END,"
        " (g * 7919) %% 500 FROM generate_series(%s::integer, %s::integer) AS g",
        [first, first + rows - 1],
    )


@pytest.fixture
def installed(pg_db: str, pg_python_root: Path) -> PostgresInstall:
    return install_postgres(pg_db, python_root=pg_python_root)


@pytest.fixture
def people(installed: PostgresInstall, pg_conn: Any) -> Any:
    create_people(pg_conn)
    return pg_conn


def failure(conn: Any, statement: str, params: Any = None) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as raised:
        conn.execute(statement, params)
    return raised.value


def assert_clean(error: psycopg.Error, sqlstate: str) -> None:
    """One line, no PL/Python prefix or traceback, no ANSI escapes, the SQLSTATE."""
    diag = error.diag
    assert diag.sqlstate == sqlstate, (diag.sqlstate, diag.message_primary)
    message = diag.message_primary or ""
    assert message and "\n" not in message and "\x1b" not in message, message
    assert "plpy" not in message and "Traceback" not in message, message
    assert diag.message_detail is None and diag.message_hint is None
    context = diag.context or ""
    assert "\n" not in context and "Traceback" not in context and "PL/Python" not in context
    assert context == "" or re.fullmatch(
        r"PL/pgSQL function sqlanon\.[^\n]+ line \d+ at RAISE", context
    )


# --- one clean error line -----------------------------------------------------------------

BAD_CALLS = [
    # (statement, SQLSTATE, a word the message must contain)
    (RELEASE.replace("'people'", "'nobody'"), "42P01", "does not exist"),
    (RELEASE.replace("'loss'", "'salary'"), "42703", "is not in"),
    (RELEASE.replace("k => 3", "k => 1"), "22023", "k must be"),
    (RELEASE.replace("k => 3", "k => 100000"), "22000", "k=100000"),
    ("SELECT sqlanon.audit('no_family')", "22023", "no_family"),
    ("SELECT sqlanon.audit('no_family', true)", "22023", "no_family"),
    ("SELECT sqlanon.erase('people')", "22023", "never released"),
    ("SELECT sqlanon.load_hierarchies('people', '/no/such/folder')", "22023", "folder"),
    ("SELECT sqlanon.hierarchy_widths('people', 'age', ARRAY[-1.0])", "22023", "width"),
    ("SELECT sqlanon.interval_sql('SELECT SUM(loss) FROM people_ke WHERE ((')", "0A000", "parse"),
    ("SELECT sqlanon.rewrite('SELECT SUM(loss) FROM people')", "0A000", "release"),
    ("SELECT * FROM sqlanon.interval_json('SELECT SUM(loss) FROM people')", "0A000", "release"),
    ("SELECT sqlanon.interval_columns('SELECT * FROM people_ke')", "0A000", "SELECT *"),
]


@pytest.mark.parametrize(("statement", "sqlstate", "word"), BAD_CALLS)
def test_every_function_fails_with_one_clean_line_and_a_sqlstate(
    people: Any, statement: str, sqlstate: str, word: str
) -> None:
    if "people_ke" in statement and "release_ke" not in statement:
        people.execute(RELEASE)
    error = failure(people, statement)
    assert_clean(error, sqlstate)
    assert word.lower() in (error.diag.message_primary or "").lower()


def test_sqlglots_underlined_parse_errors_lose_their_ansi_codes(people: Any) -> None:
    import sqlglot

    broken = "SELECT SUM(loss) FROM people_ke WHERE age = = 3"
    with pytest.raises(sqlglot.errors.ParseError) as raw:
        sqlglot.parse_one(broken, read="postgres")
    assert "\x1b[4m" in str(raw.value)  # what used to reach clients
    people.execute(RELEASE)
    assert_clean(failure(people, "SELECT sqlanon.interval_sql(%s)", [broken]), "0A000")


def test_sql_errors_keep_their_sqlstate_and_privileges_still_apply(people: Any, pg_db: str) -> None:
    name = f"t_analyst_{uuid.uuid4().hex[:8]}"
    people.execute(
        sql.SQL("CREATE ROLE {} LOGIN IN ROLE sqlanon_analyst").format(sql.Identifier(name))
    )
    try:
        people.execute(RELEASE)
        with psycopg.connect(make_conninfo(pg_db, user=name), autocommit=True) as analyst:
            assert_clean(failure(analyst, RELEASE), "42501")  # no EXECUTE on release_ke
            assert_clean(  # SECURITY INVOKER: the analyst cannot read the source
                failure(analyst, "SELECT sqlanon.erase('people')"), "42501"
            )
            rows = analyst.execute("SELECT * FROM sqlanon.interval_json(%s)", [QUERY]).fetchall()
            assert [r[0]["sex"] for r in rows] == ["F", "M"]
    finally:
        people.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        people.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_a_bug_shows_its_type_and_place_but_not_its_text(
    installed: PostgresInstall, pg_conn: Any
) -> None:
    body = with_prologue(
        "CREATE FUNCTION public.buggy() RETURNS text LANGUAGE plpython3u AS $py$\n"
        "# sqlanon: prologue\n"
        "from sqlanon.postgres import server\n"
        "def buggy(plpy):\n"
        "    raise ValueError('Jane Roe earns 4321')\n"
        "return server._reported(buggy)(plpy)\n"
        "$py$",
        installed.python_dir,
        installed.deps_dir,
    )
    pg_conn.execute(body)
    error = failure(pg_conn, "SELECT public.buggy()")
    assert error.diag.sqlstate == "XX000"
    message = error.diag.message_primary or ""
    assert "internal error in sqlanon.buggy: ValueError" in message and "report" in message
    assert "Jane" not in message and "4321" not in message


def test_a_release_audit_and_interval_send_no_notice(people: Any) -> None:
    notices: list[str] = []
    people.add_notice_handler(lambda diag: notices.append(str(diag.message_primary)))
    people.execute(RELEASE)
    add_people(people, rows=60, first=240)
    people.execute("DELETE FROM people WHERE id < 5")
    people.execute(RELEASE)  # a second version: ghosts, temp tables dropped and refilled
    people.execute("SELECT sqlanon.audit('people_ke', true)")
    people.execute("SELECT * FROM sqlanon.interval_json(%s)", [QUERY])
    people.execute("SELECT sqlanon.interval_columns(%s)", [QUERY])
    assert notices == []


# --- cancellation --------------------------------------------------------------------------


def big_query(offset: int, terms: int = 2400) -> str:
    """A query the rewriter needs about a second for (distinct per offset: no cache)."""
    ors = " OR ".join(f"age = {offset + i}" for i in range(terms))
    return f"SELECT SUM(loss) FROM people_ke WHERE {ors}"  # noqa: S608


def test_statement_timeout_stops_a_long_rewrite_early(people: Any) -> None:
    people.execute(RELEASE)
    full = []
    for offset in (100_000, 200_000):
        start = time.monotonic()
        people.execute("SELECT sqlanon.interval_sql(%s)", [big_query(offset)])
        full.append(time.monotonic() - start)
    whole = min(full)
    people.execute(
        "SELECT set_config('statement_timeout', %s, false)", [f"{max(1, int(whole * 100))}ms"]
    )
    stopped = []
    for offset in (300_000, 400_000):
        start = time.monotonic()
        for call in ("SELECT sqlanon.interval_sql(%s)",):
            error = failure(people, call, [big_query(offset)])
            assert_clean(error, "57014")
        stopped.append(time.monotonic() - start)
    # The rewrite checks for a cancel between its steps: it stops well before its end
    # (before, the cancel waited for the whole rewrite).
    assert min(stopped) < 0.8 * whole, (stopped, whole)
    error = failure(people, "SELECT count(*) FROM sqlanon.interval_json(%s)", [big_query(500_000)])
    assert_clean(error, "57014")


# --- interval as real columns ------------------------------------------------------------


def test_interval_returns_real_columns_with_the_listed_names_and_types(people: Any) -> None:
    people.execute(RELEASE)
    columns = people.execute("SELECT sqlanon.interval_columns(%s)", [QUERY]).fetchone()[0]
    assert columns == COLUMNS
    cur = people.execute(f"SELECT * FROM sqlanon.interval(%s) AS t({columns})", [QUERY])  # noqa: S608
    names = [c.name for c in cur.description or []]
    assert names == [c.split()[0] for c in COLUMNS.split(", ")]
    rows = cur.fetchall()
    as_json = [r[0] for r in people.execute("SELECT * FROM sqlanon.interval_json(%s)", [QUERY])]
    assert [{k: _plain(v) for k, v in zip(names, r, strict=True)} for r in rows] == [
        {k: _plain(j[k]) for k in names} for j in as_json
    ]
    truth = dict(people.execute("SELECT sex, SUM(loss) FROM people GROUP BY sex").fetchall())
    assert len(rows) == 2 and all(r[1] <= truth[r[0]] <= r[2] for r in rows)
    # The caller's own names are fine; a list that does not fit says what fits.
    renamed = people.execute(
        "SELECT s, lo FROM sqlanon.interval(%s) AS t(s text, lo numeric, hi numeric,"
        " est double precision, n numeric, nl numeric, nh numeric, ne numeric)",
        [QUERY],
    ).fetchall()
    assert renamed == [(r[0], r[1]) for r in rows]
    error = failure(
        people, "SELECT * FROM sqlanon.interval(%s) AS t(sex text, total_low int)", [QUERY]
    )
    assert_clean(error, "42804")
    assert columns in (error.diag.message_primary or "")


COLUMNS = "sex text, total_low numeric, total_high numeric, total_est double precision, n numeric, n_low numeric, n_high numeric, n_est numeric"


def _plain(value: Any) -> Any:
    return round(float(value), 6) if isinstance(value, int | float | Decimal) else value


# --- REPEATABLE READ / SERIALIZABLE ------------------------------------------------------


@pytest.mark.parametrize("level", ["REPEATABLE READ", "SERIALIZABLE"])
def test_a_release_that_cannot_see_another_asks_for_a_retry(
    people: Any, pg_db: str, level: str
) -> None:
    people.execute(RELEASE)
    add_people(people, rows=60, first=240)
    with psycopg.connect(pg_db) as first, psycopg.connect(pg_db) as second:
        # The second transaction's snapshot predates the first release's commit.
        second.execute(f"BEGIN ISOLATION LEVEL {level}")
        second.execute("SELECT count(*) FROM sqlanon.releases")
        first.execute(RELEASE)  # holds the family's lock until it commits
        start = time.monotonic()
        error = failure(second, RELEASE)  # no wait: it could not see the result anyway
        assert time.monotonic() - start < 5
        assert_clean(error, "40001")
        assert level in (error.diag.message_primary or "")
        assert "retry the transaction" in (error.diag.message_primary or "")
        second.rollback()
        first.commit()
        people.execute("INSERT INTO people VALUES (9999, 30, 'F', 7)")
        second.execute(f"BEGIN ISOLATION LEVEL {level}")
        second.execute("SELECT count(*) FROM people")  # sees the new row
        with psycopg.connect(pg_db, autocommit=True) as third:
            third.execute(RELEASE)  # version 3 commits after the second's snapshot
        assert_clean(failure(second, RELEASE), "40001")
        second.rollback()
        # The retry, in a new transaction, publishes the next version.
        second.execute(f"BEGIN ISOLATION LEVEL {level}")
        second.execute("INSERT INTO people VALUES (10000, 31, 'M', 8)")
        assert second.execute(RELEASE).fetchone()[0]["version"] == 4
        second.commit()
    versions = people.execute(
        "SELECT version FROM sqlanon.releases WHERE family = 'people_ke' ORDER BY 1"
    ).fetchall()
    assert versions == [(1,), (2,), (3,), (4,)]


def test_read_committed_releases_still_queue(people: Any, pg_db: str) -> None:
    done: list[int] = []
    with psycopg.connect(pg_db) as first:
        first.execute(RELEASE)
        add_people(people, rows=60, first=240)  # new rows for the second release

        def second() -> None:
            with psycopg.connect(pg_db, autocommit=True) as conn:
                done.append(conn.execute(RELEASE).fetchone()[0]["version"])

        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.5)
        assert done == []  # waiting on the family's lock
        first.commit()
        thread.join(30)
    assert done == [2]


# --- quoted names -------------------------------------------------------------------------


@pytest.fixture
def mixed(installed: PostgresInstall, pg_conn: Any) -> Iterator[Any]:
    pg_conn.execute('CREATE SCHEMA "Clinic"')
    pg_conn.execute(
        'CREATE TABLE "Clinic"."MixedCase" ("Id" integer, "Age" integer, "Sex" text,'
        ' "Loss" integer)'
    )
    pg_conn.execute(
        'INSERT INTO "Clinic"."MixedCase" SELECT g, 20 + g % 40,'
        " CASE WHEN g % 3 = 0 THEN 'F' ELSE 'M' END, (g * 7919) % 500"
        " FROM generate_series(1, 200) AS g"
    )
    yield pg_conn


def release_mixed(conn: Any, source: str, family: str, quasi: str = "'\"Age\"'") -> Any:
    return conn.execute(
        "SELECT sqlanon.release_ke(%s, %s, key => '\"Id\"', sensitive => '\"Loss\"',"  # noqa: S608
        f" quasi => ARRAY[{quasi}], k => 3, e => 5)",
        [source, family],
    ).fetchone()[0]


def test_quoted_names_are_matched_exactly(mixed: Any) -> None:
    summary = release_mixed(mixed, '"Clinic"."MixedCase"', '"MixedFamily"')
    assert summary["table"] == "MixedFamily_v1" and summary["domain"] == "Clinic.MixedCase"
    assert mixed.execute('SELECT count(*) FROM "MixedFamily"').fetchone()[0] == 200
    # Unquoted, the one table matches ignoring case, as do the columns.
    assert release_mixed(mixed, "clinic.mixedcase", "plain", "'age'")["table"] == "plain_v1"
    error = failure(mixed, "SELECT sqlanon.release_ke('\"clinic\".\"mixedcase\"', 'x', key => 'Id',"
                    " sensitive => 'Loss', quasi => ARRAY['Age'])")  # fmt: skip
    assert_clean(error, "42P01")


def test_an_unquoted_name_matching_several_is_refused(mixed: Any) -> None:
    mixed.execute('CREATE TABLE "Clinic".mixedcase AS SELECT * FROM "Clinic"."MixedCase"')
    error = failure(mixed, "SELECT sqlanon.release_ke('Clinic.MixedCase', 'x', key => 'Id',"
                    " sensitive => 'Loss', quasi => ARRAY['Age'])")  # fmt: skip
    assert_clean(error, "42702")
    assert "quote" in (error.diag.message_primary or "")
    mixed.execute('ALTER TABLE "Clinic".mixedcase ADD COLUMN age integer')
    error = failure(mixed, "SELECT sqlanon.release_ke('\"Clinic\".mixedcase', 'x', key => 'Id',"
                    " sensitive => 'Loss', quasi => ARRAY['age'])")  # fmt: skip
    assert_clean(error, "42702")
    assert release_mixed(mixed, '"Clinic"."mixedcase"', "lower", "'\"age\"'")["version"] == 1
