-- Each group's content, the new version's ({staging}) and the family's current rows'
-- ({rows}), as sqlanon/state/release_rows.py compares them: its size
-- and two order-free fingerprints, the sums of a 64-bit hash of each row's `{who_t}`
-- columns and of its `{what_t}` columns (a (k,e) group pairs the two at random, so
-- each is a multiset of its own; an lHD class gives the same list twice). A match of
-- fingerprints is only a candidate: sqlanon/sql/rows_unequal.sql compares the rows.
CREATE TEMP TABLE _sqlanon_new_groups AS
SELECT t.{group} AS group_id, count(*) AS n,
       sum(hash({who_t})) AS who, sum(hash({what_t})) AS what
FROM {staging} AS t
GROUP BY t.{group};
CREATE TEMP TABLE _sqlanon_open_groups AS
SELECT t.{group} AS group_id, count(*) AS n,
       sum(hash({who_t})) AS who, sum(hash({what_t})) AS what
FROM {rows} AS t
GROUP BY t.{group}
