-- The bounds table (layout: sqlanon/models/ke_bounds.py, 64 ranks per block) computed
-- in the sensitive column's own arithmetic, for values numpy cannot sum exactly
-- (DECIMAL, floats, large integers): one row per run of equal values of a group and per
-- block of ranks the run overlaps, with the sums that turn interval bounds into lookups.
CREATE TABLE {bounds} AS
WITH ranked AS (
    SELECT group_id, {sensitive} AS value,
           row_number() OVER (PARTITION BY group_id ORDER BY {sensitive}) AS rank
    FROM {release}
), runs AS (
    SELECT group_id, value, count(*) AS c, min(rank) AS lo_rank, max(rank) AS hi_rank
    FROM ranked
    GROUP BY group_id, value
), summed AS (
    SELECT group_id, value, lo_rank, hi_rank,
           coalesce(sum(c * value) OVER (
               PARTITION BY group_id ORDER BY lo_rank
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS below,
           sum(c) OVER (PARTITION BY group_id) AS n,
           sum(c * value) OVER (PARTITION BY group_id) AS total,
           min(value) OVER (PARTITION BY group_id) AS vmin,
           max(value) OVER (PARTITION BY group_id) AS vmax
    FROM runs
), blocks AS (
    SELECT DISTINCT group_id, value, CAST(FLOOR((rank - 1) / 64.0) AS INTEGER) AS block
    FROM ranked
)
SELECT s.group_id, b.block, CAST(s.lo_rank AS INTEGER) AS lo_rank,
       CAST(s.hi_rank AS INTEGER) AS hi_rank, s.value, s.below, CAST(s.n AS INTEGER) AS n,
       s.total, s.vmin, s.vmax
FROM summed AS s
JOIN blocks AS b ON b.group_id = s.group_id AND b.value = s.value
ORDER BY s.group_id, b.block, s.lo_rank
