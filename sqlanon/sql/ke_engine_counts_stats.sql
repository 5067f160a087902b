-- The engine path's first look at the read, in one pass: the entries of
-- sqlanon/sql/ke_engine_counts.sql (cell of the domain's latest release or -1, value) with
-- their records, and per entry the counts sqlanon/release/ke_engine.py checks first, summed
-- over the entries: values that are not finite, records whose constrained value changed
-- (a ghost, a new incarnation, a chain), records new to the family, and known records
-- whose other published columns changed. When nothing changed a constrained value and
-- the domain has no chains and no ghosts, these are the planner's entries as they are.
SELECT domain_cell, s, count(*) AS records,
       count(*) FILTER (WHERE NOT (s - s = 0)) AS not_finite,  -- NaN or infinite, in every dialect
       count(*) FILTER (WHERE value_changed AND domain_cell >= 0) AS value_changed,
       count(*) FILTER (WHERE NOT known) AS inserted,
       count(*) FILTER (WHERE known AND changed
                        AND NOT (value_changed AND domain_cell >= 0)) AS quasi_changed,
       count(*) FILTER (WHERE domain_cell >= 0) AS celled
FROM _sqlanon_read
GROUP BY domain_cell, s
