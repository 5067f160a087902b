-- A later version {version} in the family's bounds table {rows}: the current rows of
-- every group it does not keep end with the version before; the rows of its other
-- groups (new ids) follow.
UPDATE {rows} SET sqlanon_last = {version} - 1
WHERE sqlanon_last IS NULL
  AND {group} NOT IN (SELECT final_id FROM _sqlanon_group_ids WHERE kept);
INSERT INTO {rows} ({columns}, sqlanon_first)
SELECT {columns}, {version}
FROM {staging}
WHERE {group} IN (SELECT final_id FROM _sqlanon_group_ids WHERE NOT kept)
