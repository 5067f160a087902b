-- A later version {version} of a family: the current rows of every group it neither keeps
-- nor continues go to the history (last shown at the version before); the rows of its
-- new groups (fresh ids) join the current rows, in the order the release wrote them.
-- (A continued group's rows: sqlanon/sql/rows_continue.sql, before this.)
INSERT INTO {history} ({columns}, sqlanon_first, sqlanon_last)
SELECT {columns}, sqlanon_first, {version} - 1
FROM {rows}
WHERE {group} NOT IN (SELECT final_id FROM _sqlanon_group_ids WHERE kept OR continued);
DELETE FROM {rows}
WHERE {group} NOT IN (SELECT final_id FROM _sqlanon_group_ids WHERE kept OR continued);
INSERT INTO {rows} ({columns}, sqlanon_first)
SELECT {columns}, {version}
FROM {staging}
WHERE {group} IN (SELECT final_id FROM _sqlanon_group_ids WHERE NOT kept AND NOT continued)
