SELECT CAST({key} AS {text_type}) FROM {source} WHERE {key} IS NOT NULL
GROUP BY {key} HAVING count(*) > 1 ORDER BY 1 LIMIT 10
