-- Per group, values sorted ascending with the sums of the r smallest and r largest:
-- public (derivable from the release), they turn interval bounds into lookups.
CREATE TABLE {bounds} AS
WITH asc_rank AS (
    SELECT group_id, {sensitive} AS value,
           row_number() OVER w AS rank, sum({sensitive}) OVER w AS low_sum
    FROM {release}
    WINDOW w AS (PARTITION BY group_id ORDER BY {sensitive} ROWS UNBOUNDED PRECEDING)
), desc_rank AS (
    SELECT group_id, row_number() OVER w AS rank, sum({sensitive}) OVER w AS high_sum
    FROM {release}
    WINDOW w AS (PARTITION BY group_id ORDER BY {sensitive} DESC ROWS UNBOUNDED PRECEDING)
)
SELECT a.group_id, a.rank, a.value, a.low_sum, d.high_sum
FROM asc_rank AS a JOIN desc_rank AS d ON a.group_id = d.group_id AND a.rank = d.rank
ORDER BY a.group_id, a.rank
