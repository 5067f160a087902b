-- Interval fixtures over the (k,e) release `adult_ke` (built in tests/test_rewrite_fixtures.py).
-- Each case: a `-- columns:` line with the expected output columns, then one query ending
-- in `;`. Every case is rewritten, run on DuckDB, and each interval checked against the
-- true answer of the same query on the private source.

-- columns: sex, count_star, count_star_low, count_star_high, count_star_est, loss_low, loss_high, loss_est, avg_capital_loss_low, avg_capital_loss_high, avg_capital_loss_est
SELECT sex, COUNT(*), SUM(capital_loss) AS loss, AVG(capital_loss) FROM adult_ke WHERE age BETWEEN 30 AND 50 AND education IN ('Masters', 'Doctorate') GROUP BY sex;

-- columns: count_star, count_star_low, count_star_high, count_star_est
SELECT COUNT(*) FROM adult_ke;

-- columns: sum_capital_loss_low, sum_capital_loss_high, sum_capital_loss_est
SELECT SUM(capital_loss) FROM adult_ke_v1 WHERE age < 25 OR age > 60;

-- columns: min_capital_loss_low, min_capital_loss_high, min_capital_loss_est, max_capital_loss_low, max_capital_loss_high, max_capital_loss_est
SELECT MIN(capital_loss), MAX(capital_loss) FROM adult_ke WHERE NOT (sex = 'Male') AND education LIKE 'B%';

-- columns: education, n, n_low, n_high, n_est, hi_loss_low, hi_loss_high, hi_loss_est
SELECT education, COUNT(*) AS n, MAX(capital_loss) AS hi_loss FROM adult_ke WHERE education IS NOT NULL GROUP BY education ORDER BY education;

-- columns: count_star_low, count_star_high, count_star_est, sum_capital_loss_low, sum_capital_loss_high, sum_capital_loss_est
SELECT COUNT(*), SUM(capital_loss) FROM adult_ke WHERE capital_loss > 2000 AND age >= 40;

-- columns: sex, count_star_low, count_star_high, count_star_est, avg_capital_loss_low, avg_capital_loss_high, avg_capital_loss_est, min_capital_loss_low, min_capital_loss_high, min_capital_loss_est
SELECT sex, COUNT(*), AVG(capital_loss), MIN(capital_loss) FROM adult_ke WHERE capital_loss BETWEEN 1500 AND 2500 GROUP BY sex;

-- columns: count_education, count_education_low, count_education_high, count_education_est, count_capital_loss, count_capital_loss_low, count_capital_loss_high, count_capital_loss_est
SELECT COUNT(education), COUNT(capital_loss) FROM adult_ke WHERE age <> 33;

-- columns: count_education_low, count_education_high, count_education_est
SELECT COUNT(education) FROM adult_ke WHERE (capital_loss < 1000 OR capital_loss > 3000) AND sex = 'Female';

-- columns: sex, age, total_low, total_high, total_est
SELECT a.sex, a.age, SUM(a.capital_loss) AS total FROM adult_ke AS a WHERE a.age IN (30, 31, 32) GROUP BY a.sex, a.age ORDER BY a.age DESC, sex LIMIT 4;

-- columns: group_id, c, c_low, c_high, c_est, mean_low, mean_high, mean_est
SELECT group_id, COUNT(*) AS c, AVG(capital_loss) AS mean FROM adult_ke WHERE group_id < 3 AND education IS NULL GROUP BY group_id;

-- columns: max_capital_loss_low, max_capital_loss_high, max_capital_loss_est
SELECT MAX(capital_loss) FROM adult_ke WHERE age > 200 AND capital_loss > 0;

-- columns: avg_capital_loss_low, avg_capital_loss_high, avg_capital_loss_est
SELECT AVG(capital_loss) FROM adult_ke WHERE NOT (capital_loss IN (1902, 1977)) AND age BETWEEN 20 AND 45;

-- The general front end (issue 25) over the narrow builders: the same checks, plus HAVING
-- (groups surely passing truly pass, every truly passing group appears) and ORDER BY /
-- LIMIT (sorted by the estimate, the right number of groups).

-- columns: sex, count_star, count_star_low, count_star_high, count_star_est
SELECT sex, COUNT(*) FROM adult_ke GROUP BY 1;

-- columns: s, n, n_low, n_high, n_est, loss_low, loss_high, loss_est
SELECT sex AS s, COUNT(*) AS n, SUM(capital_loss) AS loss FROM adult_ke WHERE age > 30 GROUP BY s;

-- columns: sex, mean_low, mean_high, mean_est, spread_low, spread_high, spread_est, r_low, r_high, r_est
SELECT sex, SUM(capital_loss) / COUNT(*) AS mean, MAX(capital_loss) - MIN(capital_loss) AS spread, ROUND(AVG(capital_loss) * 1.1, 1) AS r FROM adult_ke WHERE education IS NOT NULL GROUP BY sex;

-- columns: education, n_low, n_high, n_est, total_low, total_high, total_est, having_surely
SELECT education, COUNT(*) AS n, COALESCE(SUM(capital_loss), 0) AS total FROM adult_ke WHERE capital_loss > 1500 GROUP BY education HAVING COUNT(*) > 10 AND AVG(capital_loss) > 1900;

-- columns: education, loss_low, loss_high, loss_est
SELECT education, SUM(capital_loss) AS loss FROM adult_ke GROUP BY education ORDER BY loss DESC LIMIT 3 OFFSET 1;

-- columns: education, n, n_low, n_high, n_est
SELECT education, COUNT(*) AS n FROM adult_ke WHERE age < 40 GROUP BY education ORDER BY 2 DESC, 1;

-- columns: sex, education, n, n_low, n_high, n_est
WITH t AS (SELECT * FROM adult_ke WHERE age BETWEEN 25 AND 60), u AS (SELECT sex, education, capital_loss AS loss FROM t WHERE education IN ('Masters', 'Bachelors')) SELECT sex, education, COUNT(*) AS n FROM (SELECT * FROM u) AS x GROUP BY ALL;

-- columns: sex, n, n_low, n_high, n_est, mean_low, mean_high, mean_est
SELECT sex, COUNT(*) AS n, AVG(capital_loss) AS mean FROM adult_ke WHERE age > 45 GROUP BY ROLLUP (sex);

-- columns: version, n, n_low, n_high, n_est, loss_low, loss_high, loss_est
SELECT 'newest' AS version, COUNT(*) AS n, SUM(capital_loss) AS loss FROM adult_ke WHERE age < 30 UNION ALL SELECT 'first', COUNT(*), SUM(capital_loss) FROM adult_ke_v1 WHERE age < 30;

-- columns: sex, education
SELECT DISTINCT sex, education FROM adult_ke WHERE age > 70;

-- columns: sex, share_low, share_high, share_est
SELECT sex, COUNT(*) * 100.0 / SUM(capital_loss) AS share FROM adult_ke WHERE capital_loss > 2000 GROUP BY sex;

-- columns: education, n, n_low, n_high, n_est, having_surely
SELECT education, COUNT(*) AS n FROM adult_ke GROUP BY education HAVING COUNT(*) > 48 OR SUM(capital_loss) > 100000;
