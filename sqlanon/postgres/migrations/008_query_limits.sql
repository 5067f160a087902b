-- The data owner's bounds on analyst queries, checked before the rewriter parses one
-- (sqlanon/rewrite/limits.py): max_query_chars, max_query_tokens, max_query_depth. A
-- missing row means the documented default; set them with sqlanon.set_limit().
-- Analysts read it (their rewrites apply it) but may not change it (grants.sql).
CREATE TABLE IF NOT EXISTS sqlanon.query_limits (
    name  text PRIMARY KEY,
    value bigint NOT NULL
);
