-- The records one release ($1, $2; the audit's release number $5) published, the group
-- each was published in, and its true value of one column (attribute number $6,
-- required: $7) as published (owner only), as text: a ghost's (a deleted record, or
-- the old incarnation of a changed value) as domain $3 keeps it for attribute $4; a
-- live record's from the source, or as kept when the source changed since the domain's
-- last release (the change is not published yet). found is false for a published
-- record that is neither in the source nor a ghost with a kept value.
INSERT INTO _sqlanon_audit
SELECT m.record_key, CAST($5 AS INTEGER), CAST($6 AS INTEGER), CAST($7 AS BOOLEAN),
       m.group_id, coalesce(m.ghost, false),
       CASE WHEN coalesce(m.ghost, false) THEN k.value IS NOT NULL
            ELSE src.{key} IS NOT NULL END,
       CASE WHEN coalesce(m.ghost, false) THEN k.value
            ELSE coalesce(k.value, CAST(src.{column} AS {text_type})) END
FROM sqlanon.members AS m
LEFT JOIN {source} AS src
  ON CAST(src.{key} AS {text_type}) = m.record_key AND NOT coalesce(m.ghost, false)
LEFT JOIN sqlanon.kept_values AS k
  ON k.domain = $3 AND k.record_key = m.record_key AND k.attribute = $4
WHERE m.family = $1 AND m.version = $2 AND m.status = 'published'
