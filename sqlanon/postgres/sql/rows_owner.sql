-- Migration 012 runs as the installing role: what it made for a family belongs to the
-- family's owner, as the tables it replaces did.
ALTER TABLE {table} OWNER TO {owner}
