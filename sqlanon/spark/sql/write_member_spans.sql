-- sqlanon/sql/write_member_spans.sql in Spark SQL (no UPDATE: the spans are written
-- anew, INSERT OVERWRITE, as sqlanon/spark/sql/live_ghost.sql writes its tables): the
-- family's open spans whose record left or changed state close at the family's
-- previous version; each record of _sqlanon_state without an open span opens one.
INSERT OVERWRITE sqlanon.member_spans
SELECT s.family, s.record_key, s.first_version,
       CASE WHEN s.family = $1 AND s.last_version IS NULL AND n.record_key IS NULL
            THEN (SELECT max(v.version) FROM sqlanon.state_versions AS v
                  WHERE v.family = $1 AND v.version < $2)
            ELSE s.last_version END,
       s.group_id, s.cell_id, s.status, s.row_hash, s.value_hash, s.ghost
FROM sqlanon.member_spans AS s
LEFT JOIN _sqlanon_state AS n
  ON s.family = $1 AND s.last_version IS NULL AND n.record_key = s.record_key
 AND n.group_id <=> s.group_id AND n.cell_id <=> s.cell_id AND n.status = s.status
 AND n.row_hash <=> s.row_hash AND n.value_hash <=> s.value_hash AND n.ghost <=> s.ghost;
INSERT INTO sqlanon.member_spans
SELECT $1, n.record_key, $2, CAST(NULL AS INT), n.group_id, n.cell_id, n.status, n.row_hash,
       n.value_hash, n.ghost
FROM _sqlanon_state AS n
LEFT ANTI JOIN (SELECT record_key FROM sqlanon.member_spans
                WHERE family = $1 AND last_version IS NULL) AS s
  ON s.record_key = n.record_key
