-- The bounds table (layout: sqlanon/models/ke_bounds.py, 64 ranks per block) computed
-- in the sensitive column's own arithmetic, for values numpy cannot sum exactly
-- (DECIMAL, floats, large integers): each group's values ranked ascending and
-- descending, one row per run of equal values and per block of ranks the run overlaps,
-- with the sums that turn interval bounds into lookups.
CREATE TABLE {bounds} AS
WITH ranked AS (
    SELECT group_id, {sensitive} AS value,
           row_number() OVER (PARTITION BY group_id ORDER BY {sensitive}) AS up,
           row_number() OVER (PARTITION BY group_id ORDER BY {sensitive} DESC) AS down
    FROM {release}
), runs AS (
    SELECT group_id, value, count(*) AS c, min(up) AS lo_up, max(up) AS hi_up,
           min(down) AS lo_down, max(down) AS hi_down
    FROM ranked
    GROUP BY group_id, value
), summed AS (
    SELECT runs.*,
           coalesce(sum(c * value) OVER (
               PARTITION BY group_id ORDER BY value
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS prior_up,
           coalesce(sum(c * value) OVER (
               PARTITION BY group_id ORDER BY value DESC
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS prior_down,
           sum(c) OVER (PARTITION BY group_id) AS n,
           sum(c * value) OVER (PARTITION BY group_id) AS total,
           min(value) OVER (PARTITION BY group_id) AS vmin,
           max(value) OVER (PARTITION BY group_id) AS vmax
    FROM runs
), blocks AS (
    SELECT DISTINCT group_id, value, false AS descending,
           CAST(FLOOR((up - 1) / 64.0) AS INTEGER) AS block
    FROM ranked
    UNION ALL
    SELECT DISTINCT group_id, value, true AS descending,
           CAST(FLOOR((down - 1) / 64.0) AS INTEGER) AS block
    FROM ranked
)
SELECT s.group_id, b.descending, b.block,
       CAST(CASE WHEN b.descending THEN s.lo_down ELSE s.lo_up END AS INTEGER) AS lo_rank,
       CAST(CASE WHEN b.descending THEN s.hi_down ELSE s.hi_up END AS INTEGER) AS hi_rank,
       s.value,
       CASE WHEN b.descending THEN s.prior_down ELSE s.prior_up END AS prior_sum,
       CAST(s.n AS INTEGER) AS n, s.total, s.vmin, s.vmax
FROM summed AS s
JOIN blocks AS b ON b.group_id = s.group_id AND b.value = s.value
ORDER BY b.descending, s.group_id, b.block, lo_rank
