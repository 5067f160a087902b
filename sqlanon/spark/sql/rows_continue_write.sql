-- Spark's form of sqlanon/sql/rows_continue_write.sql (append-only): the unmatched and
-- forced current rows are closed (last shown at the version before); the rows left
-- without a value take the pool's values, paired at random within their group, and are
-- appended to {table}, numbered from {row_base}.
INSERT INTO {history}
SELECT c.sqlanon_row, {version} - 1
FROM (
    SELECT sqlanon_row FROM _sqlanon_leaving
    UNION ALL
    SELECT sqlanon_row FROM _sqlanon_forced
) AS c;
INSERT INTO {table} ({who}, {group}, {what}, sqlanon_first, sqlanon_row)
SELECT {who_u}, u.sqlanon_group, p.sqlanon_value, {version},
       {row_base} + row_number() OVER (ORDER BY u.draw) - 1
FROM (
    SELECT a.*, row_number() OVER (PARTITION BY a.sqlanon_group ORDER BY a.draw) AS sqlanon_rank
    FROM (SELECT *, random() AS draw FROM _sqlanon_unassigned) AS a
) AS u
JOIN (
    SELECT e.sqlanon_group, e.sqlanon_value,
           row_number() OVER (PARTITION BY e.sqlanon_group ORDER BY e.draw) AS sqlanon_rank
    FROM (
        SELECT x.sqlanon_group, x.sqlanon_value, random() AS draw
        FROM (SELECT sqlanon_group, sqlanon_value, explode(sequence(1, pool)) AS copy
              FROM _sqlanon_values WHERE pool > 0) AS x
    ) AS e
) AS p ON p.sqlanon_group = u.sqlanon_group AND p.sqlanon_rank = u.sqlanon_rank
