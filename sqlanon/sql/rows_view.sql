-- Version {version} of a family: its rows still current (shown since it or before), then
-- those of its history shown at it, with the columns that version published. The newest
-- version reads the current rows alone (no history row was shown after the version before;
-- on DuckDB its view is rows_view_newest.sql until the next release makes it again here).
CREATE OR REPLACE VIEW {release} AS
SELECT {columns} FROM {rows} WHERE sqlanon_first <= {version}
UNION ALL
SELECT {columns} FROM {history} WHERE sqlanon_first <= {version} AND sqlanon_last >= {version}
