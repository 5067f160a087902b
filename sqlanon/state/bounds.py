"""The bounds table of a (k,e) release (layout: ``sqlanon.models.ke_bounds``): from the
published records, from counts, or in SQL in the column's own arithmetic."""

from __future__ import annotations

import json

import numpy as np

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.models import ke_bounds
from sqlanon.session import Session
from sqlanon.state.source import (
    INTEGER,
    Source,
    bounds_relation,
    current_schema,
    grant_readers,
    relation,
    render_sql,
)


def exact_integers(sensitive_type: str, values: np.ndarray) -> bool:
    """Integer values whose sums stay below 2**53: exact in float64 all the way."""
    return bool(INTEGER.search(sensitive_type.lower())) and float(np.abs(values).sum()) < 2.0**53


def write_bounds_sql(session: Session, bounds: str, release: str, sensitive: str) -> None:
    session.execute(
        render_sql(session, "ke_write_bounds", bounds=bounds, release=release, sensitive=sensitive)
    )


def write_bounds_rows(
    session: Session,
    bounds: str,
    release: str,
    sensitive: str,
    sensitive_type: str,
    values: np.ndarray,
    group: np.ndarray,
) -> None:
    """Write the bounds table: each group's sorted values as runs with their sums
    (layout: :mod:`sqlanon.models.ke_bounds`).

    Integer values whose sums stay below 2**53 are exact in float64, so numpy computes
    the table; anything else (DECIMAL, floats, larger integers) goes through SQL in the
    column's own arithmetic so the bounds match the database's SUM exactly. Integers
    whose absolute sum reaches 2**62 are refused: a lookup multiplies a value by a rank
    count in 64-bit arithmetic.
    """
    if not exact_integers(sensitive_type, values):
        if INTEGER.search(sensitive_type.lower()) and float(np.abs(values).sum()) >= 2.0**62:
            raise ConfigError(
                f"sensitive column {sensitive}: the sum of its absolute values reaches 2**62, "
                "beyond what interval answers compute exactly; store it in coarser units "
                "(e.g. thousands) or as DECIMAL"
            )
        write_bounds_sql(session, bounds, release, sensitive)
        return
    columns = ke_bounds.bounds_columns(values.astype(np.int64), group.astype(np.int64))
    types = dict.fromkeys(ke_bounds.COLUMNS, "INTEGER")
    types.update(value=sensitive_type, vmin=sensitive_type, vmax=sensitive_type)
    types.update(descending="BOOLEAN", prior_sum="BIGINT", total="BIGINT")
    session.load_temp("_sqlanon_bounds", columns, types)
    session.execute(render_sql(session, "ke_copy_bounds", bounds=bounds))
    session.execute("DROP TABLE _sqlanon_bounds")


def runs_exact(src: Source, sensitive: str, values: np.ndarray, counts: np.ndarray) -> bool:
    """Whether the published (value, count) entries are integers whose sums are exact
    in float64 (the plan's values are then the column's own, and the bounds' sums fit
    BIGINT); integers whose absolute sum reaches 2**62 are refused (a lookup multiplies
    a value by a rank count in 64-bit arithmetic)."""
    sensitive_type = src.columns[sensitive]
    total = float((np.abs(values) * counts).sum())
    integer = INTEGER.search(sensitive_type.lower()) is not None
    if integer and total >= 2.0**62:
        raise ConfigError(
            f"sensitive column {sensitive!r}: the sum of its absolute values reaches "
            "2**62, beyond what interval answers compute exactly; store it in coarser "
            "units (e.g. thousands) or as DECIMAL"
        )
    return integer and total < 2.0**53


def load_runs(
    session: Session, sensitive_type: str, values: np.ndarray, counts: np.ndarray, group: np.ndarray
) -> None:
    """The published (group, value, count) entries as ``_sqlanon_runs``, values in the
    column's type: only for entries :func:`runs_exact` accepts (the engine path builds
    the others in SQL, ``sqlanon/sql/ke_engine_runs.sql``)."""
    session.load_temp(
        "_sqlanon_runs",
        {"group_id": group.astype(np.int64), "value": values.astype(np.int64), "c": counts},
        {"group_id": "INTEGER", "value": sensitive_type, "c": "BIGINT"},
    )


def write_bounds_runs(session: Session, table: str, exact: bool) -> None:
    """The bounds table of release ``table`` from ``_sqlanon_runs`` (the engine expands
    the runs into blocks: built in Python, the table would hold memory for every 64
    records of a run); sums cast to BIGINT when ``exact``, else in the column's own
    arithmetic, as :func:`write_bounds_sql` computes them from the release table."""
    name = "ke_bounds_from_runs" if exact else "ke_bounds_from_runs_sums"
    session.execute(render_sql(session, name, bounds=bounds_relation(session, table)))


def write_bounds_counts(
    session: Session,
    src: Source,
    sensitive: str,
    table: str,
    values: np.ndarray,
    counts: np.ndarray,
    group: np.ndarray,
) -> None:
    """The bounds table from the published (value, count, group) entries, in SQL: from
    the runs for integers whose sums are exact in float64, else from the release table
    in the column's own arithmetic (:func:`write_bounds_rows`'s rule)."""
    if not runs_exact(src, sensitive, values, counts):
        q = session.quote_ident
        write_bounds_sql(
            session, bounds_relation(session, table), relation(session, table), q(sensitive)
        )
        return
    load_runs(session, src.columns[sensitive], values, counts, group)
    write_bounds_runs(session, table, exact=True)
    session.execute("DROP TABLE _sqlanon_runs")


def move_bounds_tables(session: Session) -> None:
    """Migration 010's data step (PostgreSQL): every bounds table still in schema sqlanon
    moves to sqlanon_bounds, its rows and grants with it."""
    q = session.quote_ident
    for (name,) in session.query(sqltext.load(session.dialect, "bounds_in_catalog")):
        session.execute(f"ALTER TABLE sqlanon.{q(name)} SET SCHEMA sqlanon_bounds")


def rebuild_ke_bounds(session: Session) -> None:
    """Rewrite the bounds table of every (k,e) release from its release table, in the
    current layout (migration 003; a release table its owner dropped is skipped)."""
    q = session.quote_ident
    schema = current_schema(session)
    exists = sqltext.load(session.dialect, "relation_exists")
    # The catalog as migration 003 knows it (later migrations add columns).
    for table, parameters in session.query(
        "SELECT table_name, CAST(parameters AS VARCHAR) FROM sqlanon.releases WHERE model = 'ke'"
    ):
        if not session.query(exists, [schema, table]):
            continue
        bounds = bounds_relation(session, table)
        session.execute(f"DROP TABLE IF EXISTS {bounds}")
        legacy = f"{q('sqlanon')}.{q(table + '_bounds')}"  # PostgreSQL before migration 010
        if legacy != bounds:
            session.execute(f"DROP TABLE IF EXISTS {legacy}")
        write_bounds_sql(
            session, bounds, relation(session, table), q(json.loads(parameters)["sensitive"])
        )
        grant_readers(session, [bounds])
