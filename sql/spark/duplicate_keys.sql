-- sql/common/duplicate_keys.sql in Spark SQL (STRING for VARCHAR).
SELECT CAST({key} AS STRING) FROM {source} WHERE {key} IS NOT NULL
GROUP BY {key} HAVING count(*) > 1 ORDER BY 1 LIMIT 10
