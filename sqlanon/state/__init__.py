"""What sqlanon keeps in the database: the catalog of releases, domains, the members of
live tables, bounds tables, migrations, and the audit's reads of all of it."""
