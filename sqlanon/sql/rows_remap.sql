-- A table of this release that holds plan ids (`{group}` of {table}): the published ids.
UPDATE {table} SET {group} = m.final_id
FROM _sqlanon_group_ids AS m
WHERE {table}.{group} = m.new_id
