-- The engine path's one read of an lHD release: every source row with its state and the
-- columns the release reads (sql/duckdb/lhd_read_source.sql, appended by
-- sqlanon/release/lhd_engine.py), and `unit`: a 64-bit hash of the values the planner
-- tells records apart by (`{entry}`: the cell of the domain's latest release, the
-- quasi-identifiers, the sensitive and constrained attributes). Rows with equal values
-- share a unit; the planner reads one row per unit (sql/common/lhd_engine_units.sql),
-- which also proves no two distinct units share a hash, and the plan joins back on it.
CREATE TEMP TABLE _sqlanon_read AS
SELECT r.*, hash({entry}) AS unit
FROM (
