-- A cell's id is a label within one version: the planner numbers the cells after each
-- release afresh (sqlanon/models/cells.py). So that a record whose cell did not change
-- keeps its state (and writes no span), a cell of this version that holds exactly the
-- records of one cell of the domain's latest release ($1, $2), and is the only one that
-- holds any of them, keeps that cell's id; every other cell gets a new id above all of
-- those. planned -> cell_id, for _sqlanon_state and _sqlanon_cells.
CREATE TEMP TABLE _sqlanon_cell_ids AS
WITH pairs AS (
    SELECT DISTINCT n.cell_id AS planned, d.cell_id AS earlier
    FROM _sqlanon_state AS n
    LEFT JOIN sqlanon.members AS d
      ON d.family = $1 AND d.version = $2 AND d.record_key = n.record_key
    WHERE n.cell_id IS NOT NULL
), kept AS (
    SELECT planned, min(earlier) AS earlier
    FROM pairs
    GROUP BY planned
    HAVING count(*) = 1 AND min(earlier) IS NOT NULL
), sole AS (
    SELECT k.planned, k.earlier
    FROM kept AS k
    JOIN (SELECT earlier FROM pairs GROUP BY earlier HAVING count(*) = 1) AS o
      ON o.earlier = k.earlier
)
SELECT planned, earlier AS cell_id FROM sole
UNION ALL
SELECT a.planned,
       (SELECT coalesce(max(earlier), -1) FROM pairs) + row_number() OVER (ORDER BY a.planned)
FROM (SELECT DISTINCT planned FROM pairs) AS a
WHERE NOT EXISTS (SELECT 1 FROM sole AS s WHERE s.planned = a.planned)
