-- No group is renumbered (a family's first rows): rows_staged.sql joins this.
CREATE OR REPLACE TEMP VIEW _sqlanon_no_ids AS
SELECT CAST(NULL AS INT) AS new_id, CAST(NULL AS INT) AS final_id WHERE false
