-- Per version of a family, its rows left out: held back (never published by the domain
-- yet), counted by the first version of the family that held each back (it has waited
-- since then), and suppressed (published before, absent now). Owner only.
SELECT version, status, since, count(*) AS n
FROM (
    SELECT version, status, min(version) OVER (PARTITION BY record_key, status) AS since
    FROM sqlanon.members
    WHERE family = $1 AND status <> 'published'
) AS left_out
GROUP BY version, status, since
ORDER BY version, status, since
