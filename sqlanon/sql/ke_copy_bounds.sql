CREATE TABLE {bounds} AS SELECT * FROM _sqlanon_bounds ORDER BY descending, group_id, block, lo_rank
