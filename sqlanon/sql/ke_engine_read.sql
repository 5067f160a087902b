-- The engine path's one read of a (k,e) release: every source row joined with its state
-- (ke_read_source.sql, appended by sqlanon/release/ke_engine.py), with the columns the release writes carried
-- along (`{carried}`: quasi-identifiers, the sensitive value in its own type, the
-- attributes the domain keeps), kept in a temporary table that the plan is joined to.
-- No row leaves the database: the planner reads sqlanon/sql/ke_engine_counts.sql.
CREATE TEMP TABLE _sqlanon_read AS
SELECT r.record_value, r.s, r.row_hash, r.value_hash, r.domain_cell, r.known, r.changed, r.prev_group,
       r.published_before, r.value_changed, {carried}
FROM (
