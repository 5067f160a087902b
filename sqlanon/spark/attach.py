"""Spark's entry points: ``install`` (catalog and migrations) and ``attach`` (a new
application finds the catalog and releases an earlier one wrote)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.release import retire
from sqlanon.spark.session import SparkSqlSession
from sqlanon.spark.undo import FAMILY_TABLES, location
from sqlanon.state import catalog, migrations, spark_rows


def is_spark_session(con: Any) -> bool:
    """Whether ``con`` is a ``pyspark.sql.SparkSession`` (without importing pyspark)."""
    return any(
        cls.__module__.startswith("pyspark.sql") and cls.__name__ == "SparkSession"
        for cls in type(con).__mro__
    )


_MASTER = re.compile(r"^(local(\[(\*|[0-9]+)(,[0-9]+)?\])?|yarn|(spark|k8s|mesos)://\S+)$")


def is_master_url(text: str) -> bool:
    """Whether ``text`` is a Spark master URL (``local[2]``, ``spark://host:7077``,
    ``yarn``, ``k8s://...``), as the CLI's ``--db`` takes it.

    >>> is_master_url("local[2]"), is_master_url("clinic.duckdb")
    (True, False)
    """
    return bool(_MASTER.match(text))


@contextmanager
def session_for_master(master: str) -> Iterator[Any]:
    """A SparkSession on ``master`` with sqlanon installed (the CLI's ``--db``); stopped
    at the end unless it was running already. Spark's own configuration (warehouse,
    catalog) comes from the usual places (``spark-defaults.conf``, ``SPARK_CONF_DIR``);
    the warehouse defaults to ``./spark-warehouse``.

    A new application logs only errors and draws no stage bars on stderr (the CLI's
    own lines stay readable); ``SQLANON_SPARK_VERBOSE=1`` keeps Spark's defaults."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise ConfigError(
            f"--db {master!r} is a Spark master URL, but pyspark is not installed: "
            "pip install 'sqlanon[spark]' (and Java 17)"
        ) from exc
    running = SparkSession.getActiveSession()
    builder = SparkSession.builder.master(master).appName("sqlanon")
    verbose = os.environ.get("SQLANON_SPARK_VERBOSE") == "1"
    if not verbose:
        builder = builder.config("spark.ui.showConsoleProgress", "false").config(
            "spark.log.level", "ERROR"
        )
    spark = builder.getOrCreate()
    if not verbose and running is None:
        spark.sparkContext.setLogLevel("ERROR")
    try:
        install(spark)
        yield spark
    finally:
        if running is None:
            spark.stop()


def install(spark: Any) -> list[str]:
    """Create database ``sqlanon`` with the catalog tables (idempotent); with Spark's
    in-memory catalog, first attach what an earlier application left in the warehouse
    (:func:`attach`)."""
    if not is_spark_session(spark):
        raise ConfigError("install() takes a pyspark.sql.SparkSession")

    session = SparkSqlSession(spark)
    try:
        attach(session)
        applied = migrations.migrate(session)
        attach_state_views(session)
        attach_releases(session)
        return applied
    finally:
        session.close()


_CATALOG_DDL = re.compile(
    r"^(CREATE TABLE IF NOT EXISTS sqlanon\.([a-z_]+) \(.*\) USING parquet);?$", re.DOTALL
)


def _in_memory(spark: Any) -> bool:
    return str(spark.conf.get("spark.sql.catalogImplementation", "in-memory")) == "in-memory"


