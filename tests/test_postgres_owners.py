"""Two data owners on one PostgreSQL server (issue 23, item 5): each releases the table
in their own schema; neither's release lands in the other's domain, and no refusal shows
the other owner's keys."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors, sql

from sqlanon.postgres.install import install_postgres

pytestmark = pytest.mark.postgres

RELEASE = (
    "SELECT sqlanon.release_ke('adult', 'adult_ke_{who}', key => 'id', sensitive => 'loss', "
    "quasi => ARRAY['age'], k => 4, e => 10{extra})"
)


@pytest.fixture
def owners(pg_db: str, pg_python_root: Path) -> dict[str, Any]:
    """Roles o1 and o2 (sqlanon_owner), each with schema and table ``adult`` of its own;
    their keys overlap (1000041..1000120) but they are different people (other ages and
    losses)."""
    install_postgres(pg_db, python_root=pg_python_root)
    suffix = uuid.uuid4().hex[:8]  # roles are the cluster's, shared by every test database
    names = {"o1": f"o1_{suffix}", "o2": f"o2_{suffix}"}
    conns = {}
    with psycopg.connect(pg_db, autocommit=True) as admin:
        for i, who in enumerate(names.values()):
            name = sql.Identifier(who)
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE sqlanon_owner").format(name))
            admin.execute(sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(name, name))
            admin.execute(
                sql.SQL(
                    "CREATE TABLE {}.adult AS SELECT 1000000 + g AS id, 20 + (g * {}) % 40 AS age,"
                    " (g * 37 + {}) % 500 AS loss FROM generate_series({}, {}) AS g"
                ).format(
                    name,
                    sql.Literal(3 + i),
                    sql.Literal(i),
                    sql.Literal(1 + 40 * i),
                    sql.Literal(120 + 40 * i),
                )
            )
            admin.execute(sql.SQL("ALTER TABLE {}.adult OWNER TO {}").format(name, name))
    for short, who in names.items():
        conn = psycopg.connect(pg_db, autocommit=True)
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(who)))
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(who)))
        conns[short] = conn
    yield {**conns, "names": names}
    for conn in conns.values():
        conn.close()
    with psycopg.connect(pg_db, autocommit=True) as admin:
        for who in names.values():
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(who)))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(who)))


def test_owners_releases_stay_in_their_own_domains(owners: dict[str, Any]) -> None:
    first = owners["o1"].execute(RELEASE.format(who="o1", extra="")).fetchone()[0]
    o1, o2 = owners["names"]["o1"], owners["names"]["o2"]
    assert first["domain"] == f"{o1}.adult"
    # Before: o2's release was put in domain o1.adult (shared keys) and refused with o1's
    # keys in the message. Now it starts its own domain.
    second = owners["o2"].execute(RELEASE.format(who="o2", extra="")).fetchone()[0]
    assert second["domain"] == f"{o2}.adult" and second["version"] == 1
    # Naming the other owner's domain is refused without a key or value of it.
    owners["o2"].execute("CREATE TABLE copy AS SELECT * FROM adult")
    with pytest.raises(errors.InvalidParameterValue) as refused:
        owners["o2"].execute(
            RELEASE.format(who="o2b", extra=f", domain => '{o1}.adult'").replace(
                "'adult'", "'copy'"
            )
        )
    message = str(refused.value)
    assert "may not read" in message and "10000" not in message
    assert refused.value.diag.sqlstate == "22023"


def test_analysts_find_a_release_whatever_their_search_path(
    owners: dict[str, Any], pg_db: str
) -> None:
    """Issue 23, item 6: the family's tables were found through the analyst's
    search_path ("adult_ke_o1_v1 does not exist" until its schema was in it). The
    catalog records each release's schema and the rewriter names it."""
    owners["o1"].execute(RELEASE.format(who="o1", extra=""))
    query = "SELECT COUNT(*) AS n, SUM(loss) AS total FROM adult_ke_o1 WHERE age > 30"
    with psycopg.connect(pg_db, autocommit=True) as analyst:
        analyst.execute("SET search_path = public")
        (answer,) = analyst.execute("SELECT * FROM sqlanon.interval_json(%s)", [query]).fetchone()
        truth = (
            owners["o1"].execute("SELECT count(*), sum(loss) FROM adult WHERE age > 30").fetchone()
        )
        assert answer["n"] == truth[0]
        assert answer["total_low"] <= truth[1] <= answer["total_high"]
        columns = analyst.execute("SELECT sqlanon.interval_columns(%s)", [query]).fetchone()[0]
        assert "total_low" in columns


