-- sql/common/ke_engine_counts.sql with the domain's ghosts (_sqlanon_ghost_read): each
-- is a record of its cell with its kept value.
SELECT domain_cell, s, count(*) AS records
FROM (SELECT domain_cell, s FROM _sqlanon_read
      UNION ALL
      SELECT domain_cell, s FROM _sqlanon_ghost_read) AS r
GROUP BY domain_cell, s
