-- Retention (issue 27): sqlanon.retire(family, keep) stops serving a family's old
-- versions. One row per retirement that retired something: the family's versions below
-- served_from are no longer served (their views are gone, their rows deleted where no
-- served version needs them); group_ceiling is the highest group id the family's rows
-- held then, so that a later release's fresh ids stay above every id the family used.
-- The private state (members, cells, kept values, the catalog rows) stays: later
-- releases and the audit compose with every version, served or not.
CREATE TABLE IF NOT EXISTS sqlanon.retirements (
    family        VARCHAR NOT NULL,
    served_from   INTEGER NOT NULL,
    group_ceiling INTEGER NOT NULL,
    retired_at    TIMESTAMP DEFAULT current_timestamp
)
