-- Keep the value of attribute $2 of the records of _sqlanon_keep (each a key of the
-- source's own type), which domain $1 does not keep yet: first given a cell, a new
-- incarnation, or an attribute the domain constrains from now on.
INSERT INTO sqlanon.kept_values (domain, record_key, attribute, value)
SELECT $1, CAST(src.{key} AS {text_type}), $2, CAST(src.{column} AS {text_type})
FROM _sqlanon_keep AS k
JOIN {source} AS src ON src.{key} = k.record_key
