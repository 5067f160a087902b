-- Record a's quasi-identifiers next to the sensitive value of record a.s_key (same group),
-- for the records this version publishes (group_id >= 0), in the random order a.ord.
-- The keys have the key column's own type: the joins are native.
CREATE TABLE {release} AS
SELECT {quasi_q}, a.group_id, v.{sensitive}
FROM _sqlanon_members AS a
JOIN {source} AS q ON q.{key} = a.record_key
JOIN {source} AS v ON v.{key} = a.s_key
WHERE a.group_id >= 0
ORDER BY a.ord
