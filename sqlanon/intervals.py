"""Interval answers against a database: the rewriter's view of the releases in it (names
analysts may use, the lHD labels' hierarchies) and the rewrite of an analyst's query,
cached for (k,e) catalogs. Used by the Python API, the DuckDB functions and PostgreSQL's
PL/Python functions alike."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlanon import sqltext
from sqlanon.rewriter import catalog_from_rows
from sqlanon.rewriter import rewrite as rewrite_sql
from sqlanon.rewriter.limits import QueryLimits
from sqlanon.rewriter.release_info import label_domain, null_quasi
from sqlanon.session import Session
from sqlanon.state.catalog import query_limits
from sqlanon.state.hierarchies import attribute_name, dataset_of
from sqlanon.state.source import current_schema, relation, relation_exists


def release_catalog(session: Session) -> dict[str, Any]:
    """The rewriter's view of every release in this database (names analysts may use)."""
    return _catalog(session, _release_rows(session))


def _release_rows(session: Session) -> tuple[tuple[Any, ...], ...]:
    """``(family, version, table_name, model, parameters JSON, metrics JSON, retired)``
    of every release, by family and version (the rewriter reads ``ghosts`` from the
    metrics). An analyst's export has no ``sqlanon.retirements``: it holds served
    versions only."""
    name = "release_rows"
    if session.dialect == "duckdb" and not relation_exists(session, "sqlanon", "retirements"):
        name = "release_rows_served"
    sql = sqltext.load(session.dialect, name)
    rows = [tuple(r) for r in session.query(sql)]
    if session.dialect == "postgres":
        rows = _with_sources(session, rows)
    # sorted here (by family, version): cheaper than ORDER BY, and a stable cache key
    return tuple(sorted(rows))


def _with_sources(session: Session, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """PostgreSQL: release_catalog() shows no source (analysts may not learn them); a
    caller who may read ``sqlanon.releases`` (an owner) gets each release's source in
    its parameters, so the rewriter refuses a query reading one as public data."""
    ((readable,),) = session.query(
        "SELECT pg_catalog.has_table_privilege('sqlanon.releases', 'SELECT')"
    )
    if not readable:
        return rows
    sources = dict(session.query(sqltext.load(session.dialect, "release_sources")))
    patched = []
    for family, version, table, model, parameters, *metrics in rows:
        found = {**json.loads(parameters), "source": sources.get(table)}
        patched.append((family, version, table, model, json.dumps(found), *metrics))
    return patched


def _catalog(session: Session, rows: Sequence[Sequence[Any]]) -> dict[str, Any]:
    if not any(r[3] == "lhd" for r in rows):
        return catalog_from_rows(rows)
    if session.dialect == "postgres":
        # ... nor sqlanon.hierarchies: another one shows the lHD releases' hierarchies.
        found = session.query(
            "SELECT table_name, quasi, value, level, label FROM sqlanon.release_hierarchies()"
            " WHERE value IS NOT NULL"
        )
    else:
        found = _lhd_hierarchy_rows(session, rows)
    return catalog_from_rows(rows, _lhd_domains(session, rows, found))


def session_rewrite(
    session: Session,
    sql: str,
    dialect: str | None = None,
    checkpoint: Callable[[], None] | None = None,
) -> str:
    """The interval SQL of ``sql`` against the releases of ``session``'s database.

    Without lHD releases the catalog is just the release rows, so the SQL is cached on
    (query, dialect, rows): a repeated query costs one read of ``sqlanon.releases``, and
    any new release changes the rows. lHD catalogs also depend on hierarchies and
    published labels and are rebuilt on every call. ``checkpoint`` is passed to the
    rewriter (called between its steps); give the same function each time, it is part
    of the cache key.
    """
    dialect = dialect or session.dialect
    limits = query_limits(session)  # the rewriter checks them before it parses
    rows = _release_rows(session)
    if any(r[3] == "lhd" for r in rows):
        return rewrite_sql(sql, _catalog(session, rows), dialect, limits, checkpoint)
    return _rewrite_ke(sql, dialect, rows, limits, checkpoint)


@functools.lru_cache(maxsize=256)
def _rewrite_ke(
    sql: str,
    dialect: str,
    rows: tuple[tuple[Any, ...], ...],
    limits: QueryLimits,
    checkpoint: Callable[[], None] | None = None,
) -> str:
    return rewrite_sql(sql, catalog_from_rows(rows), dialect, limits, checkpoint)


def _quasi_columns(parameters: Any) -> list[str]:
    quasi = json.loads(parameters).get("quasi") or []
    return [quasi] if isinstance(quasi, str) else list(quasi)


def _lhd_hierarchy_rows(session: Session, rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """``(table_name, quasi column, value, level, label)`` for every ARX hierarchy row of
    every lHD release's quasi column, read from ``sqlanon.hierarchies`` (DuckDB; on
    PostgreSQL ``sqlanon.release_hierarchies()`` gives the same rows): the dataset is
    the release's (:func:`sqlanon.state.hierarchies.dataset_of`), attributes match columns as in
    :func:`sqlanon.state.hierarchies.attribute_name`."""
    by_attribute: dict[tuple[str, str], list[tuple[Any, Any, Any]]] = {}
    for dataset, attribute, value, level, label in session.query(
        "SELECT dataset, attribute, value, level, label FROM sqlanon.hierarchies"
    ):
        key = (str(dataset), attribute_name(str(attribute)))
        by_attribute.setdefault(key, []).append((value, level, label))
    found = []
    for _family, _version, table, model, parameters, *_metrics in rows:
        if model != "lhd":
            continue
        dataset = dataset_of(json.loads(parameters))
        for column in _quasi_columns(parameters):
            for value, level, label in by_attribute.get((dataset, attribute_name(column)), []):
                found.append((table, column, value, level, label))
    return found


def _lhd_domains(
    session: Session, rows: Sequence[Sequence[Any]], hierarchy_rows: Iterable[Sequence[Any]]
) -> dict[str, Any]:
    """Per lHD release table, per quasi column: what its published labels may stand for.

    ``hierarchy_rows`` are ``(table_name, quasi column, value, level, label)`` rows of
    the columns' ARX hierarchies (public metadata); a column without any has a numeric
    widths hierarchy, whose labels are read from the release table itself."""
    found: dict[tuple[str, str], list[tuple[Any, Any, Any]]] = {}
    for table, column, value, level, label in hierarchy_rows:
        found.setdefault((str(table), str(column)), []).append((value, level, label))
    q = session.quote_ident
    # The owner may drop old version tables (README, "Changing tables"): skip them.

    domains: dict[str, Any] = {}
    for _family, _version, table, model, parameters, *metrics in rows:
        if model != "lhd":
            continue
        schema = json.loads(parameters).get("schema")
        if not relation_exists(session, schema or current_schema(session), str(table)):
            continue
        release = relation(session, table) if schema is None else f"{q(schema)}.{q(table)}"
        nulls = null_quasi(metrics[0] if metrics else None, str(table))
        per_column = {}
        for column in _quasi_columns(parameters):
            if (str(table), column) in found:
                per_column[column] = label_domain(
                    found[(str(table), column)], nulls=column in nulls
                )
            else:
                labels = session.query(f"SELECT DISTINCT {q(column)} FROM {release}")  # noqa: S608
                per_column[column] = label_domain(
                    published=[r[0] for r in labels], nulls=column in nulls
                )
        domains[str(table)] = per_column
    return domains
