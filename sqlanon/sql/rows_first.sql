-- A family's first version starts its rows table {rows} (sqlanon/state/release_rows.py):
-- every row of it, valid from version {version} on, in the order the release wrote them.
CREATE TABLE {rows} AS
SELECT t.*, CAST({version} AS INTEGER) AS sqlanon_first, CAST(NULL AS INTEGER) AS sqlanon_last
FROM {staging} AS t
