-- (k,e) bounds tables move from one row per rank to runs of equal values by block of
-- ranks (sqlanon/models/ke_bounds.py). The data step, sqlanon.release.rebuild_ke_bounds,
-- rewrites the bounds table of every existing (k,e) release from its release table.
SELECT 1
