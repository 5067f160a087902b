-- The private state records changes (issue 27): a record's membership is written when
-- it changes, not once per version. sqlanon.member_spans holds each state of a record
-- with the versions of its family it held in (first_version through last_version; NULL:
-- still current), sqlanon.cell_spans each cell's requirement likewise, and
-- sqlanon.state_versions every version of a family the state has (a release's write
-- adds its own before its catalog row exists, so its later statements read it).
-- sqlanon.members and sqlanon.cells become views with their old columns and meaning:
-- one row per record (cell, attribute) per version it belongs to.
CREATE TABLE sqlanon.state_versions (
    family  text NOT NULL,
    version integer NOT NULL,
    PRIMARY KEY (family, version)
);
-- Private: never readable by analysts.
CREATE TABLE sqlanon.member_spans (
    family        text NOT NULL,
    record_key    text NOT NULL,
    first_version integer NOT NULL,
    last_version  integer,
    group_id      integer,
    cell_id       bigint,
    status        text NOT NULL CHECK (status IN ('published', 'held_back', 'suppressed')),
    row_hash      bigint NOT NULL,
    value_hash    bigint,
    ghost         boolean DEFAULT false
);
-- Private: each cell's requirement per attribute, over the versions it held in.
CREATE TABLE sqlanon.cell_spans (
    family        text NOT NULL,
    cell_id       bigint NOT NULL,
    attribute     text NOT NULL,
    first_version integer NOT NULL,
    last_version  integer,
    min_distinct  integer NOT NULL,
    min_spread    double precision NOT NULL
);
-- The versions the old tables hold (a release that wrote no row still has its version).
INSERT INTO sqlanon.state_versions (family, version)
SELECT family, version FROM sqlanon.members
UNION SELECT family, version FROM sqlanon.cells
UNION SELECT family, version FROM sqlanon.releases;
-- Each record's rows collapse into runs of one state over consecutive versions of its
-- family (islands: the version's rank minus the row's rank within the state is constant
-- along a run); a run reaching the family's newest version stays open.
INSERT INTO sqlanon.member_spans (family, record_key, first_version, last_version, group_id,
                                  cell_id, status, row_hash, value_hash, ghost)
WITH ranked AS (
    SELECT family, version,
           pg_catalog.row_number() OVER (PARTITION BY family ORDER BY version) AS at,
           pg_catalog.max(version) OVER (PARTITION BY family) AS newest
    FROM sqlanon.state_versions
), runs AS (
    SELECT m.family, m.version, m.record_key, m.group_id, m.cell_id, m.status, m.row_hash,
           m.value_hash, m.ghost, v.newest,
           v.at - pg_catalog.row_number() OVER (PARTITION BY m.family, m.record_key, m.group_id,
                                         m.cell_id, m.status, m.row_hash, m.value_hash,
                                         m.ghost
                                     ORDER BY m.version) AS run
    FROM sqlanon.members AS m
    JOIN ranked AS v ON v.family = m.family AND v.version = m.version
)
SELECT family, record_key, pg_catalog.min(version),
       CASE WHEN pg_catalog.max(version) < pg_catalog.max(newest) THEN pg_catalog.max(version) END,
       group_id, cell_id, status, row_hash, value_hash, ghost
FROM runs
GROUP BY family, record_key, group_id, cell_id, status, row_hash, value_hash, ghost, run;
INSERT INTO sqlanon.cell_spans (family, cell_id, attribute, first_version, last_version,
                                min_distinct, min_spread)
WITH ranked AS (
    SELECT family, version,
           pg_catalog.row_number() OVER (PARTITION BY family ORDER BY version) AS at,
           pg_catalog.max(version) OVER (PARTITION BY family) AS newest
    FROM sqlanon.state_versions
), runs AS (
    SELECT c.family, c.version, c.cell_id, c.attribute, c.min_distinct, c.min_spread,
           v.newest,
           v.at - pg_catalog.row_number() OVER (PARTITION BY c.family, c.cell_id, c.attribute,
                                         c.min_distinct, c.min_spread
                                     ORDER BY c.version) AS run
    FROM sqlanon.cells AS c
    JOIN ranked AS v ON v.family = c.family AND v.version = c.version
)
SELECT family, cell_id, attribute, pg_catalog.min(version),
       CASE WHEN pg_catalog.max(version) < pg_catalog.max(newest) THEN pg_catalog.max(version) END,
       min_distinct, min_spread
FROM runs
GROUP BY family, cell_id, attribute, min_distinct, min_spread, run;
DROP TABLE sqlanon.members;
DROP TABLE sqlanon.cells;
-- Readers filter on the family and one version: BRIN indexes keep a family's spans apart
-- at almost no cost per row (as migration 004 did for the old table); a release's
-- close of the changed spans scans its family's open spans once.
CREATE INDEX member_spans_family ON sqlanon.member_spans
    USING brin (family, first_version) WITH (autosummarize = on);
CREATE INDEX cell_spans_family ON sqlanon.cell_spans
    USING brin (family, first_version) WITH (autosummarize = on);
-- One (family, version) read through a view is one row of state_versions joined to the
-- spans of its family: a filter on the spans (first_version <= version <= last_version).
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
 AND (s.last_version IS NULL OR v.version <= s.last_version);
