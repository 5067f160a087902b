-- A family's first version starts its current rows {rows} (sqlanon/state/release_rows.py):
-- every row of it, current from version {version} on, in the order the release wrote them.
CREATE TABLE {rows} AS
SELECT t.*, CAST({version} AS INTEGER) AS sqlanon_first
FROM {staging} AS t
