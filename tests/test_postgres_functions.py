"""sqlanon's SQL functions on a real PostgreSQL server: releases, audit and interval
answers through ``sqlanon.*`` (PL/Python calling the shared core), the caller's
transaction, concurrent releases, and what each role may and may not do."""

from __future__ import annotations

import csv
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest
from psycopg import errors, sql
from psycopg.conninfo import make_conninfo

import sqlanon
from sqlanon.errors import PermissionDeniedError
from sqlanon.postgres.install import PostgresInstall, install_postgres

pytestmark = [pytest.mark.postgres, pytest.mark.slow]  # slow: handed out first (conftest)

DATA = Path(sqlanon.__file__).resolve().parent / "data"
INT_COLUMNS = {"id", "age", "education_num", "capital_gain", "capital_loss", "hours_per_week"}
RELEASE_KE = (
    "SELECT sqlanon.release_ke('public.adult', 'adult_ke', key => 'id', "
    "sensitive => 'capital_loss', quasi => ARRAY['age', 'sex'], k => 5, e => 20)"
)
QUERY = "SELECT sex, SUM(capital_loss) AS loss, COUNT(*) AS n FROM adult_ke GROUP BY sex"


def adult_rows() -> tuple[list[str], list[list[Any]]]:
    with (DATA / "adult_capital_loss.csv").open() as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [
            [int(v) if h in INT_COLUMNS else v for h, v in zip(header, r, strict=True)]
            for r in reader
        ]
    return header, rows


def create_adult(conn: Any, rows: list[list[Any]], table: str = "adult") -> None:
    header, _ = adult_rows()
    spec = ", ".join(f"{h} {'integer' if h in INT_COLUMNS else 'text'}" for h in header)
    conn.execute(f"CREATE TABLE {table} ({spec})")
    add_adult(conn, rows, table)


def add_adult(conn: Any, rows: list[list[Any]], table: str = "adult") -> None:
    with conn.cursor().copy(f"COPY {table} FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


@pytest.fixture
def installed(pg_db: str, pg_python_root: Path) -> PostgresInstall:
    return install_postgres(pg_db, python_root=pg_python_root)


@pytest.fixture
def adult(installed: PostgresInstall, pg_conn: Any) -> Any:
    """The fresh database with sqlanon installed and the first 1,000 Adult records."""
    create_adult(pg_conn, adult_rows()[1][:1000])
    return pg_conn


def one(conn: Any, query: str, params: Any = None) -> Any:
    return conn.execute(query, params).fetchone()[0]


def relations(conn: Any) -> list[tuple[str, str]]:
    return conn.execute(
        "SELECT table_schema, table_name FROM information_schema.tables"
        " WHERE table_schema IN ('public', 'sqlanon', 'sqlanon_bounds') ORDER BY 1, 2"
    ).fetchall()


def catalog_counts(conn: Any) -> tuple[int, int]:
    return conn.execute(
        "SELECT (SELECT count(*) FROM sqlanon.releases), (SELECT count(*) FROM sqlanon.members)"
    ).fetchone()


# --- releases --------------------------------------------------------------------------


def test_release_ke_twice_with_an_append_matches_duckdb_in_shape(adult: Any) -> None:
    first = one(adult, RELEASE_KE)
    assert first["version"] == 1 and first["table"] == "adult_ke_v1"
    assert first["rows_published"] + first["held_back"] == 1000
    add_adult(adult, adult_rows()[1][1000:])
    second = one(adult, RELEASE_KE)
    assert second["version"] == 2 and second["source_rows"] == 1427
    assert [a["exposed"] for a in one(adult, "SELECT sqlanon.audit('adult_ke')")] == [0, 0]
    audit = one(adult, "SELECT sqlanon.audit('adult_ke', true)")
    assert [a["records"]["exposed"] for a in audit] == [[], []]
    assert "records" not in one(adult, "SELECT sqlanon.audit('adult_ke', false)")[0]

    duck = duckdb.connect()
    sqlanon.install(duck)
    header, rows = adult_rows()
    types = ", ".join(f"{h} {'INTEGER' if h in INT_COLUMNS else 'VARCHAR'}" for h in header)
    duck.execute(f"CREATE TABLE adult ({types})")
    duck.executemany(f"INSERT INTO adult VALUES ({', '.join('?' * len(header))})", rows)
    duck.execute(
        "SELECT sqlanon_release_ke('adult', 'adult_ke', key := 'id', sensitive := "
        "'capital_loss', quasi := ['age', 'sex'], k := 5, e := 20)"
    )

    def columns(con: Any, schema: str, table: str) -> list[str]:
        placeholder = "%s" if con is adult else "?"
        found = con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = "
            f"{placeholder} AND table_name = {placeholder} ORDER BY ordinal_position",
            [schema, table],
        ).fetchall()
        return [c[0] for c in found]

    for schema, pg_schema, table in [
        ("main", "public", "adult_ke_v1"),
        ("main", "public", "adult_ke"),
        ("sqlanon", "sqlanon_bounds", "adult_ke_v1_bounds"),
        ("sqlanon", "sqlanon", "releases"),
        ("sqlanon", "sqlanon", "members"),
    ]:
        assert columns(adult, pg_schema, table) == columns(duck, schema, table), table
    assert columns(adult, "public", "adult_ke_v1") == ["age", "sex", "group_id", "capital_loss"]
    assert one(adult, "SELECT count(*) FROM adult_ke") == second["rows_published"]
    pg_release = adult.execute(
        "SELECT parameters::text FROM sqlanon.releases WHERE version = 1"
    ).fetchone()[0]
    duck_release = duck.execute("SELECT CAST(parameters AS VARCHAR) FROM sqlanon.releases")
    duck_parameters = json.loads(duck_release.fetchone()[0])
    duck.close()
    assert json.loads(pg_release) == {
        **duck_parameters,
        "source": "public.adult",
        "schema": "public",
        "released_by": one(adult, "SELECT CAST(current_user AS text)"),
    }


