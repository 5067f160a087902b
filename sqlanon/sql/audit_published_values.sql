-- The records one release ($1, $2) published, the group each was published in, and its
-- true value of one column as published (owner only), as text: a ghost's (a deleted
-- record, or the old incarnation of a changed value) as domain $3 keeps it for
-- attribute $4; a live record's from the source, or as kept when the source changed
-- since the domain's last release (the change is not published yet). found is false
-- for a published record that is neither in the source nor a ghost with a kept value.
-- Ordered by key, so that one release's reads of several columns line up.
SELECT m.record_key, m.group_id, coalesce(m.ghost, false) AS ghost,
       CASE WHEN coalesce(m.ghost, false) THEN k.value IS NOT NULL
            ELSE src.{key} IS NOT NULL END AS found,
       CASE WHEN coalesce(m.ghost, false) THEN k.value
            ELSE coalesce(k.value, CAST(src.{column} AS {text_type})) END AS value
FROM sqlanon.members AS m
LEFT JOIN {source} AS src
  ON CAST(src.{key} AS {text_type}) = m.record_key AND NOT coalesce(m.ghost, false)
LEFT JOIN sqlanon.kept_values AS k
  ON k.domain = $3 AND k.record_key = m.record_key AND k.attribute = $4
WHERE m.family = $1 AND m.version = $2 AND m.status = 'published'
ORDER BY m.record_key
