-- Records this plan publishes that the family's last version did not (0: nothing new).
SELECT count(*)
FROM _sqlanon_read AS r
JOIN _sqlanon_plan AS p ON {plan_match}
WHERE p.group_id >= 0 AND NOT r.published_before
