-- Spark's form of sqlanon/sql/rows_view.sql: version {version} of a family is the rows of
-- {rows} shown since it or before and not closed ({history}) before it, with the columns
-- that version published.
CREATE OR REPLACE VIEW {release} AS
SELECT {columns}
FROM {rows} AS r
LEFT ANTI JOIN (SELECT sqlanon_row FROM {history} WHERE sqlanon_last < {version}) AS c
  ON c.sqlanon_row = r.sqlanon_row
WHERE r.sqlanon_first <= {version}
