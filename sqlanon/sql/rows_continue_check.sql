-- Groups whose rows left without a value and values left without a row differ in number
-- (sqlanon/sql/rows_continue.sql): none, or the release stops.
WITH u AS (
    SELECT sqlanon_group, count(*) AS n FROM _sqlanon_unassigned GROUP BY sqlanon_group
), p AS (
    SELECT sqlanon_group, sum(pool) AS n FROM _sqlanon_values GROUP BY sqlanon_group
)
SELECT count(*)
FROM u
FULL JOIN p ON p.sqlanon_group = u.sqlanon_group
WHERE coalesce(u.n, 0) <> coalesce(p.n, 0)
