-- Published labels of each record's class next to its exact sensitive values.
CREATE TABLE {release} {table_format} AS
SELECT {labels}, {sensitive}, a.class_id
FROM _sqlanon_lhd AS a
JOIN {source} AS v ON CAST(v.{key} AS {text_type}) = a.record_key
ORDER BY a.ord
