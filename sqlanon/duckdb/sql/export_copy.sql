-- A published table copied into the export database {db} from the owner's DuckDB.
CREATE TABLE {db}.{target} AS SELECT * FROM {source}
