-- Every release in the order it was made (domains whose releases have no seq yet).
SELECT family, version FROM sqlanon.releases ORDER BY created_at, family, version
