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
    q = session.quote_ident
    bounds = bounds_relation(session, table)
    sensitive_type = src.columns[sensitive]
    total = float((np.abs(values) * counts).sum())
    if not (INTEGER.search(sensitive_type.lower()) and total < 2.0**53):
        if INTEGER.search(sensitive_type.lower()) and total >= 2.0**62:
            raise ConfigError(
                f"sensitive column {q(sensitive)}: the sum of its absolute values reaches "
                "2**62, beyond what interval answers compute exactly; store it in coarser "
                "units (e.g. thousands) or as DECIMAL"
            )
        write_bounds_sql(session, bounds, relation(session, table), q(sensitive))
        return
    # The runs go to the engine, which expands them into blocks (the table has a row
    # per 64 records of a run: built here, it would hold Python memory for every record).
    session.load_temp(
        "_sqlanon_runs",
        {"group_id": group.astype(np.int64), "value": values.astype(np.int64), "c": counts},
        {"group_id": "INTEGER", "value": sensitive_type, "c": "BIGINT"},
    )
    session.execute(render_sql(session, "ke_bounds_from_runs", bounds=bounds))
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
