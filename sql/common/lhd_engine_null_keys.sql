-- Up to ten keys of rows whose quasi-identifier `{column}` is NULL (the error names them).
SELECT record_key FROM _sqlanon_read WHERE {column} IS NULL ORDER BY record_key LIMIT 10
