-- Whether a domain's latest release gave a cell to any record whose key is in this source.
-- A set intersection, not a join under LIMIT 1: a planner that expects an early hit would
-- pick a nested loop (PostgreSQL did: 69 s for 2,000 members against 200,000 rows that
-- share no key); both sides hashed once cost about a scan of each.
SELECT EXISTS (
    SELECT m.record_key FROM sqlanon.members AS m
    WHERE m.family = $1 AND m.version = $2 AND m.cell_id IS NOT NULL
    INTERSECT
    SELECT CAST(src.{key} AS {text_type}) FROM {source} AS src
) AS hit
