-- Interval fixtures over the lHD releases `ams` (age by the ARX hierarchy, marital_status,
-- sex) and `wes` (age by widths 5/10/20, education, sex), both publishing capital_loss and
-- hours_per_week (built in tests/test_rewrite_lhd.py). Each case: a `-- columns:` line with
-- the expected output columns, then one query ending in `;`. Every case is rewritten, run on
-- DuckDB, and each interval checked against the same query over the published records'
-- raw values, grouped by their published labels.

-- columns: sex, count_star_low, count_star_high, count_star_est, loss_low, loss_high, loss_est, avg_capital_loss_low, avg_capital_loss_high, avg_capital_loss_est
SELECT sex, COUNT(*), SUM(capital_loss) AS loss, AVG(capital_loss) FROM ams WHERE age BETWEEN 30 AND 50 AND marital_status IN ('Divorced', 'Widowed') GROUP BY sex;

-- columns: count_star, count_star_low, count_star_high, count_star_est
SELECT COUNT(*) FROM ams_v1;

-- columns: sum_hours_per_week_low, sum_hours_per_week_high, sum_hours_per_week_est
SELECT SUM(hours_per_week) FROM wes WHERE age < 25 OR age > 60;

-- columns: min_capital_loss_low, min_capital_loss_high, min_capital_loss_est, max_capital_loss_low, max_capital_loss_high, max_capital_loss_est
SELECT MIN(capital_loss), MAX(capital_loss) FROM wes WHERE NOT (sex = 'Male') AND education LIKE 'B%';

-- columns: age, n_low, n_high, n_est, hi_loss_low, hi_loss_high, hi_loss_est
SELECT age, COUNT(*) AS n, MAX(capital_loss) AS hi_loss FROM wes WHERE education IS NOT NULL GROUP BY age ORDER BY age;

-- columns: count_star_low, count_star_high, count_star_est, sum_capital_loss_low, sum_capital_loss_high, sum_capital_loss_est
SELECT COUNT(*), SUM(capital_loss) FROM ams WHERE capital_loss > 2000 AND age >= 40;

-- columns: marital_status, count_star_low, count_star_high, count_star_est, avg_hours_per_week_low, avg_hours_per_week_high, avg_hours_per_week_est
SELECT marital_status, COUNT(*), AVG(hours_per_week) FROM ams WHERE hours_per_week BETWEEN 35 AND 45 GROUP BY marital_status;

-- columns: sex, age, total_low, total_high, total_est
SELECT a.sex, a.age, SUM(a.capital_loss) AS total FROM ams AS a WHERE a.age IN (30, 31, 32) GROUP BY a.sex, a.age ORDER BY a.age DESC, sex LIMIT 4;

-- columns: class_id, c_low, c_high, c_est, mean_low, mean_high, mean_est
SELECT class_id, COUNT(*) AS c, AVG(capital_loss) AS mean FROM wes WHERE class_id < 5 GROUP BY class_id;

-- columns: max_hours_per_week_low, max_hours_per_week_high, max_hours_per_week_est
SELECT MAX(hours_per_week) FROM ams WHERE age > 200 AND hours_per_week > 0;
