-- The kept values (as text) of the ghosts of domain $1 listed in _sqlanon_ghost_ids.
SELECT k.record_key, k.attribute, k.value
FROM sqlanon.kept_values AS k
JOIN _sqlanon_ghost_ids AS g ON g.record_key = k.record_key
WHERE k.domain = $1
