-- Record a's quasi-identifiers next to the sensitive value of record a.s_key (same group).
-- The key is an integer column: join on it natively.
CREATE TABLE {release} AS
SELECT {quasi_q}, a.group_id, v.{sensitive}
FROM _sqlanon_assign AS a
JOIN {source} AS q ON q.{key} = a.record_key
JOIN {source} AS v ON v.{key} = a.s_key
ORDER BY a.ord
