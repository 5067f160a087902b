-- Candidate pairs (new group, current group) of equal size and fingerprints
-- (sqlanon/sql/rows_groups.sql), one to one: among groups alike, the i-th new with the
-- i-th current.
CREATE TEMP TABLE _sqlanon_pairs AS
WITH n AS (
    SELECT group_id, n, who, what,
           row_number() OVER (PARTITION BY n, who, what ORDER BY group_id) AS r
    FROM _sqlanon_new_groups
), o AS (
    SELECT group_id, n, who, what,
           row_number() OVER (PARTITION BY n, who, what ORDER BY group_id) AS r
    FROM _sqlanon_open_groups
)
SELECT n.group_id AS new_id, o.group_id AS old_id
FROM n
JOIN o ON o.n = n.n AND o.who = n.who AND o.what = n.what AND o.r = n.r
