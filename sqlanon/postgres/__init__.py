"""PostgreSQL: the sessions (client and PL/Python), the server entry points the SQL
functions run, and the installer and extension packaging."""
