-- Releases compose across families and models (MODELS.md, "Cells"): every release
-- belongs to a domain (the people behind a source, linked by key) and has its place
-- `seq` in that domain's sequence. members.cell_id becomes the record's cell over every
-- release of the domain; sqlanon.cells holds what each cell must keep. The data step,
-- sqlanon.release.rebuild_domain_cells, fills them for releases made before.
ALTER TABLE sqlanon.releases ADD COLUMN domain VARCHAR;
ALTER TABLE sqlanon.releases ADD COLUMN seq INTEGER;
-- A fingerprint of the record's values of every attribute the domain's cells constrain.
ALTER TABLE sqlanon.members ADD COLUMN value_hash UBIGINT;
-- Private: per release, each cell's requirement (0 = none) per attribute.
CREATE TABLE IF NOT EXISTS sqlanon.cells (
    family       VARCHAR NOT NULL,
    version      INTEGER NOT NULL,
    cell_id      BIGINT NOT NULL,
    attribute    VARCHAR NOT NULL,
    min_distinct INTEGER NOT NULL,
    min_spread   DOUBLE NOT NULL
);
