-- A (k,e) family's first version starts its bounds table {rows}
-- (sqlanon/state/release_rows.py): every row of it, valid from version {version} on.
CREATE TABLE {rows} AS
SELECT t.*, CAST({version} AS INTEGER) AS sqlanon_first, CAST(NULL AS INTEGER) AS sqlanon_last
FROM {staging} AS t
