-- sqlanon/sql/ke_engine_changed_afresh.sql in Spark SQL (a temporary table takes no
-- UPDATE: it is made anew from itself, sqlanon/spark/session.py): the new incarnation
-- of a changed record starts afresh, no cell, never published.
CREATE TEMP TABLE _sqlanon_read AS
SELECT * EXCEPT (domain_cell, published_before, known),
       CASE WHEN value_changed AND domain_cell >= 0 THEN -1 ELSE domain_cell END AS domain_cell,
       CASE WHEN value_changed AND domain_cell >= 0 THEN false ELSE published_before END
           AS published_before,
       CASE WHEN value_changed AND domain_cell >= 0 THEN false ELSE known END AS known
FROM _sqlanon_read