def _literal(text: str) -> str:
    """A Spark string literal (backslashes escape in Spark SQL strings)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _subdirectories(spark: Any, location: str) -> dict[str, str]:
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(location)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(path):
        return {}
    return {
        str(st.getPath().getName()): str(st.getPath().toString())
        for st in fs.listStatus(path)
        if st.isDirectory()
    }


def attach(session: SparkSqlSession) -> list[str]:
    """Spark's default (in-memory) catalog forgets its tables when the application
    ends; their files stay in the warehouse. Register again the catalog tables (with
    their declared columns), bounds tables and families' rows tables of database
    ``sqlanon`` found there.
    Returns the tables attached. A Hive metastore keeps them itself: nothing to do."""
    spark = session.spark
    if not _in_memory(spark):
        return []
    spark.sql("CREATE DATABASE IF NOT EXISTS sqlanon").collect()
    ddl = {}
    texts = [sqltext.load("spark", "bootstrap"), *(t for _n, t in sqltext.migrations("spark"))]
    for text in texts:
        for statement in sqltext.statements(text):
            found = _CATALOG_DDL.match(statement)
            if found:
                ddl[found.group(2)] = found.group(1)
    attached = []
    for name, path in sorted(_subdirectories(spark, location(spark, "sqlanon")).items()):
        if spark.catalog.tableExists(f"sqlanon.`{name}`"):
            continue
        if name in ddl:
            spark.sql(f"{ddl[name]} LOCATION {_literal(path)}").collect()
        elif name.endswith(("_bounds", *FAMILY_TABLES)):
            spark.catalog.createTable(f"sqlanon.`{name}`", path=path, source="parquet")
        else:
            continue
        attached.append(name)
    return attached


_STATE_VIEW = re.compile(r"^CREATE VIEW sqlanon\.([a-z_]+) AS", re.IGNORECASE)


def attach_state_views(session: SparkSqlSession) -> list[str]:
    """The views ``sqlanon.members`` and ``sqlanon.cells`` over the spans (migration
    011), created again when the catalog does not know them: Spark's in-memory catalog
    forgets views when the application ends (a Hive metastore keeps them)."""
    spark = session.spark
    if not spark.catalog.tableExists("sqlanon.member_spans"):
        return []
    created = []
    for _name, text in sqltext.migrations("spark"):
        for statement in sqltext.statements(text):
            found = _STATE_VIEW.match(statement)
            if found and not spark.catalog.tableExists(f"sqlanon.{found.group(1)}"):
                spark.sql(statement).collect()
                created.append(found.group(1))
    return created


def attach_releases(session: SparkSqlSession) -> list[str]:
    """With the in-memory catalog, register again each release table of the current
    database left by an earlier application (each version stored in its family's rows:
    its view, ``sqlanon.release_columns``), each family's view of its newest, and
    each release's source table found in its database's warehouse folder (the audit
    reads the source's true values: ``sqlanon audit --db local[2] fam`` in a new
    application works from the catalog alone)."""
    spark = session.spark
    if not _in_memory(spark):
        return []
    q = session.quote_ident
    here = _subdirectories(spark, location(spark, q(session.current_schema())))
    attached = []
    newest: dict[str, str] = {}
    shown = spark_rows.shown_columns(session)
    for release in catalog.releases(session):
        newest[release.family] = release.table_name
        name = release.table_name
        if spark.catalog.tableExists(name):
            continue
        columns = shown.get((release.family, release.version))
        if columns is not None and release.version >= retire.served_from(session, release.family):
            view = spark_rows.view_sql(session, release.family, release.version, q(name), columns)
            spark.sql(view).collect()
            attached.append(name)
        elif name.lower() in here:
            spark.catalog.createTable(name, path=here[name.lower()], source="parquet")
            attached.append(name)
    attached += _attach_sources(session)
    for family, table in newest.items():
        if spark.catalog.tableExists(table) and not spark.catalog.tableExists(family):
            view = sqltext.render(
                sqltext.load("spark", "point_view"), family=q(family), release=q(table)
            )
            spark.sql(view).collect()
            attached.append(family)
    return attached


def _attach_sources(session: SparkSqlSession) -> list[str]:
    """The release sources (``schema.table`` in the catalog) the in-memory catalog does
    not know but whose folder is in their database's warehouse location (a table an
    earlier application saved with ``saveAsTable``), registered again over it."""
    spark = session.spark
    attached = []
    by_schema: dict[str, list[str]] = {}
    for label in sorted({r.source for r in catalog.releases(session)}):
        schema, _, table = label.partition(".")
        if table and not spark.catalog.tableExists(f"`{schema}`.`{table}`"):
            by_schema.setdefault(schema, []).append(table)
    for schema, tables in by_schema.items():
        if not spark.catalog.databaseExists(schema):
            continue
        here = _subdirectories(spark, location(spark, session.quote_ident(schema)))
        for table in tables:
            if table.lower() in here:
                spark.catalog.createTable(
                    f"`{schema}`.`{table}`", path=here[table.lower()], source="parquet"
                )
                attached.append(f"{schema}.{table}")
    return attached
