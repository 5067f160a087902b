CREATE TABLE {bounds} AS SELECT * FROM _sqlanon_bounds ORDER BY group_id, rank
