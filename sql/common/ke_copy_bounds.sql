CREATE TABLE {bounds} AS SELECT * FROM _sqlanon_bounds ORDER BY group_id, block, lo_rank
