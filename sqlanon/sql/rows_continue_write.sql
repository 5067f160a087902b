-- Version {version}'s continued groups written (sqlanon/sql/rows_continue.sql computed
-- them): the unmatched and forced current rows go to the history (last shown at the
-- version before); the rows left without a value take the pool's values, paired at
-- random within their group, and join the current rows.
INSERT INTO {history} ({columns}, sqlanon_first, sqlanon_last)
SELECT {columns}, sqlanon_first, {version} - 1
FROM {rows}
WHERE {row_id} IN (
    SELECT sqlanon_row FROM _sqlanon_leaving
    UNION ALL
    SELECT sqlanon_row FROM _sqlanon_forced
);
DELETE FROM {rows}
WHERE {row_id} IN (
    SELECT sqlanon_row FROM _sqlanon_leaving
    UNION ALL
    SELECT sqlanon_row FROM _sqlanon_forced
);
INSERT INTO {rows} ({who}, {group}, {what}, sqlanon_first)
WITH unassigned AS (
    SELECT u.*, row_number() OVER (PARTITION BY u.sqlanon_group ORDER BY u.draw) AS sqlanon_rank
    FROM (SELECT *, random() AS draw FROM _sqlanon_unassigned) AS u
), pool AS (
    SELECT p.sqlanon_group, p.sqlanon_value,
           row_number() OVER (PARTITION BY p.sqlanon_group ORDER BY p.draw) AS sqlanon_rank
    FROM (
        SELECT e.*, random() AS draw
        FROM (SELECT sqlanon_group, sqlanon_value, {explode}({series}(1, pool)) AS copy
              FROM _sqlanon_values) AS e
    ) AS p
)
SELECT {who_u}, u.sqlanon_group, p.sqlanon_value, {version}
FROM unassigned AS u
JOIN pool AS p ON p.sqlanon_group = u.sqlanon_group AND p.sqlanon_rank = u.sqlanon_rank
