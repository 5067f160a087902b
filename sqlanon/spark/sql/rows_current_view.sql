-- A family's current rows on Spark: the rows of {rows} not closed in {history}
-- (sqlanon/state/spark_rows.py); what the common rows_*.sql files read as `{rows}`.
CREATE OR REPLACE TEMP VIEW _sqlanon_current AS
SELECT r.*
FROM {rows} AS r
LEFT ANTI JOIN {history} AS c ON c.sqlanon_row = r.sqlanon_row
