-- Counts that decide whether the source can be released at all.
SELECT count(*) AS n,
       count({key}) AS keys_present,
       count(DISTINCT {key}) AS keys_distinct,
       count({sensitive}) AS values_present
FROM {source}
