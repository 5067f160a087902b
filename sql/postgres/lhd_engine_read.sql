-- PostgreSQL's twin of sql/duckdb/lhd_engine_read.sql: `unit` hashes the text of the
-- row of the values the planner tells records apart by (`{entry}`).
CREATE TEMP TABLE _sqlanon_read AS
SELECT r.*, hashtextextended(CAST(ROW({entry}) AS text), 0) AS unit
FROM (
