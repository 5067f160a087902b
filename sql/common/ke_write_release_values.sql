-- Record a's quasi-identifiers next to the sensitive value a.s of another record of the
-- same group (integer values travel with the assignment exactly).
CREATE TABLE {release} AS
SELECT {quasi_q}, a.group_id, a.s AS {sensitive}
FROM _sqlanon_assign AS a
JOIN {source} AS q ON q.{key} = a.record_key
ORDER BY a.ord
