-- Migration 012: a version's view belongs to the owner of the table it replaces.
ALTER VIEW {table} OWNER TO {owner}