def test_release_lands_in_the_callers_current_schema_and_restores_its_path(adult: Any) -> None:
    adult.execute("CREATE SCHEMA mart")
    adult.execute("SET search_path TO mart, public")
    summary = one(adult, RELEASE_KE)
    assert summary["version"] == 1
    assert one(adult, "SHOW search_path") == "mart, public"
    assert ("mart", "adult_ke_v1") in [  # a view of the family's rows
        tuple(r) for r in adult.execute("SELECT schemaname, viewname FROM pg_views").fetchall()
    ]
    adult.execute("SET search_path TO mart")  # the unqualified source is looked up in mart
    with pytest.raises(errors.UndefinedTable, match="looked in schema"):
        adult.execute(RELEASE_KE.replace("'public.adult'", "'adult'"))


def test_release_raises_work_mem_only_while_it_runs(adult: Any) -> None:
    adult.execute("SET work_mem = '1MB'")
    assert one(adult, RELEASE_KE)["version"] == 1
    assert one(adult, "SHOW work_mem") == "1MB"
    with pytest.raises(errors.DataException):
        adult.execute(RELEASE_KE.replace("k => 5", "k => 100000").replace("_ke'", "_big'"))
    assert one(adult, "SHOW work_mem") == "1MB"
    adult.execute("SET work_mem = '1GB'")  # more than a release asks for: left alone
    adult.execute(
        "CREATE FUNCTION pg_temp.release_work_mem() RETURNS text LANGUAGE plpgsql AS $f$"
        " BEGIN PERFORM sqlanon.release_ke('public.adult', 'adult_wm', key => 'id',"
        " sensitive => 'capital_loss', quasi => ARRAY['age'], k => 5, e => 20);"
        " RETURN current_setting('work_mem'); END $f$"
    )
    assert one(adult, "SELECT pg_temp.release_work_mem()") == "1GB"


def test_release_lhd_with_the_bundled_hierarchies(adult: Any, installed: PostgresInstall) -> None:
    folder = installed.python_dir / "sqlanon" / "data" / "hierarchies"
    loaded = one(adult, "SELECT sqlanon.load_hierarchies('adult', %s)", [str(folder)])
    assert "marital-status" in loaded["attributes"] and loaded["rows"] > 0
    widths = one(adult, "SELECT sqlanon.hierarchy_widths('adult', 'hours_per_week', '{10,20}')")
    assert widths["widths"] == [10.0, 20.0]
    summary = one(
        adult,
        "SELECT sqlanon.release_lhd('adult', 'adult_lhd', key => 'id', "
        "quasi => ARRAY['age', 'marital_status', 'hours_per_week'], "
        "sensitive => ARRAY['capital_loss'], l => 3)",
    )
    assert summary["model"] == "lhd" and summary["version"] == 1
    assert summary["rows_published"] + summary["suppressed"] == 1000
    smallest = one(
        adult,
        "SELECT min(d) FROM (SELECT count(DISTINCT capital_loss) AS d FROM adult_lhd"
        " GROUP BY class_id) AS c",
    )
    assert smallest >= 3
    assert [a["exposed"] for a in one(adult, "SELECT sqlanon.audit('adult_lhd')")] == [0]
    types = adult.execute(
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_name = 'adult_lhd_v1' ORDER BY ordinal_position"
    ).fetchall()
    assert types == [
        ("age", "character varying"),
        ("marital_status", "character varying"),
        ("hours_per_week", "character varying"),
        ("capital_loss", "integer"),
        ("class_id", "integer"),
    ]
    # The same release on DuckDB (both on the engine path): the same classes for the
    # same records, the same rows.
    header, rows = adult_rows()
    con = duckdb.connect()
    sqlanon.install(con)
    spec = ", ".join(f"{h} {'INTEGER' if h in INT_COLUMNS else 'VARCHAR'}" for h in header)
    con.execute(f"CREATE TABLE adult ({spec})")
    con.executemany(f"INSERT INTO adult VALUES ({', '.join('?' * len(header))})", rows[:1000])
    sqlanon.load_hierarchies(con, "adult", str(folder))
    sqlanon.hierarchy_widths(con, "adult", "hours_per_week", [10, 20])
    on_duckdb = sqlanon.release_lhd(
        con, "adult", "adult_lhd", key="id", quasi=["age", "marital_status", "hours_per_week"],
        sensitive=["capital_loss"], l=3, )  # fmt: skip
    for k in ("rows_published", "suppressed", "held_back", "groups", "precision_loss", "dm"):
        assert on_duckdb[k] == summary[k], k
    members = "SELECT record_key, status, group_id, cell_id FROM sqlanon.members ORDER BY 1"
    assert con.execute(members).fetchall() == adult.execute(members).fetchall()
    table = "SELECT * FROM adult_lhd_v1"
    assert sorted(con.execute(table).fetchall()) == sorted(adult.execute(table).fetchall())


