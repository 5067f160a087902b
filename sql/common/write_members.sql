INSERT INTO sqlanon.members (family, version, record_key, group_id, cell_id, status, row_hash)
SELECT $1, $2, record_key, group_id, cell_id, status, row_hash FROM _sqlanon_members
