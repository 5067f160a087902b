-- What the engine path checks first (sqlanon/release/ke_engine.py): values that are not
-- finite, records whose constrained value changed (a ghost, a new incarnation, a
-- chain), records new to the family, and known records whose other published columns
-- changed.
SELECT count(*) AS n,
       count(*) FILTER (WHERE NOT (s - s = 0)) AS not_finite,  -- NaN or infinite, in both dialects
       count(*) FILTER (WHERE value_changed AND domain_cell >= 0) AS value_changed,
       count(*) FILTER (WHERE NOT known) AS inserted,
       count(*) FILTER (WHERE known AND changed
                        AND NOT (value_changed AND domain_cell >= 0)) AS quasi_changed,
       count(*) FILTER (WHERE domain_cell >= 0) AS celled
FROM _sqlanon_read
