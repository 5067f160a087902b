-- Rows whose quasi-identifier `{column}` is NaN, not NULL (an array of a numeric column
-- reads both as NaN; SQL tells them apart: NaN equals NaN, NULL equals nothing).
SELECT count(*) FROM {source} WHERE {column} = CAST('NaN' AS FLOAT)
