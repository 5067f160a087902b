-- Spark's form of sqlanon/sql/rows_move.sql (append-only): the current rows ({rows}) of
-- every group version {version} neither keeps nor continues are closed (last shown at the
-- version before); the rows of its new groups are appended to {table}, numbered from
-- {row_base}.
INSERT INTO {history}
SELECT sqlanon_row, {version} - 1
FROM {rows}
WHERE {group} NOT IN (SELECT final_id FROM _sqlanon_group_ids WHERE kept OR continued);
INSERT INTO {table} ({columns}, sqlanon_first, sqlanon_row)
SELECT {columns}, {version}, {row_base} + monotonically_increasing_id()
FROM {staging}
WHERE {group} IN (SELECT final_id FROM _sqlanon_group_ids WHERE NOT kept AND NOT continued)
