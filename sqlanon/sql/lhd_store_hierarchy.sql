INSERT INTO sqlanon.hierarchies (dataset, attribute, value, level, label)
SELECT $1, attribute, value, level, label FROM _sqlanon_hierarchy
