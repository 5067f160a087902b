-- The release table, from the plan (_sqlanon_plan: per (cell, value) entry its group and
-- its cell after this release) joined to the rows. Each record gets h, the first 64 bits
-- of SHA-256 of the per-release secret $1 (never stored; why this is sound:
-- sqlanon/release/ke_engine.py, shuffle_key) and its key. Within a group, the record of
-- rank i by h gets the group's i-th smallest value (the ASOF join finds the run of
-- equal values holding rank i): a uniformly random assignment of the group's multiset
-- to its records. Rows come in the order of h: a uniformly random order, which tells
-- nothing the rows do not (along it each group's values ascend, whatever the data).
CREATE TABLE {release} AS
WITH assigned AS (
    SELECT r.*, p.group_id,
           CAST('0x' || substr(sha256($1 || CAST(r.record_value AS VARCHAR)), 1, 16)
                AS UBIGINT) AS h
    FROM _sqlanon_read AS r
    JOIN _sqlanon_plan AS p ON {plan_match}
    WHERE p.group_id >= 0
), runs AS (
    SELECT group_id, {sensitive_a} AS v, count(*) AS c
    FROM assigned
    GROUP BY group_id, {sensitive_a}
), ranks AS (
    SELECT group_id, v,
           sum(c) OVER (PARTITION BY group_id ORDER BY v
                        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - c + 1 AS lo
    FROM runs
), who AS (
    SELECT {quasi_a}, group_id, h,
           row_number() OVER (PARTITION BY group_id ORDER BY h, record_value) AS i
    FROM assigned
)
SELECT {quasi_out}, who.group_id, ranks.v AS {sensitive}
FROM who
ASOF JOIN ranks ON ranks.group_id = who.group_id AND who.i >= ranks.lo
ORDER BY who.h, who.group_id, who.i
