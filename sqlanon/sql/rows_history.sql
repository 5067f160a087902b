-- A family's history {history}: the rows of its current table once a version no longer
-- keeps them, with the last version that showed them. Empty at the first version.
CREATE TABLE {history} AS
SELECT r.*, CAST(NULL AS INTEGER) AS sqlanon_last FROM {rows} AS r WHERE false
