-- sqlanon/sql/write_cell_spans.sql in Spark SQL (see write_member_spans.sql here).
INSERT OVERWRITE sqlanon.cell_spans
SELECT s.family, s.cell_id, s.attribute, s.first_version,
       CASE WHEN s.family = $1 AND s.last_version IS NULL AND n.cell_id IS NULL
            THEN (SELECT max(v.version) FROM sqlanon.state_versions AS v
                  WHERE v.family = $1 AND v.version < $2)
            ELSE s.last_version END,
       s.min_distinct, s.min_spread
FROM sqlanon.cell_spans AS s
LEFT JOIN _sqlanon_cells AS n
  ON s.family = $1 AND s.last_version IS NULL AND n.cell_id = s.cell_id
 AND n.attribute = s.attribute AND n.min_distinct = s.min_distinct
 AND n.min_spread = s.min_spread;
INSERT INTO sqlanon.cell_spans
SELECT $1, n.cell_id, n.attribute, $2, CAST(NULL AS INT), n.min_distinct, n.min_spread
FROM _sqlanon_cells AS n
LEFT ANTI JOIN (SELECT cell_id, attribute FROM sqlanon.cell_spans
                WHERE family = $1 AND last_version IS NULL) AS s
  ON s.cell_id = n.cell_id AND s.attribute = n.attribute
