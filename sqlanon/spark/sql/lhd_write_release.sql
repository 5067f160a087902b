-- sqlanon/sql/lhd_write_release.sql in Spark SQL (a parquet table; STRING for VARCHAR).
-- Published labels of each record's class next to its exact sensitive values.
CREATE TABLE {release} USING parquet AS
SELECT {labels}, {sensitive}, a.class_id
FROM _sqlanon_lhd AS a
JOIN {source} AS v ON CAST(v.{key} AS STRING) = a.record_key
ORDER BY a.ord
