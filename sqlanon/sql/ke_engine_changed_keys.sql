-- Keys of the records whose constrained value changed since a release published them.
SELECT CAST(record_value AS {text_type}) FROM _sqlanon_read
WHERE value_changed AND domain_cell >= 0
ORDER BY 1
