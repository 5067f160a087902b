-- Stored ARX hierarchy rows of one dataset, one row per value and level.
SELECT attribute, value, level, label FROM sqlanon.hierarchies
WHERE dataset = $1 ORDER BY attribute, value, level
