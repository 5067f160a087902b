-- The whole catalog as DuckDB's migrations 001-008 leave it, as Spark parquet tables
-- (Spark has no keys or constraints: sqlanon's code keeps them; JSON is text).
CREATE TABLE IF NOT EXISTS sqlanon.releases (
    family         STRING NOT NULL,
    version        INT NOT NULL,
    table_name     STRING NOT NULL,
    model          STRING NOT NULL,
    source         STRING NOT NULL,
    parameters     STRING NOT NULL,
    created_at     TIMESTAMP DEFAULT current_timestamp(),
    rows_published BIGINT NOT NULL,
    held_back      BIGINT NOT NULL,
    suppressed     BIGINT NOT NULL,
    groups         BIGINT NOT NULL,
    sum_of_errors  DOUBLE,
    source_rows    BIGINT NOT NULL,
    metrics        STRING,
    domain         STRING,
    seq            INT
) USING parquet;
-- Private: never readable by analysts. One row per record per version.
CREATE TABLE IF NOT EXISTS sqlanon.members (
    family     STRING NOT NULL,
    version    INT NOT NULL,
    record_key STRING NOT NULL,
    group_id   INT,
    cell_id    BIGINT,
    status     STRING NOT NULL,
    row_hash   BIGINT,
    value_hash BIGINT,
    ghost      BOOLEAN DEFAULT false
) USING parquet;
CREATE TABLE IF NOT EXISTS sqlanon.hierarchies (
    dataset   STRING NOT NULL,
    attribute STRING NOT NULL,
    value     STRING NOT NULL,
    level     INT NOT NULL,
    label     STRING NOT NULL
) USING parquet;
CREATE TABLE IF NOT EXISTS sqlanon.hierarchy_widths (
    dataset   STRING NOT NULL,
    attribute STRING NOT NULL,
    widths    STRING NOT NULL
) USING parquet;
CREATE TABLE IF NOT EXISTS sqlanon.cells (
    family       STRING NOT NULL,
    version      INT NOT NULL,
    cell_id      BIGINT NOT NULL,
    attribute    STRING NOT NULL,
    min_distinct INT NOT NULL,
    min_spread   DOUBLE NOT NULL
) USING parquet;
CREATE TABLE IF NOT EXISTS sqlanon.kept_values (
    domain     STRING NOT NULL,
    record_key STRING NOT NULL,
    attribute  STRING NOT NULL,
    value      STRING NOT NULL
) USING parquet;
CREATE TABLE IF NOT EXISTS sqlanon.links (
    domain  STRING NOT NULL,
    earlier STRING NOT NULL,
    later   STRING NOT NULL
) USING parquet;
CREATE TABLE IF NOT EXISTS sqlanon.query_limits (
    name  STRING NOT NULL,
    value BIGINT NOT NULL
) USING parquet
