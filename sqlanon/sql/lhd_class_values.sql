-- Each published row's class (group) id and one sensitive value, from a release table.
SELECT {group_id} AS class_id, {sensitive} AS s FROM {release}
