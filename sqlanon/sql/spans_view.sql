-- The bounds of version {version} of a (k,e) family: the rows of its bounds table
-- valid at that version.
CREATE VIEW {release} AS
SELECT {columns} FROM {rows}
WHERE sqlanon_first <= {version} AND (sqlanon_last IS NULL OR sqlanon_last >= {version})
