"""A release's last step: grants, the catalog row, and the family's view pointed at the
new table, in the order each engine needs.

On PostgreSQL, replacing a view takes an ACCESS EXCLUSIVE lock on it: it waits for
every open transaction that has read the view, and every later read of the view queues
behind that wait. An analyst's ``BEGIN; SELECT count(*) FROM adult_ke;`` left open
would stall the release for good (``lock_timeout`` is 0 by default), and every other
analyst's read with it. So the switch is the release's very last statement (nothing a
release does before it conflicts with a reader's ACCESS SHARE lock:
``tests/test_postgres_readers.py`` checks with ``pg_locks``), and it asks for the lock
in short attempts, each under its own ``lock_timeout``: a read queues behind an attempt
for at most :data:`LONGEST_ATTEMPT`, and between attempts reads go on. When readers
still hold the view after the budget (the caller's ``lock_timeout``, else
:data:`WAIT_FOR_READERS`), the release fails with :class:`BlockedByReadersError` and,
being one transaction, leaves nothing behind.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from sqlanon import sqltext
from sqlanon.errors import BlockedByReadersError
from sqlanon.session import Session, WaitsForReaders
from sqlanon.state import catalog
from sqlanon.state.source import grant_readers, relation, render_sql

#: How long (seconds) a release waits in all for readers of its family's view when the
#: caller's ``lock_timeout`` is 0, PostgreSQL's default; a nonzero one is the budget.
WAIT_FOR_READERS = 60.0
#: Each attempt's ``lock_timeout`` (seconds) starts here and doubles up to
#: :data:`LONGEST_ATTEMPT`, the longest a read of the view queues behind the release:
#: growing attempts outlast readers whose statements overlap.
FIRST_ATTEMPT = 0.05
LONGEST_ATTEMPT = 0.5
#: The pause after a failed attempt (seconds) starts here and doubles up to
#: :data:`LONGEST_PAUSE`; reads run freely meanwhile. While a reader keeps its
#: transaction open, attempts hold up reads a third of the time at first, a fifth after
#: the first few seconds.
FIRST_PAUSE = 0.1
LONGEST_PAUSE = 2.0
#: What the error recommends for analysts' login roles (README, PostgreSQL).
ANALYST_SETTINGS = (
    "idle_in_transaction_session_timeout = '5min'",
    "statement_timeout = '15min'",
)


def publish(session: Session, release: catalog.Release, readable: Sequence[str]) -> None:
    """Let analysts read ``readable`` (the release's own tables, quoted), record the
    catalog row ``release`` and point view ``release.family`` at its table.

    On Spark the catalog row is the commit point, written last (an undo puts the view
    back); on PostgreSQL the view switch comes last, in brief attempts (module
    docstring); DuckDB's transaction makes the order moot.
    """
    family, view = release.family, relation(session, release.family)
    table = relation(session, release.table_name)
    switch = [render_sql(session, "point_view", family=view, release=table)]
    grant_readers(session, readable)
    if not isinstance(session, WaitsForReaders):
        for statement in switch:
            session.execute(statement)
        catalog.record_release(session, release)
        return
    catalog.record_release(session, release)
    # Granted anew with the switch: the first release creates the view there.
    switch.append(render_sql(session, "grant_readers", relations=view))
    doing = f"this release of family {family!r} from switching the view to its new version"
    run_briefly(session, switch, view, doing)


def run_briefly(session: WaitsForReaders, switch: list[str], view: str, doing: str) -> None:
    """Run ``switch`` (statements that lock ``view`` exclusively) in attempts of growing
    ``lock_timeout`` with growing pauses between them, until one gets its locks or the
    budget runs out: then :class:`BlockedByReadersError`, saying what the readers kept
    from being done (``doing``: "<what> from <doing what>")."""
    budget = _budget(session)
    deadline = time.monotonic() + budget
    attempt, pause = FIRST_ATTEMPT, FIRST_PAUSE
    while True:
        left = deadline - time.monotonic()
        if session.try_briefly(switch, min(attempt, max(left, 0.001))):
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise _blocked(session, doing, view, budget)
        # pg_sleep, not time.sleep: in PL/Python a cancel or statement_timeout stops it.
        session.execute("SELECT pg_catalog.pg_sleep($1)", [min(pause, left)])
        attempt, pause = min(2 * attempt, LONGEST_ATTEMPT), min(2 * pause, LONGEST_PAUSE)


def _budget(session: Session) -> float:
    """The caller's ``lock_timeout`` in seconds, or :data:`WAIT_FOR_READERS` when 0."""
    ((ms,),) = session.query(
        "SELECT CAST(setting AS bigint) FROM pg_catalog.pg_settings WHERE name = 'lock_timeout'"
    )
    return int(ms) / 1000 if int(ms) > 0 else WAIT_FOR_READERS


def _blocked(session: Session, doing: str, view: str, budget: float) -> BlockedByReadersError:
    """What to do about the readers holding ``view``: their server processes and roles
    (never their queries), and the ALTER ROLE commands that bound such transactions."""
    readers = session.query(sqltext.load(session.dialect, "view_readers"), [view])
    held = ", ".join(f"pid {pid} of {role}" for pid, role in readers)
    roles = sorted({session.quote_ident(str(role)) for _, role in readers})
    commands = "; ".join(
        f"ALTER ROLE {role} SET {setting}"
        for role in roles or ["<analyst login role>"]
        for setting in ANALYST_SETTINGS
    )
    return BlockedByReadersError(
        f"open transactions reading view {view}{f' ({held})' if held else ''} kept "
        f"{doing} for {budget:g} s; nothing was written: end them (pg_terminate_backend) "
        "or wait for them, then run it again; so that analysts cannot hold a view for long: "
        + commands
    )
