-- Versions share their rows (issue 27): each family's versions move into one rows table
-- (and its (k,e) bounds into one bounds table), each version a view of the rows valid at
-- it. The data step, sqlanon.state.release_rows.share_all, moves every family released
-- before; every version reads as it did.
SELECT 1
