-- Record a's quasi-identifiers next to the sensitive value of record a.s_key (same group).
CREATE TABLE {release} AS
SELECT {quasi_q}, a.group_id, v.{sensitive}
FROM _sqlanon_assign AS a
JOIN {source} AS q ON CAST(q.{key} AS VARCHAR) = a.record_key
JOIN {source} AS v ON CAST(v.{key} AS VARCHAR) = a.s_key
ORDER BY a.ord