def test_owners_cannot_plant_functions_next_to_sqlanons(owners: dict[str, Any]) -> None:
    """An outside attacker's second look (issue 23): owners had CREATE on schema sqlanon
    (for the bounds tables), so one could plant sqlanon._audit(name, text, boolean), an
    exact match for the wrapper's call, or sqlanon.release_ke(..., k integer, ...) for
    calls with integer literals, and run it with a superuser's rights. Now nobody but
    the installer creates there; bounds tables go to sqlanon_bounds."""
    plants = [
        "CREATE FUNCTION sqlanon._audit(schema name, family text, records boolean)"
        " RETURNS jsonb LANGUAGE sql AS $$ SELECT '[]'::jsonb $$",
        "CREATE FUNCTION sqlanon.release_catalog(x integer DEFAULT 0) RETURNS integer"
        " LANGUAGE sql AS $$ SELECT 1 $$",
    ]
    for plant in plants:
        with pytest.raises(errors.InsufficientPrivilege):
            owners["o1"].execute(plant)
    summary = owners["o1"].execute(RELEASE.format(who="o1", extra="")).fetchone()[0]
    bounds = (
        owners["o1"]
        .execute(
            "SELECT pg_catalog.to_regclass(%s)::text",
            [f'sqlanon_bounds."{summary["table"]}_bounds"'],
        )
        .fetchone()[0]
    )
    assert bounds == f"sqlanon_bounds.{summary['table']}_bounds"


def test_no_owner_can_take_another_schemas_default_domain(owners: dict[str, Any]) -> None:
    """The attacker's second look: owner 2 released a bait into domain '<o1>.fresh', the
    name owner 1's table `fresh` would get, and owner 1's first release landed in it.
    A new domain may not be named after another schema's table now."""
    o1 = owners["names"]["o1"]
    owners["o2"].execute("CREATE TABLE bait AS SELECT * FROM adult")
    with pytest.raises(errors.InvalidParameterValue) as refused:
        owners["o2"].execute(
            RELEASE.format(who="bait", extra=f", domain => '{o1}.fresh'").replace(
                "'adult'", "'bait'"
            )
        )
    assert "another schema" in str(refused.value)


def test_a_bait_in_a_shared_schema_does_not_capture_a_release(
    owners: dict[str, Any], pg_db: str
) -> None:
    """The attacker's second look: in a schema both owners create in, owner 2 released a
    bait sharing keys with owner 1's table and granted owner 1 SELECT on it; owner 1's
    first release was inferred into the bait's domain. Domains are inferred only from
    the caller's own releases now."""
    o1, o2 = owners["names"]["o1"], owners["names"]["o2"]
    shared = f"shared_{o1}"
    with psycopg.connect(pg_db, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(shared)))
        admin.execute(
            sql.SQL("GRANT USAGE, CREATE ON SCHEMA {} TO {}, {}").format(
                sql.Identifier(shared), sql.Identifier(o1), sql.Identifier(o2)
            )
        )
    for who, table in (("o2", "bait"), ("o1", "victim")):
        conn = owners[who]
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(shared)))
        conn.execute(
            sql.SQL("CREATE TABLE {} AS SELECT * FROM {}.adult").format(
                sql.Identifier(table), sql.Identifier(owners["names"][who])
            )
        )
    owners["o2"].execute("GRANT SELECT ON bait TO PUBLIC")
    bait = (
        owners["o2"]
        .execute(RELEASE.format(who="bait", extra="").replace("'adult'", "'bait'"))
        .fetchone()[0]
    )
    assert bait["domain"] == f"{shared}.bait"
    mine = (
        owners["o1"]
        .execute(RELEASE.format(who="victim", extra="").replace("'adult'", "'victim'"))
        .fetchone()[0]
    )
    assert mine["domain"] == f"{shared}.victim"