# --- interval answers ---------------------------------------------------------------------


def test_interval_rows_contain_the_truth_over_published_records(adult: Any) -> None:
    one(adult, RELEASE_KE)
    add_adult(adult, adult_rows()[1][1000:])
    one(adult, RELEASE_KE)
    answers = [r[0] for r in adult.execute("SELECT * FROM sqlanon.interval_json(%s)", [QUERY])]
    truth = dict(
        adult.execute(
            "SELECT a.sex, sum(a.capital_loss) FROM sqlanon.members AS m JOIN adult AS a"
            " ON a.id::text = m.record_key WHERE m.family = 'adult_ke' AND m.version = 2"
            " AND m.status = 'published' GROUP BY a.sex"
        ).fetchall()
    )
    assert {a["sex"] for a in answers} == set(truth) == {"Male", "Female"}
    for answer in answers:
        assert answer["loss_low"] <= truth[answer["sex"]] <= answer["loss_high"]
        assert answer["n"] == one(
            adult, "SELECT count(*) FROM adult_ke WHERE sex = %s", [answer["sex"]]
        )
    text = one(adult, "SELECT sqlanon.interval_sql(%s)", [QUERY])
    assert '"adult_ke_v2"' in text and '"sqlanon_bounds"."adult_ke_v2_bounds"' in text
    assert "members" not in text and '"adult"' not in text
    assert one(adult, "SELECT sqlanon.rewrite(%s, 'duckdb')", [QUERY]).startswith("WITH")


# --- the caller's transaction and concurrent releases ----------------------------------------


def test_a_rolled_back_release_leaves_nothing(adult: Any) -> None:
    before = relations(adult)
    adult.execute("BEGIN")
    one(adult, RELEASE_KE)
    assert ("public", "adult_ke_v1") in relations(adult)
    adult.execute("ROLLBACK")
    assert relations(adult) == before and catalog_counts(adult) == (0, 0)
    assert one(adult, RELEASE_KE)["version"] == 1  # the family starts again at version 1


def test_an_error_mid_release_leaves_nothing(adult: Any) -> None:
    # The bounds table is written after the release table: make that step fail.
    adult.execute("CREATE TABLE sqlanon_bounds.adult_ke_v1_bounds (x integer)")
    before = relations(adult)
    with pytest.raises(errors.DuplicateTable):
        adult.execute(RELEASE_KE)
    assert relations(adult) == before and catalog_counts(adult) == (0, 0)
    with pytest.raises(errors.DataException):
        adult.execute(RELEASE_KE.replace("k => 5", "k => 100000"))
    assert relations(adult) == before and catalog_counts(adult) == (0, 0)


def test_concurrent_releases_of_one_family_are_serialized(adult: Any, pg_db: str) -> None:
    with psycopg.connect(pg_db) as first:  # not autocommit: the release stays open
        assert one(first, RELEASE_KE)["version"] == 1
        done: dict[str, Any] = {}

        def second_release() -> None:
            with psycopg.connect(pg_db, autocommit=True) as second:
                done["summary"] = one(second, RELEASE_KE)

        thread = threading.Thread(target=second_release)
        thread.start()
        waiting = 0
        for _ in range(300):  # its session first imports sqlanon into PL/Python
            waiting = one(
                adult,
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
            )
            if waiting:
                break
            time.sleep(0.1)
        assert thread.is_alive() and waiting == 1
        first.commit()
        thread.join(timeout=60)
    # it waited for the first to commit, then found nothing new: no second version
    assert done["summary"]["version"] == 1 and done["summary"]["unchanged"] is True
    assert adult.execute("SELECT version FROM sqlanon.releases ORDER BY 1").fetchall() == [(1,)]


# --- roles ----------------------------------------------------------------------------------


