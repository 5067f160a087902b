"""Analysts who read a family's view never stall its releases for good, and a release
never stalls their reads for more than a moment (issue 23, item 3).

A real analyst's transaction is left open after ``SELECT count(*) FROM adult_ke``; the
owner's release then either switches the view once the reader ends (within its budget)
or fails cleanly after it, and meanwhile a third connection's reads of the view keep
answering under a statement_timeout."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg import errors

import sqlanon
from sqlanon.errors import BlockedByReadersError
from sqlanon.release import publish
from tests.test_postgres_functions import (  # noqa: F401 - fixtures
    RELEASE_KE,
    add_adult,
    adult,
    adult_rows,
    installed,
    one,
    roles,
)
from tests.test_postgres_surface import assert_clean

pytestmark = pytest.mark.postgres

COUNT = "SELECT count(*) FROM adult_ke"


class Running:
    """A release running in a thread on connection ``conn``: its result or error, and how
    long it took. Leaving the block cancels it if it still runs (a release stuck behind
    the reader must not keep the test's connections from closing)."""

    def __init__(self, conn: Any, release: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.seconds = 0.0
        self._conn = conn
        self._thread = threading.Thread(target=self._run, args=(release,), daemon=True)

    def __enter__(self) -> Running:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self.alive():
            self._conn.cancel_safe()
            self._thread.join(30)

    def _run(self, release: Callable[[], Any]) -> None:
        start = time.monotonic()
        try:
            self.result = release()
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            self.error = exc
        self.seconds = time.monotonic() - start

    def alive(self) -> bool:
        return self._thread.is_alive()

    def join(self) -> None:
        self._thread.join(120)
        assert not self.alive(), "the release still runs after 120 s"


def until_switching(admin: Any, running: Running) -> None:
    """Wait until the release asks for a lock on the view it cannot have yet."""
    waiting = "SELECT count(*) FROM pg_locks WHERE relation = 'adult_ke'::regclass AND NOT granted"
    deadline = time.monotonic() + 90  # a new session first imports sqlanon into PL/Python
    while time.monotonic() < deadline:
        if one(admin, waiting):
            return
        assert running.alive(), running.error
        time.sleep(0.02)
    pytest.fail("the release never asked for the view's lock")


def keep_reading(conn: Any, seconds: float, expected: int) -> None:
    """Read the view again and again for ``seconds``: each read answers (the connection's
    statement_timeout would cancel one queued behind the release) with ``expected``."""
    conn.execute("SET statement_timeout = '2s'")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert one(conn, COUNT) == expected
        time.sleep(0.05)


def first_release(owner: Any, admin: Any) -> int:
    """Version 1 of adult_ke from the first 1,000 Adult records, then 200 more records
    (so that the next release publishes a version 2); the view's row count."""
    one(owner, RELEASE_KE)
    add_adult(admin, adult_rows()[1][1000:1200])
    return int(one(admin, COUNT))


def nothing_written(admin: Any, rows: int) -> None:
    assert admin.execute("SELECT version FROM sqlanon.releases").fetchall() == [(1,)]
    assert one(admin, "SELECT to_regclass('adult_ke_v2')") is None
    assert one(admin, "SELECT to_regclass('sqlanon_bounds.adult_ke_v2_bounds')") is None
    assert one(admin, COUNT) == rows


def test_only_the_view_switch_locks_what_analysts_read(
    adult: Any,  # noqa: F811
    roles: dict[str, str],  # noqa: F811
) -> None:
    """Of every relation there before the release (the view, version 1 and its bounds,
    the source, the catalog), the release locks only the view in a mode that conflicts
    with a reader's ACCESS SHARE (ACCESS EXCLUSIVE is the only such mode): not its
    GRANTs, not its catalog writes."""
    with psycopg.connect(roles["owner"], autocommit=True) as owner:
        first_release(owner, adult)
    before = [
        r[0]
        for r in adult.execute(
            "SELECT c.oid FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
            " WHERE n.nspname IN ('public', 'sqlanon')"
        )
    ]
    with psycopg.connect(roles["owner"]) as owner:  # the release's transaction stays open
        assert one(owner, RELEASE_KE)["version"] == 2
        locked = owner.execute(
            "SELECT relation::regclass::text FROM pg_locks WHERE pid = pg_backend_pid()"
            " AND locktype = 'relation' AND mode = 'AccessExclusiveLock'"
            " AND relation = ANY(%s)",
            [before],
        ).fetchall()
        owner.rollback()
    assert locked == [("adult_ke",)]


def test_a_release_waits_for_an_open_reader_while_reads_go_on(
    adult: Any,  # noqa: F811
    roles: dict[str, str],  # noqa: F811
) -> None:
    with psycopg.connect(roles["owner"], autocommit=True) as owner:
        rows = first_release(owner, adult)
    with (
        psycopg.connect(roles["analyst"]) as reader,
        psycopg.connect(roles["analyst"], autocommit=True) as other,
        psycopg.connect(roles["owner"]) as owner,
    ):
        assert one(reader, COUNT) == rows  # BEGIN; SELECT count(*) FROM adult_ke; left open
        with Running(owner, lambda: one(owner, RELEASE_KE)) as running:
            until_switching(adult, running)
            keep_reading(other, 3, rows)
            assert running.alive()  # still waiting for the reader, within its budget
            reader.commit()
            running.join()
        assert running.error is None and running.result["version"] == 2
        assert one(owner, "SHOW lock_timeout") == "0"  # the caller's own, put back
        owner.commit()
        assert one(other, COUNT) > rows


def test_a_release_blocked_past_its_budget_fails_cleanly(
    adult: Any,  # noqa: F811
    roles: dict[str, str],  # noqa: F811
) -> None:
    """The caller's lock_timeout is the budget; the error names the view, the reader's
    server process and role, never its query, and says what to do."""
    with psycopg.connect(roles["owner"], autocommit=True) as owner:
        rows = first_release(owner, adult)
    with (
        psycopg.connect(roles["analyst"]) as reader,
        psycopg.connect(roles["analyst"], autocommit=True) as other,
        psycopg.connect(roles["owner"], autocommit=True) as owner,
    ):
        assert one(reader, COUNT) == rows
        owner.execute("SET lock_timeout = '3s'")
        with Running(owner, lambda: one(owner, RELEASE_KE)) as running:
            until_switching(adult, running)
            keep_reading(other, 2, rows)
            running.join()
        assert isinstance(running.error, errors.LockNotAvailable), running.error
        assert_clean(running.error, "55P03")
        message = running.error.diag.message_primary or ""
        analyst = reader.info.user
        assert message.startswith(
            f'open transactions reading view "public"."adult_ke" (pid {reader.info.backend_pid} of '
            f"{analyst}) kept this release of family 'adult_ke' from switching the view to "
            "its new version for 3 s; nothing was written: end them"
        ), message
        for setting in ("idle_in_transaction_session_timeout = '5min'", "statement_timeout"):
            assert f'ALTER ROLE "{analyst}" SET {setting}' in message, message
        assert "count(" not in message.lower()
        assert running.seconds >= 3
        assert one(owner, "SHOW lock_timeout") == "3s"
        reader.rollback()
    nothing_written(adult, rows)


@pytest.mark.parametrize("policy", ["auto", "paper"])  # the engine path, the row path
def test_a_client_release_gives_up_after_its_budget_or_switches_when_readers_end(
    adult: Any,  # noqa: F811
    roles: dict[str, str],  # noqa: F811
    pg_db: str,
    policy: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through psycopg in the client: with lock_timeout at 0, the module's default
    budget (shortened here) applies."""
    monkeypatch.setattr(publish, "WAIT_FOR_READERS", 3.0)

    def release(conn: Any) -> dict[str, Any]:
        return sqlanon.release_ke(
            conn, "public.adult", "adult_ke", key="id", sensitive="capital_loss",
            quasi=["age", "sex"], k=5, e=20, policy=policy,
        )  # fmt: skip

    rows = first_release(adult, adult)
    with (
        psycopg.connect(roles["analyst"]) as reader,
        psycopg.connect(roles["analyst"], autocommit=True) as other,
        psycopg.connect(pg_db, autocommit=True) as owner,
    ):
        assert one(reader, COUNT) == rows
        with Running(owner, lambda: release(owner)) as running:
            until_switching(adult, running)
            keep_reading(other, 1, rows)
            running.join()
        assert isinstance(running.error, BlockedByReadersError), running.error
        assert str(running.error).startswith(
            'open transactions reading view "public"."adult_ke" (pid '
        )
        assert running.seconds >= 3
        nothing_written(adult, rows)

        with Running(owner, lambda: release(owner)) as running:
            until_switching(adult, running)
            keep_reading(other, 0.5, rows)
            reader.commit()  # within the budget
            running.join()
        assert running.error is None and running.result["version"] == 2
    assert one(adult, COUNT) > rows
