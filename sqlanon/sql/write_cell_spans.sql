-- Store _sqlanon_cells (every cell's requirement per attribute after version $2 of
-- family $1) as changes, as write_member_spans.sql stores the members: open spans of a
-- requirement that changed or went close at the previous version, new ones open.
UPDATE sqlanon.cell_spans AS s
SET last_version = (SELECT max(v.version) FROM sqlanon.state_versions AS v
                    WHERE v.family = $1 AND v.version < $2)
WHERE s.family = $1 AND s.last_version IS NULL
  AND NOT EXISTS (
      SELECT 1 FROM _sqlanon_cells AS n
      WHERE n.cell_id = s.cell_id AND n.attribute = s.attribute
        AND n.min_distinct = s.min_distinct AND n.min_spread = s.min_spread);
INSERT INTO sqlanon.cell_spans (family, cell_id, attribute, first_version, last_version,
                                min_distinct, min_spread)
SELECT $1, n.cell_id, n.attribute, $2, NULL, n.min_distinct, n.min_spread
FROM _sqlanon_cells AS n
WHERE NOT EXISTS (SELECT 1 FROM sqlanon.cell_spans AS s
                  WHERE s.family = $1 AND s.last_version IS NULL
                    AND s.cell_id = n.cell_id AND s.attribute = n.attribute)