@pytest.fixture
def roles(adult: Any, pg_db: str) -> Iterator[dict[str, str]]:
    """Login roles: a data owner (member of sqlanon_owner, granted the source and CREATE
    on public by the administrator) and an analyst (member of sqlanon_analyst)."""
    suffix = uuid.uuid4().hex[:8]
    names = {"owner": f"t_owner_{suffix}", "analyst": f"t_analyst_{suffix}"}
    adult.execute(
        sql.SQL("CREATE ROLE {} LOGIN IN ROLE sqlanon_owner").format(sql.Identifier(names["owner"]))
    )
    adult.execute(
        sql.SQL("CREATE ROLE {} LOGIN IN ROLE sqlanon_analyst").format(
            sql.Identifier(names["analyst"])
        )
    )
    adult.execute(sql.SQL("GRANT SELECT ON adult TO sqlanon_owner"))
    adult.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO sqlanon_owner"))
    try:
        yield {role: make_conninfo(pg_db, user=name) for role, name in names.items()}
    finally:
        for name in names.values():
            adult.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            adult.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_install_creates_the_roles_and_revokes_public_execute(adult: Any) -> None:
    found = adult.execute(
        "SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname IN ('sqlanon_owner', 'sqlanon_analyst') ORDER BY 1"
    ).fetchall()
    assert found == [("sqlanon_analyst", False), ("sqlanon_owner", False)]
    public = adult.execute(
        "SELECT p.proname FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace"
        " WHERE n.nspname = 'sqlanon' AND has_function_privilege('public', p.oid, 'EXECUTE')"
    ).fetchall()
    assert public == []
    analyst = adult.execute(
        "SELECT p.proname FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace"
        " WHERE n.nspname = 'sqlanon'"
        " AND has_function_privilege('sqlanon_analyst', p.oid, 'EXECUTE') ORDER BY 1"
    ).fetchall()
    assert [r[0] for r in analyst] == [
        "_interval_columns",
        "_interval_json",
        "_rewrite",
        "interval",
        "interval_columns",
        "interval_json",
        "interval_sql",
        "release_catalog",
        "release_hierarchies",
        "rewrite",
    ]
    definers = adult.execute(
        "SELECT p.proname, p.proconfig FROM pg_proc AS p"
        " JOIN pg_namespace AS n ON n.oid = p.pronamespace"
        " WHERE n.nspname = 'sqlanon' AND p.prosecdef ORDER BY 1"
    ).fetchall()
    assert definers == [
        ("capture_trigger", ["search_path=pg_catalog, pg_temp"]),
        ("release_catalog", ["search_path=pg_catalog, pg_temp"]),
        ("release_hierarchies", ["search_path=pg_catalog, pg_temp"]),
    ]


def test_owner_releases_and_analyst_reads_only_what_was_published(
    adult: Any, roles: dict[str, str]
) -> None:
    with psycopg.connect(roles["owner"], autocommit=True) as owner:
        assert one(owner, RELEASE_KE)["version"] == 1
        assert [a["exposed"] for a in one(owner, "SELECT sqlanon.audit('adult_ke')")] == [0]
    with psycopg.connect(roles["analyst"], autocommit=True) as analyst:
        released = one(analyst, "SELECT count(*) FROM adult_ke_v1")
        assert released == one(analyst, "SELECT count(*) FROM adult_ke") > 0
        group_sizes = 'SELECT sum(n) FROM (SELECT DISTINCT group_id, n FROM sqlanon_bounds."adult_ke_v1_bounds") g'
        assert one(analyst, group_sizes) == released
        answers = [
            r[0] for r in analyst.execute("SELECT * FROM sqlanon.interval_json(%s)", [QUERY])
        ]
        assert sum(a["n"] for a in answers) == released
        columns = one(analyst, "SELECT sqlanon.interval_columns(%s)", [QUERY])
        rows = analyst.execute(
            f"SELECT sex, loss_low, loss_high, n FROM sqlanon.interval(%s) AS t({columns})",  # noqa: S608
            [QUERY],
        ).fetchall()
        assert rows == [(a["sex"], a["loss_low"], a["loss_high"], a["n"]) for a in answers]
        catalog = analyst.execute("SELECT * FROM sqlanon.release_catalog()").fetchall()
        assert catalog == [
            (
                "adult_ke",
                1,
                "adult_ke_v1",
                "ke",
                ["age", "sex"],
                "capital_loss",
                0,
                [],
                "public",
                False,
            )
        ]

        refused = [
            "SELECT * FROM adult",
            "SELECT * FROM public.adult",
            "SELECT * FROM sqlanon.members",
            "SELECT * FROM sqlanon.cells",
            "SELECT * FROM sqlanon.releases",
            "SELECT * FROM sqlanon.hierarchies",
            RELEASE_KE,
            "SELECT sqlanon.audit('adult_ke')",
            "SELECT sqlanon.audit('adult_ke', true)",
            "SELECT sqlanon._release_ke('public', 'adult', 'x', 'id', 'capital_loss',"
            " ARRAY['age'], 5, 20, 'auto', NULL)",
            "SELECT sqlanon.load_hierarchies('adult', '/etc')",
        ]
        for query in refused:
            with pytest.raises(errors.InsufficientPrivilege):
                analyst.execute(query)
        with pytest.raises(errors.FeatureNotSupported):
            analyst.execute(
                "SELECT * FROM sqlanon.interval_json('SELECT SUM(capital_loss) FROM public.adult')"
            )
        # A bug in the rewriter could not help either: its SQL runs with these rights.
        with pytest.raises(errors.InsufficientPrivilege):
            analyst.execute("SELECT sum(capital_loss) FROM adult")


