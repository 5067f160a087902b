-- Delete the rows of {table} (a family's history, or its (k,e) bounds table) last shown
-- before version $1, the oldest its owner still serves: no served version reads them.
DELETE FROM {table} WHERE sqlanon_last < $1
