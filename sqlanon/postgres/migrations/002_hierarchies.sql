-- Generalization hierarchies of quasi-identifiers, looked up by dataset (the source
-- table's name) and attribute (the column). Public: they describe labels, not records.
CREATE TABLE sqlanon.hierarchies (
    dataset   text NOT NULL,
    attribute text NOT NULL,
    value     text NOT NULL,
    level     integer NOT NULL,
    label     text NOT NULL,
    PRIMARY KEY (dataset, attribute, value, level)
);

-- Numeric interval hierarchies given by widths; built from the data at release time.
CREATE TABLE sqlanon.hierarchy_widths (
    dataset   text NOT NULL,
    attribute text NOT NULL,
    widths    jsonb NOT NULL,
    PRIMARY KEY (dataset, attribute)
);
