-- Record a's quasi-identifiers next to the sensitive value a.s of another record of the
-- same group (integer values travel with the assignment exactly), for the records this
-- version publishes (group_id >= 0), in the random order a.ord.
CREATE TABLE {release} AS
SELECT {quasi_q}, a.group_id, a.s AS {sensitive}
FROM _sqlanon_members AS a
JOIN {source} AS q ON q.{key} = a.record_key
WHERE a.group_id >= 0
ORDER BY a.ord
