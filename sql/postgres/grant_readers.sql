-- What a release published, readable by analysts (sql/postgres/grants.sql).
GRANT SELECT ON TABLE {relations} TO sqlanon_analyst
