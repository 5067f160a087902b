-- Keep the value of attribute $2 of every record this release gives a cell and whose
-- value domain $1 does not keep yet (first published, a new incarnation, or an
-- attribute the domain constrains from now on).
INSERT INTO sqlanon.kept_values (domain, record_key, attribute, value)
SELECT $1, CAST(a.record_key AS VARCHAR), $2, CAST(src.{column} AS VARCHAR)
FROM _sqlanon_members AS a
JOIN {source} AS src ON CAST(src.{key} AS VARCHAR) = CAST(a.record_key AS VARCHAR)
WHERE a.cell_id >= 0
  AND NOT EXISTS (SELECT 1 FROM sqlanon.kept_values AS k
                  WHERE k.domain = $1 AND k.attribute = $2
                    AND k.record_key = CAST(a.record_key AS VARCHAR))
