-- Whether the current user is (a member of) role $1, which released a domain's records;
-- false for a role dropped since. Domains are inferred only from one's own releases.
SELECT CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $1)
            THEN pg_catalog.pg_has_role($1, 'MEMBER') ELSE false END