LHD_QUERY = (
    "SELECT marital_status, COUNT(*) AS n, SUM(capital_loss) AS loss FROM adult_lhd"
    " WHERE age > 30 AND hours_per_week >= 40 GROUP BY marital_status"
)


def test_analyst_interval_over_an_lhd_release_contains_the_truth(
    adult: Any, roles: dict[str, str], installed: PostgresInstall
) -> None:
    folder = installed.python_dir / "sqlanon" / "data" / "hierarchies"
    one(adult, "SELECT sqlanon.load_hierarchies('adult', %s)", [str(folder)])
    one(adult, "SELECT sqlanon.hierarchy_widths('adult', 'hours_per_week', '{10,20}')")
    with psycopg.connect(roles["owner"], autocommit=True) as owner:
        one(owner, RELEASE_KE)
        one(
            owner,
            "SELECT sqlanon.release_lhd('adult', 'adult_lhd', key => 'id', "
            "quasi => ARRAY['age', 'marital_status', 'hours_per_week'], "
            "sensitive => ARRAY['capital_loss'], l => 3)",
        )
    truth = {
        label: (n, loss)
        for label, n, loss in adult.execute(
            "SELECT r.marital_status, count(*), sum(a.capital_loss) FROM adult AS a"
            " JOIN sqlanon.members AS m ON m.record_key = a.id::text"
            " AND m.family = 'adult_lhd' AND m.version = 1 AND m.status = 'published'"
            " JOIN (SELECT DISTINCT class_id, marital_status FROM adult_lhd_v1) AS r"
            " ON r.class_id = m.group_id"
            " WHERE a.age > 30 AND a.hours_per_week >= 40 GROUP BY r.marital_status"
        ).fetchall()
    }
    assert truth
    with psycopg.connect(roles["analyst"], autocommit=True) as analyst:
        answers = {
            r[0]["marital_status"]: r[0]
            for r in analyst.execute("SELECT * FROM sqlanon.interval_json(%s)", [LHD_QUERY])
        }
        assert set(truth) <= set(answers)
        for label, answer in answers.items():
            n, loss = truth.get(label, (0, 0))
            assert answer["n_low"] <= n <= answer["n_high"], (label, answer)
            if answer["loss_low"] is None:
                assert loss == 0, (label, answer)
            else:
                assert answer["loss_low"] <= loss <= answer["loss_high"], (label, answer)
        assert any(a["n_low"] < a["n_high"] for a in answers.values())  # WHERE was uncertain

        # What the definer function shows: the lHD release's quasi columns' hierarchies
        # (ARX rows for age and marital_status, the widths spec for hours_per_week),
        # not education's, not the (k,e) release's, no parameters.
        shown = analyst.execute("SELECT * FROM sqlanon.release_hierarchies()").fetchall()
        assert {(t, c) for t, c, *_ in shown} == {
            ("adult_lhd_v1", "age"),
            ("adult_lhd_v1", "marital_status"),
            ("adult_lhd_v1", "hours_per_week"),
        }
        assert [r[5] for r in shown if r[1] == "hours_per_week"] == [[10.0, 20.0]]
        assert all(r[5] is None for r in shown if r[1] != "hours_per_week")
        # The same domains as on DuckDB, built by the analyst's client.
        from sqlanon.intervals import release_catalog
        from sqlanon.postgres.session import PsycopgSession

        domains = release_catalog(PsycopgSession(analyst))["adult_lhd"].domains
        rows = (DATA / "hierarchies" / "adult_hierarchy_age.csv").read_text().splitlines()
        assert domains["age"].leaves["30-34"] == {r.split(";")[0] for r in rows if ";30-34;" in r}
        assert domains["hours_per_week"].intervals and not domains["hours_per_week"].leaves

        for query in (
            "SELECT * FROM sqlanon.hierarchies",
            "SELECT * FROM sqlanon.hierarchy_widths",
            "SELECT * FROM sqlanon.releases",
            "SELECT * FROM sqlanon.members",
        ):
            with pytest.raises(errors.InsufficientPrivilege):
                analyst.execute(query)


