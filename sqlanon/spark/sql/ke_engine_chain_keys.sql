-- sqlanon/sql/ke_engine_chain_keys.sql in Spark SQL (the temporary table made anew from
-- itself): the live incarnations of the chains of domain $1 (sqlanon.links) are each an
-- entry of their own for the planner (chain_key: the key as text; '' for the others).
CREATE TEMP TABLE _sqlanon_read AS
SELECT * EXCEPT (chain_key),
       CASE WHEN CAST(record_value AS STRING) IN (
                SELECT earlier FROM sqlanon.links WHERE domain = $1
                UNION
                SELECT later FROM sqlanon.links WHERE domain = $1)
            THEN CAST(record_value AS STRING) ELSE '' END AS chain_key
FROM _sqlanon_read
