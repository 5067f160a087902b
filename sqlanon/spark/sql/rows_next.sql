-- The number the next row appended to {rows} starts from (sqlanon/state/spark_rows.py).
SELECT coalesce(max(sqlanon_row), -1) + 1 FROM {rows}