def test_analyst_intervals_over_null_quasi_values_hold_the_truth(
    adult: Any, roles: dict[str, str], installed: PostgresInstall
) -> None:
    """Issue 23, item 6c on PostgreSQL: an lHD release publishes NULL quasi values (a
    branch of their own in each hierarchy), release_catalog() says which columns hold
    them, and the analyst's intervals hold the truth, SQL's NULL logic included."""
    adult.execute(
        "UPDATE adult SET age = NULL WHERE id % 23 = 0 OR (age BETWEEN 40 AND 44 AND id % 3 = 0)"
    )
    adult.execute("UPDATE adult SET sex = NULL WHERE id % 41 = 0")
    folder = installed.python_dir / "sqlanon" / "data" / "hierarchies"
    one(adult, "SELECT sqlanon.load_hierarchies('adult', %s)", [str(folder)])
    with psycopg.connect(roles["owner"], autocommit=True) as owner:
        summary = one(
            owner,
            "SELECT sqlanon.release_lhd('adult', 'adult_lhd', key => 'id', "
            "quasi => ARRAY['age', 'sex'], sensitive => ARRAY['capital_loss'], l => 3)",
        )
    assert summary["null_quasi"] == ["age", "sex"]
    published = (
        "SELECT a.* FROM adult AS a JOIN sqlanon.members AS m ON m.record_key = a.id::text"
        " AND m.family = 'adult_lhd' AND m.version = 1 AND m.status = 'published'"
    )
    with psycopg.connect(roles["analyst"], autocommit=True) as analyst:
        catalog = analyst.execute("SELECT * FROM sqlanon.release_catalog()").fetchall()
        assert catalog[0][7] == ["age", "sex"]
        for where in ["age IS NULL", "NOT (age > 40)", "sex IS NULL OR age < 30", "sex <> 'Male'"]:
            n, loss = adult.execute(
                f"SELECT count(*), coalesce(sum(capital_loss), 0) FROM ({published}) AS p"  # noqa: S608
                f" WHERE {where}"
            ).fetchone()
            query = f"SELECT COUNT(*) AS n, SUM(capital_loss) AS loss FROM adult_lhd WHERE {where}"
            (answer,) = [r[0] for r in analyst.execute(
                "SELECT * FROM sqlanon.interval_json(%s)", [query]
            )]  # fmt: skip
            assert answer["n_low"] <= n <= answer["n_high"], (where, n, answer)
            assert (answer["loss_low"] or 0) <= loss <= (answer["loss_high"] or 0), (where, answer)


def test_releases_by_another_owner_role_are_readable_too(adult: Any, roles: dict[str, str]) -> None:
    one(adult, RELEASE_KE)  # the administrator releases; the grants go to the analysts
    with psycopg.connect(roles["analyst"], autocommit=True) as analyst:
        assert one(analyst, "SELECT count(*) FROM adult_ke") > 0


def test_a_source_the_owner_may_not_read_is_refused_as_insufficient_privilege(
    adult: Any, roles: dict[str, str]
) -> None:
    """Issue 23, item 6a: information_schema hides tables the caller holds no privilege
    on, so such a source was reported as 42P01 (does not exist). Now 42501, as
    PostgreSQL itself says it: by table in a schema the caller may use, by schema
    otherwise (whether the table exists there or not)."""
    adult.execute("CREATE TABLE private_people (id integer, age integer, loss integer)")
    adult.execute("CREATE SCHEMA closed")
    adult.execute("CREATE TABLE closed.people (id integer, age integer, loss integer)")
    release = (
        "SELECT sqlanon.release_ke(%s, 'fam', key => 'id', sensitive => 'loss',"
        " quasi => ARRAY['age'], k => 2, e => 1)"
    )
    with psycopg.connect(roles["owner"], autocommit=True) as owner:
        for source in ["private_people", "public.PRIVATE_PEOPLE", "closed.people", "closed.none"]:
            with pytest.raises(errors.InsufficientPrivilege) as raised:
                owner.execute(release, [source])
            message = raised.value.diag.message_primary or ""
            assert repr(source) in message and "may not" in message, message
            assert ("may not use" in message) == source.startswith("closed."), message
        with pytest.raises(errors.UndefinedTable, match="does not exist"):
            owner.execute(release, ["no_such_table"])
        # The client-side API says the same.
        with pytest.raises(PermissionDeniedError, match="may not read"):
            sqlanon.release_ke(
                owner, "private_people", "fam", key="id", sensitive="loss", quasi=["age"],
                k=2, e=1,
            )  # fmt: skip
        assert one(owner, "SELECT count(*) FROM sqlanon.releases") == 0


