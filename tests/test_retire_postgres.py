"""Retention on the real PostgreSQL server: ``sqlanon.retire(family, keep)`` is the
family owner's; an analyst can neither call it nor hold it up for good, another owner
is refused, bad inputs write nothing, a retired version is refused by the rewriter."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg import errors, sql
from psycopg.conninfo import make_conninfo

from tests.test_postgres_functions import (  # noqa: F401 (fixtures)
    RELEASE_KE,
    adult,
    installed,
    one,
    relations,
    roles,
)

INSERT = (
    "INSERT INTO adult (id, age, sex, capital_loss)"
    " SELECT id + 100000 + {n}, age, sex, capital_loss FROM adult"
    " WHERE id % 50 = 0 AND id < 100000"
)


def _state(conn: Any) -> tuple[Any, ...]:
    return tuple(
        conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # noqa: S608
        for t in (
            "sqlanon.releases",
            "sqlanon.member_spans",
            "sqlanon.cell_spans",
            "sqlanon.kept_values",
            "sqlanon.retirements",
            'sqlanon_bounds."adult_ke__history"',
            'sqlanon_bounds."adult_ke__bounds"',
        )
    )


def test_the_owner_retires_and_nobody_else_can(adult: Any, roles: dict[str, str]) -> None:  # noqa: F811
    columns = [r[0] for r in adult.execute("SELECT * FROM adult LIMIT 0").description or []]
    assert "id" in columns
    adult.execute("GRANT INSERT, UPDATE ON adult TO sqlanon_owner")
    with psycopg.connect(roles["owner"], autocommit=True) as owner:
        for n in range(3):
            if n:  # appended records, and changed ages (their groups go to the history)
                owner.execute(INSERT.format(n=n * 1000))
                owner.execute("UPDATE adult SET age = age + 1 WHERE id %% 37 = %s", [n])
            assert one(owner, RELEASE_KE)["version"] == n + 1
        newest = owner.execute("SELECT * FROM adult_ke").fetchall()
        v3 = owner.execute("SELECT * FROM adult_ke_v3").fetchall()
        before, tables = _state(adult), relations(adult)

        with psycopg.connect(roles["analyst"], autocommit=True) as analyst:
            with pytest.raises(errors.InsufficientPrivilege):
                analyst.execute("SELECT sqlanon.retire('adult_ke', 1)")
            # an analyst holding version 1 open keeps the retirement from dropping it
            # for the owner's lock_timeout at most; nothing is written
            analyst.autocommit = False
            analyst.execute("SELECT count(*) FROM adult_ke_v1").fetchone()
            owner.execute("SET lock_timeout = '1s'")
            with pytest.raises(errors.LockNotAvailable, match="retiring version 1"):
                owner.execute("SELECT sqlanon.retire('adult_ke', 1)")
            analyst.rollback()
            assert _state(adult) == before and relations(adult) == tables

            for keep in ("0", "NULL", "-2"):
                with pytest.raises(errors.InvalidParameterValue, match="keep must be"):
                    owner.execute(f"SELECT sqlanon.retire('adult_ke', {keep})")  # noqa: S608
            with pytest.raises(errors.InvalidParameterValue, match="no release family 'nope'"):
                owner.execute("SELECT sqlanon.retire('nope', 1)")
            assert _state(adult) == before and relations(adult) == tables

            other = f"t_other_{uuid.uuid4().hex[:8]}"
            adult.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE sqlanon_owner").format(
                sql.Identifier(other)))  # fmt: skip
            try:
                with psycopg.connect(
                    make_conninfo(roles["owner"], user=other), autocommit=True
                ) as stranger:
                    with pytest.raises(errors.InsufficientPrivilege, match="only the owner"):
                        stranger.execute("SELECT sqlanon.retire('adult_ke', 1)")
            finally:
                adult.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(other)))
            assert _state(adult) == before

            done = one(owner, "SELECT sqlanon.retire('adult_ke', keep => 1)")
            assert done["retired"] == [1, 2] and done["served"] == [3]
            assert one(owner, "SELECT sqlanon.retire('adult_ke', 1)")["retired"] == []
            analyst.autocommit = True
            assert analyst.execute("SELECT * FROM adult_ke").fetchall() == newest
            assert analyst.execute("SELECT * FROM adult_ke_v3").fetchall() == v3
            with pytest.raises(errors.UndefinedTable):
                analyst.execute("SELECT * FROM adult_ke_v1")
            with pytest.raises(errors.FeatureNotSupported, match="is retired"):
                analyst.execute(
                    "SELECT * FROM sqlanon.interval_json('SELECT SUM(capital_loss) FROM adult_ke_v2')"
                )
            assert analyst.execute(
                "SELECT * FROM sqlanon.interval_json('SELECT SUM(capital_loss) FROM adult_ke_v3')"
            ).fetchall()
        after = _state(adult)
        assert after[:4] == before[:4]  # the private state stays
        assert after[4] == 1 and after[5] < before[5] and after[6] < before[6]
        assert (
            one(
                adult,
                'SELECT count(*) FROM sqlanon_bounds."adult_ke__history" WHERE sqlanon_last < 3',
            )
            == 0
        )
        # a later release composes with every version, retired or not
        owner.execute(INSERT.format(n=9000))
        assert one(owner, RELEASE_KE)["version"] == 4
        audit = one(owner, "SELECT sqlanon.audit('adult_ke', false)")
        assert [r["version"] for r in audit] == [1, 2, 3, 4]
