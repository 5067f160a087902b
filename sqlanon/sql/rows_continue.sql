-- The rows of version {version}'s continued groups (sqlanon/state/continued_rows.py: what
-- is kept, what is drawn again, and why that is as safe as a fresh shuffle). Each side of
-- a group, its current rows ({rows}, `{row_id}`) and the rows the release wrote
-- ({staging}), numbered at random within each quasi-identifier tuple `{who}`: a current
-- row is matched (it stays) while the new side has as many rows of its tuple, a new row
-- while the current side has.
CREATE TEMP TABLE _sqlanon_diff AS
WITH sides AS (
    SELECT t.{row_id} AS sqlanon_row, t.{group} AS sqlanon_group, {who_t},
           t.{what} AS sqlanon_value, true AS sqlanon_old, random() AS sqlanon_draw
    FROM {rows} AS t
    WHERE t.{group} IN (SELECT final_id FROM _sqlanon_group_ids WHERE continued)
    UNION ALL
    SELECT CAST(NULL AS {row_id_type}), t.{group}, {who_t}, t.{what}, false, random()
    FROM {staging} AS t
    WHERE t.{group} IN (SELECT final_id FROM _sqlanon_group_ids WHERE continued)
), ranked AS (
    SELECT s.*,
           count(*) FILTER (WHERE s.sqlanon_old)
               OVER (PARTITION BY s.sqlanon_group, {who_s}) AS sqlanon_old_n,
           count(*) FILTER (WHERE NOT s.sqlanon_old)
               OVER (PARTITION BY s.sqlanon_group, {who_s}) AS sqlanon_new_n,
           row_number() OVER (PARTITION BY s.sqlanon_group, {who_s}, s.sqlanon_old
                              ORDER BY s.sqlanon_draw) AS sqlanon_rank
    FROM sides AS s
)
SELECT sqlanon_row, sqlanon_group, {who}, sqlanon_value, sqlanon_old,
       sqlanon_rank <= CASE WHEN sqlanon_old THEN sqlanon_new_n ELSE sqlanon_old_n END
           AS sqlanon_matched
FROM ranked;
-- Per group and value: how many the current rows show, how many the version shows, how
-- many unmatched current rows free. A value shown fewer times now must leave: first from
-- the freed rows, the rest (`forced`) from matched rows holding it; the values the freed
-- rows keep and the values shown more often now (`pool`) go to the rows left without one.
CREATE TEMP TABLE _sqlanon_values AS
SELECT sqlanon_group, sqlanon_value, forced,
       greatest(freed - gone, 0) + greatest(n_new - n_old, 0) AS pool
FROM (
    SELECT sqlanon_group, sqlanon_value, n_old, n_new, freed,
           greatest(n_old - n_new, 0) AS gone,
           greatest(greatest(n_old - n_new, 0) - freed, 0) AS forced
    FROM (
        SELECT sqlanon_group, sqlanon_value,
               count(*) FILTER (WHERE sqlanon_old) AS n_old,
               count(*) FILTER (WHERE NOT sqlanon_old) AS n_new,
               count(*) FILTER (WHERE sqlanon_old AND NOT sqlanon_matched) AS freed
        FROM _sqlanon_diff
        GROUP BY sqlanon_group, sqlanon_value
    ) AS c
) AS v;
-- The matched current rows that give up their value, at random among those holding it.
CREATE TEMP TABLE _sqlanon_forced AS
SELECT d.sqlanon_row
FROM (
    SELECT sqlanon_row, sqlanon_group, sqlanon_value,
           row_number() OVER (PARTITION BY sqlanon_group, sqlanon_value ORDER BY draw) AS r
    FROM (SELECT *, random() AS draw FROM _sqlanon_diff
          WHERE sqlanon_old AND sqlanon_matched) AS m
) AS d
JOIN _sqlanon_values AS x
  ON x.sqlanon_group = d.sqlanon_group AND x.sqlanon_value = d.sqlanon_value
WHERE d.r <= x.forced;
-- The rows left without a value: the version's unmatched rows and the forced ones.
CREATE TEMP TABLE _sqlanon_unassigned AS
SELECT sqlanon_group, {who}
FROM _sqlanon_diff
WHERE NOT sqlanon_old AND NOT sqlanon_matched
UNION ALL
SELECT sqlanon_group, {who}
FROM _sqlanon_diff
WHERE sqlanon_row IN (SELECT sqlanon_row FROM _sqlanon_forced)
