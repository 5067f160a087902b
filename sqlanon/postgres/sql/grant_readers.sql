-- What a release published, readable by analysts (sqlanon/postgres/sql/grants.sql).
GRANT SELECT ON TABLE {relations} TO sqlanon_analyst
