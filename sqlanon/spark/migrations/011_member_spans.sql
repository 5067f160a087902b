-- Migration 011 in Spark SQL (sqlanon/duckdb/migrations/011_member_spans.sql says why):
-- the private state as changes. sqlanon.member_spans, sqlanon.cell_spans and
-- sqlanon.state_versions are parquet tables; sqlanon.members and sqlanon.cells become
-- views over them (with Spark's in-memory catalog, sqlanon.spark.attach creates the
-- views again in every new application, as it registers the tables again).
CREATE TABLE IF NOT EXISTS sqlanon.state_versions (
    family  STRING NOT NULL,
    version INT NOT NULL
) USING parquet;
-- Private: never readable by analysts.
CREATE TABLE IF NOT EXISTS sqlanon.member_spans (
    family        STRING NOT NULL,
    record_key    STRING NOT NULL,
    first_version INT NOT NULL,
    last_version  INT,
    group_id      INT,
    cell_id       BIGINT,
    status        STRING NOT NULL,
    row_hash      BIGINT,
    value_hash    BIGINT,
    ghost         BOOLEAN
) USING parquet;
CREATE TABLE IF NOT EXISTS sqlanon.cell_spans (
    family        STRING NOT NULL,
    cell_id       BIGINT NOT NULL,
    attribute     STRING NOT NULL,
    first_version INT NOT NULL,
    last_version  INT,
    min_distinct  INT NOT NULL,
    min_spread    DOUBLE NOT NULL
) USING parquet;
INSERT INTO sqlanon.state_versions
SELECT DISTINCT family, version FROM (
    SELECT family, version FROM sqlanon.members
    UNION ALL SELECT family, version FROM sqlanon.cells
    UNION ALL SELECT family, version FROM sqlanon.releases
) AS every_version;
INSERT INTO sqlanon.member_spans
SELECT family, record_key, min(version),
       CASE WHEN max(version) < max(newest) THEN max(version) END,
       group_id, cell_id, status, row_hash, value_hash, ghost
FROM (
    SELECT m.family, m.version, m.record_key, m.group_id, m.cell_id, m.status, m.row_hash,
           m.value_hash, m.ghost, v.newest,
           v.at - row_number() OVER (PARTITION BY m.family, m.record_key, m.group_id,
                                         m.cell_id, m.status, m.row_hash, m.value_hash,
                                         m.ghost
                                     ORDER BY m.version) AS run
    FROM sqlanon.members AS m
    JOIN (SELECT family, version,
                 row_number() OVER (PARTITION BY family ORDER BY version) AS at,
                 max(version) OVER (PARTITION BY family) AS newest
          FROM sqlanon.state_versions) AS v
      ON v.family = m.family AND v.version = m.version
) AS runs
GROUP BY family, record_key, group_id, cell_id, status, row_hash, value_hash, ghost, run;
INSERT INTO sqlanon.cell_spans
SELECT family, cell_id, attribute, min(version),
       CASE WHEN max(version) < max(newest) THEN max(version) END,
       min_distinct, min_spread
FROM (
    SELECT c.family, c.version, c.cell_id, c.attribute, c.min_distinct, c.min_spread,
           v.newest,
           v.at - row_number() OVER (PARTITION BY c.family, c.cell_id, c.attribute,
                                         c.min_distinct, c.min_spread
                                     ORDER BY c.version) AS run
    FROM sqlanon.cells AS c
    JOIN (SELECT family, version,
                 row_number() OVER (PARTITION BY family ORDER BY version) AS at,
                 max(version) OVER (PARTITION BY family) AS newest
          FROM sqlanon.state_versions) AS v
      ON v.family = c.family AND v.version = c.version
) AS runs
GROUP BY family, cell_id, attribute, min_distinct, min_spread, run;
DROP TABLE sqlanon.members;
DROP TABLE sqlanon.cells;
CREATE VIEW sqlanon.members AS
SELECT s.family, v.version, s.record_key, s.group_id, s.cell_id, s.status, s.row_hash,
       s.value_hash, s.ghost
FROM sqlanon.member_spans AS s
JOIN sqlanon.state_versions AS v
  ON v.family = s.family AND v.version >= s.first_version
 AND (s.last_version IS NULL OR v.version <= s.last_version);
CREATE VIEW sqlanon.cells AS
SELECT s.family, v.version, s.cell_id, s.attribute, s.min_distinct, s.min_spread
FROM sqlanon.cell_spans AS s
JOIN sqlanon.state_versions AS v
  ON v.family = s.family AND v.version >= s.first_version
 AND (s.last_version IS NULL OR v.version <= s.last_version)
