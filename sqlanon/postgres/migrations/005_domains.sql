-- Releases compose across families and models (MODELS.md, "Cells"): every release
-- belongs to a domain (the people behind a source, linked by key) and has its place
-- `seq` in that domain's sequence. members.cell_id becomes the record's cell over every
-- release of the domain; sqlanon.cells holds what each cell must keep. The data step,
-- sqlanon.release.rebuild_domain_cells, fills them for releases made before.
ALTER TABLE sqlanon.releases ADD COLUMN domain text;
ALTER TABLE sqlanon.releases ADD COLUMN seq integer;
-- A fingerprint of the record's values of every attribute the domain's cells constrain.
ALTER TABLE sqlanon.members ADD COLUMN value_hash bigint;
-- Private: per release, each cell's requirement (0 = none) per attribute.
CREATE TABLE sqlanon.cells (
    family       text NOT NULL,
    version      integer NOT NULL,
    cell_id      bigint NOT NULL,
    attribute    text NOT NULL,
    min_distinct integer NOT NULL,
    min_spread   double precision NOT NULL
);
CREATE INDEX cells_family_version ON sqlanon.cells USING brin (family, version);
