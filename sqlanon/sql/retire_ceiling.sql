-- The highest group id of the rows retirements of family $1 deleted (NULL: none);
-- sqlanon/sql/rows_ids.sql gives fresh ids above it.
SELECT max(group_ceiling) FROM sqlanon.retirements WHERE family = $1
