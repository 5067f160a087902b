-- Version {version} of a family: the rows of its rows table valid at that version, with
-- the columns that version published.
CREATE VIEW {release} AS
SELECT {columns} FROM {rows}
WHERE sqlanon_first <= {version} AND (sqlanon_last IS NULL OR sqlanon_last >= {version})
