-- A (k,e) release with ghosts (README, "Changing tables"): the records of
-- _sqlanon_members show their quasi-identifiers, the ghosts of _sqlanon_ghost_members
-- NULL ones and ghost = true; every row shows the value of the record a.s_key of its
-- group (_sqlanon_values: the source's values and the ghosts' kept ones), in the random
-- order a.ord.
CREATE TABLE {release} AS
SELECT {quasi_q}, a.group_id, v.{sensitive}, a.ghost
FROM (SELECT CAST(record_key AS {text_type}) AS record_key, group_id, s_key, ord, false AS ghost
      FROM _sqlanon_members WHERE group_id >= 0
      UNION ALL
      SELECT record_key, group_id, s_key, ord, true AS ghost
      FROM _sqlanon_ghost_members WHERE group_id >= 0) AS a
LEFT JOIN {source} AS q ON CAST(q.{key} AS {text_type}) = a.record_key AND NOT a.ghost
JOIN _sqlanon_values AS v ON v.record_key = a.s_key
ORDER BY a.ord
