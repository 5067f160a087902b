-- What the lHD engine path checks first (sqlanon/release/lhd_engine.py): records whose
-- constrained value changed (a ghost, a new incarnation, a chain: the row path's work),
-- records new to the family, known records whose published columns changed, records
-- with a cell in the domain.
SELECT count(*) AS n,
       count(*) FILTER (WHERE value_changed AND domain_cell >= 0) AS value_changed,
       count(*) FILTER (WHERE NOT known) AS inserted,
       count(*) FILTER (WHERE known AND changed
                        AND NOT (value_changed AND domain_cell >= 0)) AS quasi_changed,
       count(*) FILTER (WHERE domain_cell >= 0) AS celled
FROM _sqlanon_read
