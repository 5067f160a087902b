-- The columns of a published table and their types, for an export's copy of it.
SELECT column_name, data_type, numeric_precision, numeric_scale
FROM information_schema.columns
WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position
