"""The ``sqlanon`` catalog schema's migrations, after sqlite-utils' idea: numbered files
(``sqlanon/<engine>/migrations/NNN_*.sql``), each applied once inside a transaction and recorded
in ``sqlanon.migrations``; some also rewrite data (a step after the file, in the same
transaction). The data steps use the modules that build on the catalog, so this module
sits above them all.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlanon import sqltext
from sqlanon.session import Session
from sqlanon.state import bounds, domains, live, release_rows


def migrate(session: Session) -> list[str]:
    """Apply the dialect's pending migrations; returns the names applied now."""
    with session.transaction():
        for statement in sqltext.statements(sqltext.load(session.dialect, "bootstrap")):
            session.execute(statement)
    applied = {row[0] for row in session.query("SELECT name FROM sqlanon.migrations")}
    done = []
    for name, text in sqltext.migrations(session.dialect):
        if name in applied:
            continue
        with session.transaction():
            for statement in sqltext.statements(text):
                session.execute(statement)
            run_data_step(session, name)
            session.execute("INSERT INTO sqlanon.migrations (name) VALUES ($1)", [name])
        done.append(name)
    return done


def has_data_step(name: str) -> bool:
    """Whether migration ``name`` also rewrites data (a step after its file)."""
    return name in _DATA_STEPS


def run_data_step(session: Session, name: str) -> None:
    """The data step of migration ``name``, if it has one (``migrate`` and the
    PostgreSQL extension's upgrade scripts run it right after the migration's file)."""
    if name in _DATA_STEPS:
        _DATA_STEPS[name](session)


def pending(session: Session) -> list[str]:
    """The migrations ``migrate`` would apply, without writing anything."""
    present = session.query(
        "SELECT 1 FROM information_schema.tables "
        "WHERE table_schema = 'sqlanon' AND table_name = 'migrations'"
    )
    applied = (
        {row[0] for row in session.query("SELECT name FROM sqlanon.migrations")}
        if present
        else set()
    )
    return [name for name, _text in sqltext.migrations(session.dialect) if name not in applied]


#: Migrations that also rewrite data, run after their file inside its transaction.
_DATA_STEPS: dict[str, Callable[[Session], None]] = {
    "003_ke_bounds_runs": bounds.rebuild_ke_bounds,
    "005_domains": domains.rebuild,
    "007_live_tables": live.rebuild,
    "010_bounds_schema": bounds.move_bounds_tables,
    "012_shared_rows": release_rows.share_all,
}
