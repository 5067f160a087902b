"""DuckDB, the embedded default: the session, ``register``/``install`` of the SQL
functions on a connection, and the dbt-duckdb plugin."""
