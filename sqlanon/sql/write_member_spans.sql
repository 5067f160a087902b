-- Store _sqlanon_state (one row per record of version $2 of family $1) as changes: the
-- family's open spans whose record left or changed state close at the family's previous
-- version, and each record without an open span (new, changed, or back) opens one. An
-- unchanged record writes nothing. Version $2 is in sqlanon.state_versions already
-- (state_version.sql): the open spans run through it until they are closed here.
UPDATE sqlanon.member_spans AS s
SET last_version = (SELECT max(v.version) FROM sqlanon.state_versions AS v
                    WHERE v.family = $1 AND v.version < $2)
WHERE s.family = $1 AND s.last_version IS NULL
  AND NOT EXISTS (
      SELECT 1 FROM _sqlanon_state AS n
      WHERE n.record_key = s.record_key
        AND n.group_id IS NOT DISTINCT FROM s.group_id
        AND n.cell_id IS NOT DISTINCT FROM s.cell_id
        AND n.status = s.status
        AND n.row_hash = s.row_hash
        AND n.value_hash IS NOT DISTINCT FROM s.value_hash
        AND n.ghost IS NOT DISTINCT FROM s.ghost);
INSERT INTO sqlanon.member_spans (family, record_key, first_version, last_version, group_id,
                                  cell_id, status, row_hash, value_hash, ghost)
SELECT $1, n.record_key, $2, NULL, n.group_id, n.cell_id, n.status, n.row_hash,
       n.value_hash, n.ghost
FROM _sqlanon_state AS n
WHERE NOT EXISTS (SELECT 1 FROM sqlanon.member_spans AS s
                  WHERE s.family = $1 AND s.last_version IS NULL
                    AND s.record_key = n.record_key)
