-- What the attacker needs of the audit's records (_sqlanon_audit), one row per distinct
-- history: the group each release published a record in ({history}: one column per
-- release, NULL where absent), its value of each attribute ({values}: one column per
-- attribute, NULL where unread) and how many records share both (records). Records
-- with one history and the same values are interchangeable to every check of the
-- attacker (sqlanon/attacker), except the incarnations of a changed person, which keep
-- their key (own_key; every record keeps it when $1, the owner's keys being asked for).
WITH chained AS (
    SELECT earlier AS record_key FROM sqlanon.links
    UNION
    SELECT later AS record_key FROM sqlanon.links
),
per_record AS (
    SELECT CASE WHEN $1 OR c.record_key IS NOT NULL THEN a.record_key END AS own_key,
           {history}, {values}
    FROM _sqlanon_audit AS a
    LEFT JOIN chained AS c ON c.record_key = a.record_key
    GROUP BY a.record_key, c.record_key
)
SELECT own_key, {names}, count(*) AS records
FROM per_record
GROUP BY own_key, {names}
