-- The source table of every release, for a caller who may read the catalog (an owner):
-- the rewriter then refuses a query reading a source as if it were public data. Analysts
-- may read neither the catalog nor the sources: their own rights refuse such a query.
SELECT table_name, source FROM sqlanon.releases
