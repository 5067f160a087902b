-- The release table, from the plan (_sqlanon_plan: per (cell, value) entry its group and
-- its cell after this release) joined to the rows. Within each group the records, in
-- the order of a keyed pseudo-random function of their key, are paired with the
-- group's values sorted: a uniformly random assignment of the group's multiset to its
-- records. Rows come in the order of a second, independent output of that function.
-- The function is SHA-256 of the per-release secret $1 (never stored; why it is sound:
-- sqlanon/release_engine.py, shuffle_key) and the key, in hex: its first 64 bits pair,
-- the next 64 bits order.
CREATE TABLE {release} AS
WITH assigned AS (
    SELECT r.*, p.group_id, sha256($1 || CAST(r.record_value AS VARCHAR)) AS h
    FROM _sqlanon_read AS r
    JOIN _sqlanon_plan AS p ON p.domain_cell = r.domain_cell AND p.s = r.s
    WHERE p.group_id >= 0
), who AS (
    SELECT {quasi_a}, group_id, substr(h, 17, 16) AS out_order,
           row_number() OVER (PARTITION BY group_id ORDER BY substr(h, 1, 16), record_value) AS i
    FROM assigned
), what AS (
    SELECT {sensitive_a} AS v, group_id,
           row_number() OVER (PARTITION BY group_id ORDER BY {sensitive_a}) AS i
    FROM assigned
)
SELECT {quasi_out}, who.group_id, what.v AS {sensitive}
FROM who
JOIN what ON what.group_id = who.group_id AND what.i = who.i
ORDER BY who.out_order
