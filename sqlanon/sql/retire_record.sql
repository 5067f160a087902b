-- A retirement: family $1's versions below $2 are no longer served; $3 the highest group
-- id of the rows it deleted (-1: none).
INSERT INTO sqlanon.retirements (family, served_from, group_ceiling, retired_at)
VALUES ($1, $2, $3, current_timestamp)
