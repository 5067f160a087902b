-- Version {version}, its family's newest: its current rows alone (every row in the
-- history was last shown before it), one scan of one table as a table would be. A
-- UNION ALL, even with an empty side, hides the rows table's statistics from DuckDB's
-- optimizer (no perfect hash aggregate, no compressed strings): a plain query on the
-- view took up to 1.3x the same query on a table (bench/interval.py). The next release,
-- which moves some of these rows to the history, makes this view again from rows_view.sql
-- in the same transaction (sqlanon/state/release_rows.py).
CREATE OR REPLACE VIEW {release} AS
SELECT {columns} FROM {rows} WHERE sqlanon_first <= {version}
