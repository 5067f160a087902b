-- The release table, from the plan (_sqlanon_plan: per (cell, value) entry its group and
-- its cell after this release) joined to the rows, in one sort. Each record gets h, a
-- keyed permutation of its key's hash under the per-release secret $1 (never stored; the
-- construction and why it is sound: sqlanon/release/engine_path.py, shuffle_key); the
-- rows, ordered by (group, h), are paired by position with the group's values in
-- ascending order (_sqlanon_runs: per group and value its number of records, expanded),
-- so the record of rank i by h within its group gets the group's i-th smallest value: a
-- uniformly random assignment of the group's multiset to its records. A row paired with
-- another group's value (the two sides out of step) stops the release.
-- Rows come in that order: by group, then by value, equal values in the order of h:
-- nothing but what the rows themselves show, whatever the source's order.
CREATE TABLE {release} AS
WITH vals AS (
    SELECT group_id, value
    FROM (SELECT group_id, value, unnest(range(c))
          FROM (SELECT group_id, value, c FROM _sqlanon_runs ORDER BY group_id, value))
), who AS (
    SELECT {quasi_r}, p.group_id
    FROM _sqlanon_read AS r
    JOIN _sqlanon_plan AS p ON {plan_match}
    WHERE p.group_id >= 0
    ORDER BY p.group_id,
             hash(xor(hash(xor(hash(r.record_value), CAST('0x' || substr($1, 1, 16) AS UBIGINT))),
                      CAST('0x' || substr($1, 17, 16) AS UBIGINT))),
             r.record_value
)
SELECT {quasi_out}, who.group_id,
       CASE WHEN vals.group_id = who.group_id THEN vals.value
            ELSE error('sqlanon: release rows and values out of step') END AS {sensitive}
FROM who POSITIONAL JOIN vals
