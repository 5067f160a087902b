-- Each family of an export and its newest version's table: the family's view.
SELECT family, max_by(table_name, version) FROM {db}.sqlanon.releases GROUP BY family ORDER BY family
