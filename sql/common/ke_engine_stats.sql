-- What decides whether the engine path may release (sqlanon/release_engine.py): values
-- that are not finite, records whose constrained value changed (a ghost and a chain:
-- the row path), records new to the family, and known records with changed columns.
SELECT count(*) AS n,
       count(*) FILTER (WHERE NOT (s - s = 0)) AS not_finite,  -- NaN or infinite, in both dialects
       count(*) FILTER (WHERE value_changed AND domain_cell >= 0) AS value_changed,
       count(*) FILTER (WHERE NOT known) AS inserted,
       count(*) FILTER (WHERE known AND changed) AS quasi_changed,
       count(*) FILTER (WHERE domain_cell >= 0) AS celled
FROM _sqlanon_read