@pytest.fixture
def server_folder() -> Iterator[Path]:
    """A folder the server's OS user can list and read (pytest's tmp_path is private to
    the test's user), removed after the test."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="sqlanon_hier_"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in folder.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder)


def test_load_hierarchies_reads_only_the_named_files_of_the_folder(
    adult: Any, roles: dict[str, str], server_folder: Path
) -> None:
    """Issue 23, item 4: the dataset was a glob pattern ('*' loaded another tenant's file,
    '**/tenantB' searched subfolders) and the errors told a missing folder from one the
    server cannot read."""
    shared = server_folder / "shared"
    (shared / "nested").mkdir(parents=True)
    (shared / "tenantA_hierarchy_sex.csv").write_text("F;*\nM;*\n")
    (shared / "tenantB_hierarchy_sex.csv").write_text("f;*\nm;*\n")
    (shared / "nested" / "tenantB_hierarchy_age.csv").write_text("1;*\n")
    (server_folder / "empty").mkdir()
    (server_folder / "locked").mkdir()
    (server_folder / "locked" / "tenantA_hierarchy_sex.csv").write_text("F;*\nM;*\n")
    (server_folder / "locked").chmod(0o000)
    for path in [shared, shared / "nested", server_folder / "empty"]:
        path.chmod(0o755)
    load = "SELECT sqlanon.load_hierarchies(%s, %s)"
    with psycopg.connect(roles["owner"], autocommit=True) as owner:
        for dataset in ["*", "**/tenantB", "tenant?", "../shared/tenantB", ".", "a/b"]:
            with pytest.raises(errors.InvalidParameterValue, match="letters, digits, _ and -"):
                owner.execute(load, [dataset, str(shared)])
        messages = set()
        for folder in ["missing", "locked", "empty", "shared/tenantA_hierarchy_sex.csv"]:
            with pytest.raises(errors.InvalidParameterValue) as raised:
                owner.execute(load, ["tenantA", str(server_folder / folder)])
            text = raised.value.diag.message_primary or ""
            messages.add(text.replace(str(server_folder / folder), "<folder>"))
        assert len(messages) == 1, messages
        assert one(owner, "SELECT count(*) FROM sqlanon.hierarchies") == 0
        loaded = one(owner, load, ["tenantA", str(shared)])
        assert loaded["attributes"] == ["sex"] and loaded["rows"] == 4
        assert owner.execute(
            "SELECT DISTINCT dataset, value FROM sqlanon.hierarchies ORDER BY 2"
        ).fetchall() == [("tenantA", "F"), ("tenantA", "M")]


# --- injection -------------------------------------------------------------------------------


INJECTIONS = [
    ("source", 'x"; DROP TABLE adult; --'),
    ("source", "adult; DROP TABLE adult"),
    ("family", 'f"; DROP TABLE adult; --'),
    ("family", "f; DROP TABLE adult"),
    ("key", 'id"; DROP TABLE adult; --'),
    ("sensitive", "capital_loss) FROM adult; DROP TABLE adult; --"),
    ("quasi", 'age", (SELECT 1); DROP TABLE adult; --'),
]


@pytest.mark.parametrize(("argument", "value"), INJECTIONS)
def test_injection_through_names_is_refused(adult: Any, argument: str, value: str) -> None:
    arguments = {
        "source": "adult",
        "family": "adult_ke",
        "key": "id",
        "sensitive": "capital_loss",
        "quasi": ["age", "sex"],
    }
    arguments[argument] = [value] if argument == "quasi" else value
    refusals = (errors.InvalidParameterValue, errors.UndefinedTable, errors.UndefinedColumn)
    with pytest.raises(refusals):
        adult.execute(
            "SELECT sqlanon.release_ke(%(source)s, %(family)s, key => %(key)s, "
            "sensitive => %(sensitive)s, quasi => %(quasi)s::text[], k => 5, e => 20)",
            arguments,
        )
    assert one(adult, "SELECT count(*) FROM adult") == 1000


@pytest.mark.parametrize(
    "query",
    [
        "SELECT SUM(capital_loss) FROM adult_ke; DROP TABLE adult",
        'SELECT SUM(capital_loss) FROM "adult_ke; DROP TABLE adult"',
        "DROP TABLE adult",
        "SELECT SUM(capital_loss) FROM adult",
        "SELECT SUM(capital_loss) FROM adult_ke WHERE age IN (SELECT age FROM adult)",
        'SELECT SUM(capital_loss) FROM adult_ke AS x"; DROP TABLE adult; --',
    ],
)
def test_injection_through_the_interval_query_is_refused(adult: Any, query: str) -> None:
    one(adult, RELEASE_KE)
    with pytest.raises(psycopg.Error) as raised:
        adult.execute("SELECT * FROM sqlanon.interval_json(%s)", [query])
    message = str(raised.value)
    assert isinstance(raised.value, errors.FeatureNotSupported), message
    assert one(adult, "SELECT count(*) FROM adult") == 1000


def test_quotes_in_the_interval_query_stay_data(adult: Any) -> None:
    one(adult, RELEASE_KE)
    query = "SELECT COUNT(*) AS n FROM adult_ke WHERE sex = 'x'' ; DROP TABLE adult; --'"
    rows = adult.execute("SELECT * FROM sqlanon.interval_json(%s)", [query]).fetchall()
    assert [r[0]["n"] for r in rows] == [0]
    assert one(adult, "SELECT count(*) FROM adult") == 1000


def test_the_dbt_materializations_call(adult: Any) -> None:
    """What dbt_sqlanon's postgres__publish_release sends, inside one transaction."""
    adult.execute("CREATE SCHEMA analytics")
    with adult.transaction():
        adult.execute(
            "CREATE VIEW analytics.adult_rel__source AS (SELECT * FROM public.adult);"
            ' SET LOCAL search_path TO "analytics"'
        )
        text = one(
            adult,
            "SELECT (sqlanon.release_ke('analytics.adult_rel__source', 'adult_rel', key => 'id',"
            " sensitive => 'capital_loss', quasi => ARRAY['age', 'sex']::text[], k => 5,"
            " e => 20, policy => 'auto'))::text AS summary",
        )
    assert json.loads(text)["table"] == "adult_rel_v1"
    assert one(adult, "SELECT count(*) FROM analytics.adult_rel") > 0
    assert one(adult, "SHOW search_path") == '"$user", public'
    with pytest.raises(errors.InvalidParameterValue, match="k must be a whole number >= 2"):
        adult.execute(
            "SELECT (sqlanon.release_ke('analytics.adult_rel__source', 'adult_rel', key => 'id',"
            " sensitive => 'capital_loss', quasi => ARRAY['age', 'sex']::text[], k => 1,"
            " e => 20))::text"
        )


