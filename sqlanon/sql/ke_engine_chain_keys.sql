-- Mark the live incarnations of the chains of domain $1 (sqlanon.links): each is an
-- entry of its own for the planner (chain_key: its key as text; '' for the others).
UPDATE _sqlanon_read SET chain_key = CAST(record_value AS {text_type})
WHERE CAST(record_value AS {text_type}) IN (
    SELECT earlier FROM sqlanon.links WHERE domain = $1
    UNION
    SELECT later FROM sqlanon.links WHERE domain = $1)
