-- An lHD version with ghosts (or the family's rows table, for one without): the
-- `class_ghosts` column, 0 for rows of versions that had no ghosts.
ALTER TABLE {table} ADD COLUMN class_ghosts INTEGER DEFAULT 0
