-- The export's catalog rows of the releases it holds ({db}: the export database), from
-- temporary tables of the public rows (sqlanon.state.exports): a version's row replaces
-- the one exported before, the hierarchies of each dataset and the query limits are the
-- owner's now.
DELETE FROM {db}.sqlanon.releases AS r USING "_sqlanon_export_releases" AS n
WHERE r.family = n.family AND r.version = n.version;
INSERT INTO {db}.sqlanon.releases BY NAME SELECT * FROM "_sqlanon_export_releases";
DELETE FROM {db}.sqlanon.hierarchies
WHERE dataset IN (SELECT dataset FROM "_sqlanon_export_datasets");
INSERT INTO {db}.sqlanon.hierarchies BY NAME SELECT * FROM "_sqlanon_export_hierarchies";
DELETE FROM {db}.sqlanon.query_limits;
INSERT INTO {db}.sqlanon.query_limits BY NAME SELECT * FROM "_sqlanon_export_limits";
DELETE FROM {db}.sqlanon.export_info;
INSERT INTO {db}.sqlanon.export_info BY NAME SELECT * FROM "_sqlanon_export_info"
