-- The new incarnation of a changed record starts afresh: no cell, never published.
UPDATE _sqlanon_read SET domain_cell = -1, published_before = false, known = false
WHERE value_changed AND domain_cell >= 0
