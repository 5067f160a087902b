-- The rows of version {version}'s continued groups (sqlanon/state/continued_rows.py: what
-- is kept, what is drawn again, and why that is as safe as a fresh shuffle), in steps that
-- touch every row of the groups only to count them.
-- The quasi-identifier tuples `{who}` a continued group shows a different number of times
-- in its current rows ({rows}) and in the rows the release wrote ({staging}).
CREATE TEMP TABLE _sqlanon_tuples AS
SELECT sqlanon_group, {who},
       count(*) FILTER (WHERE sqlanon_old) AS sqlanon_old_n,
       count(*) FILTER (WHERE NOT sqlanon_old) AS sqlanon_new_n
FROM (
    SELECT t.{group} AS sqlanon_group, {who_t}, true AS sqlanon_old
    FROM {rows} AS t
    WHERE t.{group} IN (SELECT final_id FROM _sqlanon_group_ids WHERE continued)
    UNION ALL
    SELECT t.{group}, {who_t}, false
    FROM {staging} AS t
    WHERE t.{group} IN (SELECT final_id FROM _sqlanon_group_ids WHERE continued)
) AS s
GROUP BY sqlanon_group, {who}
HAVING count(*) FILTER (WHERE sqlanon_old) <> count(*) FILTER (WHERE NOT sqlanon_old);
-- Their rows on both sides (`{row_id}`: a current row's place), numbered at random within
-- each tuple: a current row is matched (it stays) while the new side has as many rows of
-- its tuple, a new row while the current side has. Every other row is matched.
CREATE TEMP TABLE _sqlanon_diff AS
WITH sides AS (
    SELECT t.{row_id} AS sqlanon_row, x.sqlanon_group, {who_t}, true AS sqlanon_old,
           x.sqlanon_old_n, x.sqlanon_new_n, random() AS sqlanon_draw
    FROM {rows} AS t
    JOIN _sqlanon_tuples AS x ON x.sqlanon_group = t.{group} AND {tuple_match}
    UNION ALL
    SELECT NULL, x.sqlanon_group, {who_t}, false,
           x.sqlanon_old_n, x.sqlanon_new_n, random()
    FROM {staging} AS t
    JOIN _sqlanon_tuples AS x ON x.sqlanon_group = t.{group} AND {tuple_match}
), ranked AS (
    SELECT s.*,
           row_number() OVER (PARTITION BY s.sqlanon_group, {who_s}, s.sqlanon_old
                              ORDER BY s.sqlanon_draw) AS sqlanon_rank
    FROM sides AS s
)
SELECT sqlanon_row, sqlanon_group, {who}, sqlanon_old,
       sqlanon_rank <= CASE WHEN sqlanon_old THEN sqlanon_new_n ELSE sqlanon_old_n END
           AS sqlanon_matched
FROM ranked;
-- The current rows that leave (unmatched), with their values.
CREATE TEMP TABLE _sqlanon_leaving AS
SELECT t.{row_id} AS sqlanon_row, t.{group} AS sqlanon_group, t.{what} AS sqlanon_value
FROM {rows} AS t
WHERE t.{row_id} IN (SELECT sqlanon_row FROM _sqlanon_diff
                     WHERE sqlanon_old AND NOT sqlanon_matched);
-- Per group and value shown a different number of times, or freed by a leaving row: a
-- value shown fewer times now must leave, first from the freed ones, the rest (`forced`)
-- from staying rows holding it; the values freed and not leaving and the values shown
-- more often now (`pool`) go to the rows left without one.
CREATE TEMP TABLE _sqlanon_values AS
SELECT sqlanon_group, sqlanon_value,
       greatest(gone - freed, 0) AS forced,
       greatest(freed - gone, 0) + greatest(n_new - n_old, 0) AS pool
FROM (
    SELECT c.sqlanon_group, c.sqlanon_value, c.n_old, c.n_new,
           coalesce(f.freed, 0) AS freed, greatest(c.n_old - c.n_new, 0) AS gone
    FROM (
        SELECT sqlanon_group, sqlanon_value,
               count(*) FILTER (WHERE sqlanon_old) AS n_old,
               count(*) FILTER (WHERE NOT sqlanon_old) AS n_new
        FROM (
            SELECT t.{group} AS sqlanon_group, t.{what} AS sqlanon_value, true AS sqlanon_old
            FROM {rows} AS t
            WHERE t.{group} IN (SELECT final_id FROM _sqlanon_group_ids WHERE continued)
            UNION ALL
            SELECT t.{group}, t.{what}, false
            FROM {staging} AS t
            WHERE t.{group} IN (SELECT final_id FROM _sqlanon_group_ids WHERE continued)
        ) AS s
        GROUP BY sqlanon_group, sqlanon_value
    ) AS c
    LEFT JOIN (
        SELECT sqlanon_group, sqlanon_value, count(*) AS freed
        FROM _sqlanon_leaving
        GROUP BY sqlanon_group, sqlanon_value
    ) AS f ON f.sqlanon_group = c.sqlanon_group AND f.sqlanon_value = c.sqlanon_value
) AS v
WHERE n_old <> n_new OR freed > 0;
-- The staying rows that give up their value, at random among those holding it.
CREATE TEMP TABLE _sqlanon_forced AS
SELECT d.sqlanon_row
FROM (
    SELECT m.sqlanon_row, m.forced,
           row_number() OVER (PARTITION BY m.sqlanon_group, m.sqlanon_value
                              ORDER BY m.draw) AS r
    FROM (
        SELECT t.{row_id} AS sqlanon_row, x.sqlanon_group, x.sqlanon_value, x.forced,
               random() AS draw
        FROM {rows} AS t
        JOIN _sqlanon_values AS x
          ON x.sqlanon_group = t.{group} AND x.sqlanon_value = t.{what}
        WHERE x.forced > 0
          AND t.{row_id} NOT IN (SELECT sqlanon_row FROM _sqlanon_leaving)
    ) AS m
) AS d
WHERE d.r <= d.forced;
-- The rows left without a value: the version's unmatched rows and the forced ones.
CREATE TEMP TABLE _sqlanon_unassigned AS
SELECT sqlanon_group, {who}
FROM _sqlanon_diff
WHERE NOT sqlanon_old AND NOT sqlanon_matched
UNION ALL
SELECT t.{group}, {who_t}
FROM {rows} AS t
WHERE t.{row_id} IN (SELECT sqlanon_row FROM _sqlanon_forced)
