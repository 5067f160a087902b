-- Live tables (MODELS.md, "Changing tables"). A published record deleted from its
-- source, or the old incarnation of a changed sensitive value, becomes a ghost: its
-- rows in sqlanon.members get a random ghost id in place of the key (ghost = true, no
-- fingerprint of its quasi-identifiers), and it stays a member of its cell for ever.
ALTER TABLE sqlanon.members ADD COLUMN ghost boolean DEFAULT false;
-- Private: the values of every attribute the domain's cells constrain, as text, of
-- every record a release of the domain published (a ghost keeps them; its key is gone).
CREATE TABLE sqlanon.kept_values (
    domain     text NOT NULL,
    record_key text NOT NULL,
    attribute  text NOT NULL,
    value      text NOT NULL
);
CREATE INDEX kept_values_domain_key ON sqlanon.kept_values (domain, record_key);
-- Private: a changed sensitive value links the old incarnation (a ghost) to the new
-- one (a key, or a later ghost): the chain rule's chains.
CREATE TABLE sqlanon.links (
    domain  text NOT NULL,
    earlier text NOT NULL,
    later   text NOT NULL
);
