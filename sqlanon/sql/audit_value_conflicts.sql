-- Every read of a record's attribute whose reads (_sqlanon_audit) differ as text: more
-- than one value, or a value and a NULL. The driver compares them as the columns'
-- types (10 and 10.0 are one value); none, normally.
WITH odd AS (
    SELECT record_key, attribute
    FROM _sqlanon_audit
    WHERE found
    GROUP BY record_key, attribute
    HAVING count(DISTINCT value) > 1 OR (count(value) > 0 AND count(value) < count(*))
)
SELECT a.record_key, a.attribute, a.position, a.value
FROM _sqlanon_audit AS a
JOIN odd ON odd.record_key = a.record_key AND odd.attribute = a.attribute
WHERE a.found
ORDER BY a.record_key, a.attribute, a.position
