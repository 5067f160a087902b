"""lHD ``policy`` (issue 26) on a real PostgreSQL server: the SQL function takes
``policy => 'defer'`` (PL/Python), holds appended records back within
``max_suppression``, records the policy in the release's parameters, and publishes
the records it held back in a later version; the calls without a policy still work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import sqlanon
from sqlanon.postgres.install import install_postgres
from tests.test_postgres_release import ADD_PEOPLE

pytestmark = pytest.mark.postgres

RELEASE = (
    "SELECT sqlanon.release_lhd('people', 'people_l', key => 'id', quasi => ARRAY['age'], "
    "sensitive => ARRAY['salary'], l => 3, max_suppression => 0.1{policy})"
)


def release(conn: Any, policy: str | None = None) -> dict[str, Any]:
    text = RELEASE.format(policy="" if policy is None else f", policy => '{policy}'")
    return dict(conn.execute(text).fetchone()[0])


def statuses(conn: Any, version: int) -> dict[str, str]:
    rows = conn.execute(
        "SELECT record_key, status FROM sqlanon.members WHERE family = 'people_l' AND version = %s",
        [version],
    ).fetchall()
    return dict(rows)


def test_a_deferring_lhd_release_in_the_server(
    pg_db: str, pg_python_root: Path, pg_conn: Any
) -> None:
    install_postgres(pg_db, python_root=pg_python_root)
    pg_conn.execute("CREATE TABLE people (id integer, age integer, sex text, salary integer)")
    pg_conn.execute(ADD_PEOPLE, [1, 60])
    sqlanon.hierarchy_widths(pg_conn, "people", "age", [5, 10, 20])
    assert release(pg_conn)["held_back"] == 0  # no policy given: the default
    pg_conn.execute(ADD_PEOPLE, [61, 72])
    deferred = release(pg_conn, "defer")
    held = {k for k, s in statuses(pg_conn, 2).items() if s == "held_back"}
    assert deferred["held_back"] == len(held) > 0
    assert deferred["held_back"] + deferred["suppressed"] <= 0.1 * deferred["records"]
    parameters = pg_conn.execute(
        "SELECT parameters FROM sqlanon.releases WHERE family = 'people_l' AND version = 2"
    ).fetchone()[0]
    assert (json.loads(parameters) if isinstance(parameters, str) else parameters)[
        "policy"
    ] == "defer"
    later = release(pg_conn, "publish")  # nothing new: the held-back records go out now
    now = statuses(pg_conn, 3)
    assert {k for k in held if now[k] == "published"} and later["held_back"] < len(held)
    assert [r["exposed"] for r in sqlanon.audit(pg_conn, "people_l")] == [0, 0, 0]
