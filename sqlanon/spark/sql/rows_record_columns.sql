-- The columns version $2 of family $1 shows ($3, a JSON list): a new application makes
-- its view again from them (sqlanon/spark/attach.py).
INSERT INTO sqlanon.release_columns (family, version, columns) VALUES ($1, $2, $3)
