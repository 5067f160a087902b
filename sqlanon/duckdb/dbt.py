"""dbt-duckdb plugin: sqlanon's SQL functions on every connection dbt opens.

In ``profiles.yml``::

    my_project:
      target: dev
      outputs:
        dev:
          type: duckdb
          path: clinic.duckdb
          plugins:
            - module: sqlanon.duckdb.dbt

and the ``sqlanon_release`` materialization from the dbt package in ``dbt_sqlanon/``
(``python -m sqlanon.duckdb.dbt`` prints where this install keeps it, for ``packages.yml``).

dbt-duckdb opens one DuckDB connection per run and hands every thread a cursor of it.
Python UDFs belong to the database instance, so registering them once on the parent
connection makes them callable from every cursor; temporary macros belong to one
connection only, so each cursor gets the macros (``sqlanon_release_ke(...)`` and
friends) again.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
from dbt.adapters.duckdb.plugins import BasePlugin

from sqlanon import sqltext
from sqlanon.duckdb.register import define_macros, install


class Plugin(BasePlugin):
    """Loaded by dbt-duckdb for ``plugins: [{module: sqlanon.duckdb.dbt}]``."""

    _conn: duckdb.DuckDBPyConnection | None = None

    def configure_connection(self, conn: duckdb.DuckDBPyConnection) -> None:
        """Apply pending catalog migrations and register the UDFs and macros."""
        install(conn)
        self._conn = conn

    def configure_cursor(self, cursor: duckdb.DuckDBPyConnection) -> None:
        """Define the temporary macros on a cursor: they do not carry over from ``conn``."""
        if self._conn is None:
            raise RuntimeError("dbt-duckdb opened a cursor before configuring its connection")
        define_macros(cursor, self._conn)


def package_dir() -> Path:
    """The dbt package with the ``sqlanon_release`` materialization, for ``packages.yml``."""
    return sqltext.data_dir("dbt_sqlanon")


if __name__ == "__main__":
    sys.stdout.write(f"{package_dir()}\n")
