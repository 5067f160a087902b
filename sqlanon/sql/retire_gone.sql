-- The rows of a family's history {history} that no served version needs any more (last
-- shown before version $1, the oldest served): how many, and their highest group id.
SELECT count(*), max({group}) FROM {history} WHERE sqlanon_last < $1
