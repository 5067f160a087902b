"""The ``sqlanon`` catalog: release rows, member state, query limits (its schema is
applied by :mod:`sqlanon.state.migrations`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.rewriter.limits import DEFAULT_LIMITS, LIMIT_NAMES, limits_from_rows
from sqlanon.session import Session

if TYPE_CHECKING:
    from sqlanon.rewriter.limits import QueryLimits


@dataclass(frozen=True)
class Release:
    """One row of ``sqlanon.releases``."""

    family: str
    version: int
    table_name: str
    model: str
    source: str
    parameters: dict[str, Any]
    rows_published: int
    held_back: int
    suppressed: int
    groups: int
    sum_of_errors: float | None
    source_rows: int
    metrics: dict[str, Any]
    domain: str = ""  # the people behind the source (README, "Domains")
    seq: int = 0  # place in the domain's sequence of releases, 1, 2, ...

    @property
    def schema(self) -> str | None:
        """The schema its tables are in, where recorded (PostgreSQL); None: the
        connection's current schema (DuckDB, Spark, and releases made before)."""
        found = self.parameters.get("schema")
        return found if isinstance(found, str) else None


def _release(row: tuple[Any, ...]) -> Release:
    values = list(row)
    values[5] = json.loads(values[5])
    values[12] = json.loads(values[12]) if values[12] else {}
    values[13] = values[13] or values[4]  # written before domains: the source's own
    values[14] = int(values[14] or 0)
    return Release(*values)


def releases(session: Session, family: str | None = None) -> list[Release]:
    """Every version of one family (or of all families), oldest first."""
    sql = sqltext.load(session.dialect, "releases_select")
    if family is None:
        rows = session.query(sql + " ORDER BY family, version")
    else:
        rows = session.query(sql + " WHERE family = $1 ORDER BY version", [family])
    return [_release(r) for r in rows]


def latest(session: Session, family: str) -> Release | None:
    found = releases(session, family)
    return found[-1] if found else None


def domain_releases(session: Session, domain: str) -> list[Release]:
    """Every release of ``domain``, every family and model, in the domain's order."""
    sql = sqltext.load(session.dialect, "releases_select") + " WHERE domain = $1 ORDER BY seq"
    return [_release(r) for r in session.query(sql, [domain])]


def record_release(session: Session, release: Release) -> None:
    session.execute(
        sqltext.load(session.dialect, "record_release"),
        [
            release.family,
            release.version,
            release.table_name,
            release.model,
            release.source,
            json.dumps(release.parameters),
            release.rows_published,
            release.held_back,
            release.suppressed,
            release.groups,
            release.sum_of_errors,
            release.source_rows,
            json.dumps(release.metrics),
            release.domain,
            release.seq,
        ],
    )


def require_family(session: Session, family: str) -> list[Release]:
    found = releases(session, family)
    if not found:
        known = sorted({r.family for r in releases(session)})
        raise ConfigError(
            f"no release family {family!r}; known families: {', '.join(known) or 'none yet'}"
        )
    return found


def query_limits(session: Session) -> QueryLimits:
    """The data owner's bounds on analyst queries (``sqlanon.query_limits``; defaults
    for the names it has no row for)."""
    return limits_from_rows(
        [(r[0], r[1]) for r in session.query("SELECT name, value FROM sqlanon.query_limits")]
    )


def set_limit(session: Session, name: str, value: int | None) -> QueryLimits:
    """Store one bound on analyst queries (``None``: back to its default); the limits now."""
    if name not in LIMIT_NAMES:
        raise ConfigError(f"unknown limit {name!r}; the limits are {', '.join(LIMIT_NAMES)}")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(
            f"{name} must be a positive integer (default {getattr(DEFAULT_LIMITS, name)}), "
            f"or None for the default; got {value!r}"
        )
    with session.transaction():
        delete_rows(session, "query_limits", "name = $1", [name], f"limit {name}")
        if value is not None:
            session.execute(
                "INSERT INTO sqlanon.query_limits (name, value) VALUES ($1, $2)", [name, value]
            )
    return query_limits(session)


def delete_rows(session: Session, table: str, where: str, params: list[Any], what: str) -> None:
    """``DELETE FROM sqlanon.<table> WHERE <where>`` (both fixed text of the caller).
    Spark tables take no DELETE: there a row is stored once, and replacing one is
    refused (nothing written)."""
    if session.dialect != "spark":
        session.execute(f"DELETE FROM sqlanon.{table} WHERE {where}", params)  # noqa: S608
    elif session.query(f"SELECT count(*) FROM sqlanon.{table} WHERE {where}", params)[0][0]:  # noqa: S608
        raise ConfigError(
            f"{what} is stored already; on Spark sqlanon cannot replace it (Spark tables "
            "take no DELETE): keep it, or change it where the catalog allows DELETE"
        )
