-- A (k,e) version with ghosts (or the family's rows table, for one without): the
-- `ghost` column, false for rows of versions that had no ghosts.
ALTER TABLE {table} ADD COLUMN ghost BOOLEAN DEFAULT false
