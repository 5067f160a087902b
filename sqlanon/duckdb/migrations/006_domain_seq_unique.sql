-- One release per place in a domain's sequence: two releases of one domain that ran
-- at once (DuckDB has no advisory lock) cannot both commit, so each release has seen
-- the one before it. (A separate step: 005's data step fills domain and seq first.)
CREATE UNIQUE INDEX releases_domain_seq ON sqlanon.releases (domain, seq);
