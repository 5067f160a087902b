-- The audit's reads (sqlanon/state/audit_reads.py), empty: one row per record a
-- release published and attribute the audit reads of it (audit_read.sql fills it). The
-- driver never reads these rows: it reads their histories (audit_histories.sql).
CREATE TEMP TABLE _sqlanon_audit AS
SELECT CAST(NULL AS {text_type}) AS record_key, CAST(NULL AS INTEGER) AS position,
       CAST(NULL AS INTEGER) AS attribute, CAST(NULL AS BOOLEAN) AS required,
       CAST(NULL AS BIGINT) AS group_id, CAST(NULL AS BOOLEAN) AS ghost,
       CAST(NULL AS BOOLEAN) AS found, CAST(NULL AS {text_type}) AS value
FROM sqlanon.members
WHERE 1 = 0
