-- Whether a domain's latest release gave a cell to any record whose key is in this source.
SELECT count(*) > 0 FROM (
    SELECT 1 FROM sqlanon.members AS m
    JOIN {source} AS src ON CAST(src.{key} AS {text_type}) = m.record_key
    WHERE m.family = $1 AND m.version = $2 AND m.cell_id IS NOT NULL
    LIMIT 1
) AS hit
