-- Migration 012: a family's bounds table once every version joined it; the rows of its
-- newest version ({version}) are its current ones.
UPDATE {rows} SET sqlanon_last = CASE WHEN sqlanon_first = {version} THEN NULL ELSE sqlanon_first END
