-- sqlanon/sql/ke_bounds_from_runs.sql for values whose sums are not exact in BIGINT
-- (DECIMAL, floats, large integers): the same rows, the sums in the column's own
-- arithmetic (as sqlanon/sql/ke_write_bounds.sql computes them from a release table,
-- whose rows this never scans: the runs come from sqlanon/sql/ke_engine_runs.sql).
CREATE TABLE {bounds} {table_format} AS
WITH runs AS (
    SELECT group_id, value, CAST(sum(c) AS BIGINT) AS c
    FROM _sqlanon_runs
    GROUP BY group_id, value
), ranked AS (
    SELECT group_id, value, c,
           CAST(coalesce(sum(c) OVER up, 0) AS BIGINT) AS before_up,
           coalesce(sum(c * value) OVER up, 0) AS prior_up,
           CAST(coalesce(sum(c) OVER down, 0) AS BIGINT) AS before_down,
           coalesce(sum(c * value) OVER down, 0) AS prior_down,
           sum(c) OVER whole AS n, sum(c * value) OVER whole AS total,
           min(value) OVER whole AS vmin, max(value) OVER whole AS vmax
    FROM runs
    WINDOW up AS (PARTITION BY group_id ORDER BY value
                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
           down AS (PARTITION BY group_id ORDER BY value DESC
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
           whole AS (PARTITION BY group_id)
), directed AS (
    SELECT group_id, false AS descending, before_up + 1 AS lo, before_up + c AS hi, value,
           prior_up AS prior_sum, n, total, vmin, vmax
    FROM ranked
    UNION ALL
    SELECT group_id, true, before_down + 1, before_down + c, value, prior_down, n, total,
           vmin, vmax
    FROM ranked
), blocks AS (
    SELECT *, {explode}({series}((lo - 1) {int_div} 64, (hi - 1) {int_div} 64)) AS block
    FROM directed
)
SELECT CAST(group_id AS INTEGER) AS group_id, descending, CAST(block AS INTEGER) AS block,
       CAST(lo AS INTEGER) AS lo_rank, CAST(hi AS INTEGER) AS hi_rank, value,
       prior_sum, CAST(n AS INTEGER) AS n,
       total, vmin, vmax
FROM blocks
ORDER BY descending, group_id, block, lo_rank
