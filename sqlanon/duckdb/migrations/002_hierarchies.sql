-- Generalization hierarchies of quasi-identifiers, looked up by dataset (the source
-- table's name) and attribute (the column). Public: they describe labels, not records.
CREATE TABLE IF NOT EXISTS sqlanon.hierarchies (
    dataset   VARCHAR NOT NULL,
    attribute VARCHAR NOT NULL,
    value     VARCHAR NOT NULL,
    level     INTEGER NOT NULL,
    label     VARCHAR NOT NULL,
    PRIMARY KEY (dataset, attribute, value, level)
);

-- Numeric interval hierarchies given by widths; built from the data at release time.
CREATE TABLE IF NOT EXISTS sqlanon.hierarchy_widths (
    dataset   VARCHAR NOT NULL,
    attribute VARCHAR NOT NULL,
    widths    JSON NOT NULL,
    PRIMARY KEY (dataset, attribute)
);
