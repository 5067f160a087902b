"""Deletions from a domain's one source, applied to its state (MODELS.md, "Changing
tables").

A record of the domain's latest release gone from the source becomes a **ghost** if a
release of the domain published it (a random ghost id replaces its key in every row of
``sqlanon.*``, and the next release publishes the ghost), and is forgotten if none did
(its rows deleted). :func:`apply_deletes` does this inside a release's transaction
(:mod:`sqlanon.state.live`), :func:`erase` at once, without publishing (a person asking
to be erased need not wait for the next release).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.session import Session
from sqlanon.state import capture, catalog
from sqlanon.state.source import resolve_source

if TYPE_CHECKING:
    from sqlanon.state.source import Source

GHOST_PREFIX = "ghost:"


def apply_deletes(
    session: Session,
    domain: str,
    domain_last: catalog.Release,
    src: Source,
    key: str,
    changed_keys: Sequence[str] = (),
    family_last: catalog.Release | None = None,
    known: int = 0,
) -> tuple[int, int]:
    """Apply the deletions from ``src`` (the domain's one source) to the catalog: every
    record of the domain's latest release gone from the source becomes a ghost if a
    release published it (its key replaced everywhere in ``sqlanon.*``), and is
    forgotten if none did. ``changed_keys`` (records whose value changed) become ghosts
    too, linked to their key. Returns (ghosts made of deleted records, forgotten).
    ``family_last`` / ``known``: the releasing family's last version and the source rows
    it knew (see :func:`_gone`)."""
    gone = _gone(session, domain_last, family_last, src, key, known)
    deleted = [str(k) for k, published in gone if published]
    dropped = [str(k) for k, published in gone if not published]
    if deleted or changed_keys:
        ghosting = [*deleted, *changed_keys]
        session.load_temp(
            "_sqlanon_ghosting",
            {
                "record_key": np.array(ghosting, dtype=object),
                "ghost_id": np.array([new_ghost_id() for _ in ghosting], dtype=object),
                "changed": np.array([False] * len(deleted) + [True] * len(changed_keys)),
            },
            {"record_key": "VARCHAR", "ghost_id": "VARCHAR", "changed": "BOOLEAN"},
        )
        for statement in sqltext.statements(sqltext.load(session.dialect, "live_ghost")):
            session.execute(statement, [domain])
        session.execute("DROP TABLE _sqlanon_ghosting")
    if dropped:
        session.load_temp(
            "_sqlanon_dropped",
            {"record_key": np.array(dropped, dtype=object)},
            {"record_key": "VARCHAR"},
        )
        for statement in sqltext.statements(sqltext.load(session.dialect, "live_drop")):
            session.execute(statement, [domain])
        session.execute("DROP TABLE _sqlanon_dropped")
    return len(deleted), len(dropped)


def erase(session: Session, source: str) -> dict[str, Any]:
    """Apply the deletions from ``source`` to its domain's state now, without publishing
    a version: every record some release of the domain published that is gone from the
    source becomes a ghost (its key replaced everywhere in ``sqlanon.*``; the next
    release publishes the ghost), and a gone record no release published is forgotten.
    Refused (nothing written) for a source never released, and for a domain released
    from several sources (a record missing from one may be filtered, not deleted).
    Returns the counts: ``deleted`` = ``ghosts`` (published) + ``forgotten``."""
    with session.transaction():
        src = resolve_source(session, source)
        found = sorted({r.domain for r in catalog.releases(session) if r.source == src.label})
        if not found:
            raise ConfigError(
                f"source {src.label} was never released: there is nothing to erase from "
                "sqlanon's state (erase applies deletions from a released source); delete the "
                "rows from the table itself"
            )
        name = found[0]
        session.lock_family(f"domain {name}")
        every = catalog.domain_releases(session, name)
        sources = sorted({r.source for r in every})
        if sources != [src.label]:
            raise ConfigError(
                f"domain {name!r} is released from several sources ({', '.join(sources)}): "
                f"a record missing from {src.label} may be filtered out, not deleted, so "
                "deletions are taken only from a domain released from one source; nothing "
                "was erased"
            )
        keys = sorted({str(r.parameters.get("key")) for r in every})
        if len(keys) != 1:
            raise ConfigError(
                f"releases of domain {name!r} use different keys ({', '.join(keys)}); "
                "nothing was erased"
            )
        key = src.column(keys[0], "key")
        ghosts, forgotten = apply_deletes(session, name, every[-1], src, key)
    return {
        "source": src.label,
        "domain": name,
        "deleted": ghosts + forgotten,
        "ghosts": ghosts,
        "forgotten": forgotten,
    }


def _gone(
    session: Session,
    domain_last: catalog.Release,
    family_last: catalog.Release | None,
    src: Source,
    key: str,
    known: int,
) -> list[tuple[str, bool]]:
    """Records of the domain's latest release gone from the source: (key, published).
    When the family made that release, ``known`` (source rows it knew) tells whether any
    is gone without the anti-join (at 10^6 rows it costs a string join); when the
    source's changes were captured since that release (:mod:`sqlanon.state.capture`),
    only the captured keys are looked up."""
    own = family_last is not None and family_last.family == domain_last.family
    if own and known == _family_count(session, domain_last):
        return []
    captured = capture.gone(session, domain_last, src, key)
    if captured is not None:  # PostgreSQL, capture on since domain_last: its keys only
        return captured
    q = session.quote_ident
    return [
        (str(k), bool(published))
        for k, published in session.query(
            sqltext.render(
                sqltext.load(session.dialect, "live_gone"),
                key=q(key),
                source=src.qualified(session),
            ),
            [domain_last.family, domain_last.version],
        )
    ]


def _family_count(session: Session, release: catalog.Release) -> int:
    """Records (not ghosts) a release knew: published, suppressed or held back."""
    return int(
        session.query(
            "SELECT count(*) FROM sqlanon.members WHERE family = $1 AND version = $2 "
            "AND NOT coalesce(ghost, false)",
            [release.family, release.version],
        )[0][0]
    )


def new_ghost_id() -> str:
    """A random id for a ghost: 128 bits from the OS, never derived from the key."""
    return GHOST_PREFIX + secrets.token_hex(16)
