-- The engine path's one read of an lHD release: every source row with its state and the
-- columns the release reads (lhd_read_source.sql, appended by
-- sqlanon/release/lhd_engine.py), and `unit`: a 64-bit hash of the values the planner
-- tells records apart by (`{entry}`: the cell of the domain's latest release, the
-- quasi-identifiers, the sensitive and constrained attributes). Rows with equal values
-- share a unit; the planner reads one row per unit (sqlanon/sql/lhd_engine_units.sql),
-- which also proves no two distinct units share a hash. `seg`: the row's rank in its
-- unit by key, capped at $6 (the planner places the first $6 records of a unit one by
-- one and the rest together: sqlanon/models/lhd_problem.py, UNIT_SINGLES); the plan joins back
-- on (unit, seg).
CREATE TEMP TABLE _sqlanon_read AS
SELECT u.*, least(row_number() OVER (PARTITION BY u.unit ORDER BY u.record_key) - 1, $6) AS seg
FROM (
SELECT r.*, hash({entry}) AS unit
FROM (
