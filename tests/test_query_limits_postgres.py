"""Query limits on PostgreSQL: analysts' rewrites read ``sqlanon.query_limits`` (they may
not change it), the owner sets it, pathological queries are refused fast."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import errors

import sqlanon
from tests.test_postgres_functions import (  # noqa: F401 - fixtures
    RELEASE_KE,
    adult,
    installed,
    one,
    roles,
)

pytestmark = pytest.mark.postgres

QUERY = "SELECT SUM(capital_loss) AS s FROM adult_ke WHERE "


def test_owner_sets_limits_analyst_reads_them_and_is_refused_by_them(
    adult: Any,  # noqa: F811
    roles: dict[str, str],  # noqa: F811
) -> None:
    with psycopg.connect(roles["owner"], autocommit=True) as owner:
        one(owner, RELEASE_KE)
        for sql, limit in (
            (QUERY + "NOT " * 5000 + "age > 3", "max_query_depth"),
            (QUERY + "(" * 3000 + "age > 3" + ")" * 3000, "max_query_depth"),
            (QUERY + " OR ".join(f"age = {i}" for i in range(20_000)), "max_query_chars"),
        ):
            with pytest.raises(psycopg.Error, match=limit):
                owner.execute("SELECT * FROM sqlanon.interval_json(%s)", [sql])
        assert sqlanon.set_limit(owner, "max_query_tokens", 40)["max_query_tokens"] == 40
    with psycopg.connect(roles["analyst"], autocommit=True) as analyst:
        assert analyst.execute("SELECT name, value FROM sqlanon.query_limits").fetchall() == [
            ("max_query_tokens", 40)
        ]
        one(analyst, "SELECT sqlanon.interval_sql(%s)", [QUERY + "age > 30"])
        with pytest.raises(psycopg.Error, match="max_query_tokens"):
            one(analyst, "SELECT sqlanon.interval_sql(%s)", [QUERY + "age IN (1, 2, 3)" * 10])
        with pytest.raises(psycopg.Error, match="max_query_tokens"):
            one(analyst, "SELECT sqlanon.interval_sql(%s)", [QUERY + "NOT " * 5000 + "age > 3"])
        with pytest.raises(errors.InsufficientPrivilege):
            analyst.execute("UPDATE sqlanon.query_limits SET value = 10000000")
        with pytest.raises(errors.InsufficientPrivilege):
            analyst.execute("INSERT INTO sqlanon.query_limits VALUES ('max_query_depth', 999)")
