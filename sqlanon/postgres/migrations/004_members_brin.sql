-- sqlanon.members is read one whole version at a time (WHERE family = $1 AND version = $2)
-- and written one whole version at a time, by one INSERT: a version's rows sit together
-- on disk. A BRIN index on (family, version) finds them as the B-tree on (family,
-- version, record_key) did, at almost no cost per inserted row; maintaining the B-tree
-- took 2-4 s of a release of 10^6 records (one descent per key). No query looks up
-- single record keys. autosummarize: autovacuum summarizes each page range once full.
DROP INDEX sqlanon.members_family_version;
CREATE INDEX members_family_version ON sqlanon.members
    USING brin (family, version) WITH (autosummarize = on);