def test_a_release_that_cannot_get_the_lock_in_time_fails_clearly(adult: Any, pg_db: str) -> None:
    with psycopg.connect(pg_db) as first:
        one(first, RELEASE_KE)
        with psycopg.connect(pg_db, autocommit=True) as second:
            second.execute("SET lock_timeout = '200ms'")
            with pytest.raises(
                errors.LockNotAvailable,
                match="^another release of family 'adult_ke' holds",
            ):
                second.execute(RELEASE_KE)
        first.commit()
    assert adult.execute("SELECT version FROM sqlanon.releases").fetchall() == [(1,)]


def test_families_and_models_of_one_source_compose_on_postgres(
    installed: Any, pg_conn: Any
) -> None:
    """Issue 10, case 2, through the SQL functions: the lHD classes are cells the (k,e)
    release keeps whole; a filtered view of the source is refused, nothing written."""
    pg_conn.execute("CREATE TABLE src (id integer, age integer, sex text, v integer)")
    pg_conn.execute(
        "INSERT INTO src VALUES (1, 30, 'M', 100), (2, 30, 'F', 900), (3, 50, 'M', 110), "
        "(4, 50, 'F', 910)"
    )
    pg_conn.execute("SELECT sqlanon.hierarchy_widths('src', 'age', ARRAY[10, 20])")
    one(
        pg_conn,
        "SELECT sqlanon.release_lhd('public.src', 'a', key => 'id', quasi => ARRAY['age'],"
        " sensitive => ARRAY['v'], l => 2)",
    )
    one(
        pg_conn,
        "SELECT sqlanon.release_ke('public.src', 'b', key => 'id', quasi => ARRAY['age', 'sex'],"
        " sensitive => 'v', k => 2, e => 5)",
    )
    rows = pg_conn.execute(
        "SELECT family, record_key, group_id FROM sqlanon.members ORDER BY 1, 2"
    ).fetchall()
    groups = {(f, k): g for f, k, g in rows}
    for family in ("a", "b"):
        assert groups[(family, "1")] == groups[(family, "2")]
        assert groups[(family, "3")] == groups[(family, "4")]
    assert pg_conn.execute(
        "SELECT family, domain, seq FROM sqlanon.releases ORDER BY seq"
    ).fetchall() == [("a", "public.src", 1), ("b", "public.src", 2)]
    pg_conn.execute("CREATE VIEW young AS SELECT * FROM src WHERE age < 40")
    before = catalog_counts(pg_conn)
    with pytest.raises(psycopg.Error, match="are not in public.young"):
        pg_conn.execute(
            "SELECT sqlanon.release_ke('public.young', 'c', key => 'id', quasi => ARRAY['age'],"
            " sensitive => 'v', k => 2, e => 5)"
        )
    pg_conn.rollback()
    assert catalog_counts(pg_conn) == before


def test_no_release_function_takes_a_seed(adult: Any) -> None:
    """Issue 23: a `seed` made the secret guessable (0..999 in 0.35 s linked every row of
    an lHD release to its key). No signature takes one now, including the old ones an
    upgrade replaced."""
    with pytest.raises(errors.UndefinedFunction):
        adult.execute(RELEASE_KE.replace("e => 20)", "e => 20, seed => 7)"))
    signatures = adult.execute(
        "SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p"
        " WHERE p.pronamespace = 'sqlanon'::regnamespace AND 'seed' = ANY(p.proargnames)"
    ).fetchall()
    assert signatures == []
    adult.execute(RELEASE_KE)
    assert "seeded" not in one(adult, "SELECT parameters FROM sqlanon.releases")
