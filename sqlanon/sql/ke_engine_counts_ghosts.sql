-- sqlanon/sql/ke_engine_counts.sql with the domain's ghosts (_sqlanon_ghost_read): each
-- is a record of its cell with its kept values.
SELECT {entry}, count(*) AS records
FROM (SELECT {entry} FROM _sqlanon_read
      UNION ALL
      SELECT {entry} FROM _sqlanon_ghost_read) AS r
GROUP BY {entry}
