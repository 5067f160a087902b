-- An empty table for the ghosts' kept values with the source's own column types (type
-- modifiers included: numeric(9,2) stays numeric(9,2) in the release and its view).
CREATE TEMP TABLE _sqlanon_ghost_values AS
SELECT CAST(NULL AS {text_type}) AS record_key, {columns} FROM {source} AS src WHERE false
