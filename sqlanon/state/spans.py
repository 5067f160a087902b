"""The private state as changes (migration 011): ``sqlanon.member_spans`` and
``sqlanon.cell_spans`` hold each state of a record (a cell's requirement per attribute)
with the versions of its family it held in, ``sqlanon.state_versions`` every version
the state has. ``sqlanon.members`` and ``sqlanon.cells`` are views over them with the
columns and meaning of the tables they replace: one row per record (per cell and
attribute) per version, so every reader reads the state as of any version.

A release computes its version's rows as before, into a temporary table, then stores
them as changes (``write_member_spans.sql``, ``write_cell_spans.sql``): spans of records
that changed or left close, records without an open span open one, unchanged records
write nothing. After a release that changed 1% of a family's records, its state grew by
about 1% of them (plus the closed spans' updates), not by the whole family.
"""

from __future__ import annotations

from sqlanon import sqltext
from sqlanon.session import Session


def open_version(session: Session, family: str, version: int) -> None:
    """Add ``version`` of ``family`` to the versions the state has (idempotent): from now
    on ``sqlanon.members`` and ``sqlanon.cells`` show the open spans in it, before the
    release's catalog row exists."""
    session.execute(sqltext.load(session.dialect, "state_version"), [family, version])


def stable_cell_ids(session: Session, earlier: tuple[str, int] | None) -> None:
    """Give the cells of ``_sqlanon_state`` the ids of the same cells in ``earlier`` (the
    domain's latest release: family, version; None: there is none), new ids to the
    others (``stable_cell_ids.sql``); :func:`store_cells` renames ``_sqlanon_cells``'
    alike. Without it every record's state would change at every release."""
    family, version = earlier if earlier is not None else (None, None)
    session.execute(sqltext.load(session.dialect, "stable_cell_ids"), [family, version])
    session.execute(sqltext.load(session.dialect, "stable_cell_ids_apply"))


def store_members(session: Session, family: str, version: int) -> None:
    """Store ``_sqlanon_state`` (every record of this version: ``write_members.sql`` or
    ``ke_engine_members.sql``, then ``write_ghost_members.sql``) as this version of
    ``family``'s members, as changes; drops ``_sqlanon_state``."""
    open_version(session, family, version)
    for statement in sqltext.statements(sqltext.load(session.dialect, "write_member_spans")):
        session.execute(statement, [family, version])
    session.execute("DROP TABLE _sqlanon_state")


def store_cells(session: Session, family: str, version: int, *, renamed: bool = True) -> None:
    """Store ``_sqlanon_cells`` (cell_id, attribute, min_distinct, min_spread: every
    cell's requirement after this version) as this version of ``family``'s cells, as
    changes, under the ids :func:`stable_cell_ids` gave (``renamed``); drops
    ``_sqlanon_cells`` and the ids."""
    if renamed:
        session.execute(sqltext.load(session.dialect, "stable_cell_ids_cells"))
        session.execute("DROP TABLE _sqlanon_cell_ids")
    open_version(session, family, version)
    for statement in sqltext.statements(sqltext.load(session.dialect, "write_cell_spans")):
        session.execute(statement, [family, version])
    session.execute("DROP TABLE _sqlanon_cells")
