-- Every value a (k,e) release with ghosts may show, by record: the source's, by key as
-- text, and the ghosts' kept values (_sqlanon_ghost_values), by ghost id.
CREATE TEMP TABLE _sqlanon_values AS
SELECT CAST(src.{key} AS {text_type}) AS record_key, src.{sensitive} FROM {source} AS src
UNION ALL
SELECT g.record_key, g.{sensitive} FROM _sqlanon_ghost_values AS g
