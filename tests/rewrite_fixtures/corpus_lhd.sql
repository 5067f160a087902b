-- Corpus of everyday analyst SQL over the lHD release `adult_lhd` (issue 25): the yardstick
-- for the rewriter's coverage, run by tests/test_rewrite_corpus.py and bench/coverage.py.
--
-- Release (tests/corpus.py builds it with sqlanon's own API, on DuckDB and PostgreSQL):
-- family `adult_lhd` from the source `adult` (Adult records: id, age, sex, education,
-- capital_loss, hours_per_week); quasi age, education, sex generalized by the bundled ARX
-- hierarchies (labels such as '30-34', 'Higher education', '*'); sensitive capital_loss
-- and hours_per_week, published as they are; l=3. Two versions, `adult_lhd_v1` and
-- `adult_lhd_v2` (after deletions, changed ages and losses and inserted records: v2 has
-- ghosts); `adult_lhd` is the latest. Also in the database: the (k,e) family `adult_ke`
-- (corpus_ke.sql) and the public lookup table `edu_level(education, level, degree)`.
--
-- Format: a case is a block of header lines, then one query ending in `;`:
--   -- case: <name>           unique in the file
--   -- construct: <word>      what it exercises (the coverage report counts by it)
--   -- expect: answer|refuse  answer: sqlanon must answer soundly; refuse: it must raise
--                             UnsupportedQueryError
--   -- dialect: duckdb        optional: DuckDB-only SQL (skipped on PostgreSQL)
-- Other `--` lines are comments. Every query is valid DuckDB and PostgreSQL SQL unless
-- marked. The truth (tests/test_rewrite_lhd.py's definition) is the query over the
-- records each version published, with their raw values, grouped by their published
-- labels: a quasi column that is a GROUP BY key as a bare column (by name, position,
-- alias, ALL, ROLLUP...) stands for its label; everywhere else (WHERE, CASE bands,
-- floor(age / 10), aggregates' arguments) for the raw value. Ghosts and held-back rows
-- are not in the truth. Name every output column that is not a bare column, COUNT(*) or
-- F(column) with an alias.

-- ============================================================ plain shapes (answered today)

-- case: plain_count
-- construct: plain
-- expect: answer
SELECT COUNT(*) FROM adult_lhd;

-- case: plain_by_sex
-- construct: plain
-- expect: answer
SELECT sex, COUNT(*), SUM(capital_loss) AS loss, AVG(hours_per_week) FROM adult_lhd WHERE age BETWEEN 30 AND 50 GROUP BY sex;

-- case: plain_min_max
-- construct: plain
-- expect: answer
SELECT MIN(capital_loss), MAX(hours_per_week) FROM adult_lhd WHERE education IN ('Bachelors', 'Masters');

-- case: plain_sensitive_where
-- construct: plain
-- expect: answer
SELECT COUNT(*) AS n, SUM(hours_per_week) AS hours FROM adult_lhd WHERE capital_loss > 2000 AND age >= 40;

-- case: plain_group_order
-- construct: plain
-- expect: answer
SELECT education, COUNT(*) AS n, AVG(capital_loss) AS mean_loss FROM adult_lhd GROUP BY education ORDER BY education;

-- case: plain_v1
-- construct: plain
-- expect: answer
SELECT sex, SUM(capital_loss) AS total FROM adult_lhd_v1 GROUP BY sex;

-- case: plain_or_quasi
-- construct: plain
-- expect: answer
SELECT age, AVG(hours_per_week) AS mean_hours FROM adult_lhd WHERE age < 25 OR age > 60 GROUP BY age;

-- case: plain_limit
-- construct: plain
-- expect: answer
SELECT age, COUNT(*) AS n FROM adult_lhd GROUP BY age ORDER BY age LIMIT 6;

-- case: plain_group_sensitive
-- construct: plain
-- expect: answer
SELECT hours_per_week, COUNT(*) AS n FROM adult_lhd WHERE sex = 'Female' GROUP BY hours_per_week;

-- case: plain_class
-- construct: plain
-- expect: answer
SELECT class_id, COUNT(*) AS n, AVG(capital_loss) AS mean_loss FROM adult_lhd WHERE class_id < 10 GROUP BY class_id;

-- ============================================================ GROUP BY styles

-- case: group_by_ordinal
-- construct: group-by-ordinal
-- expect: answer
SELECT sex, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_lhd GROUP BY 1;

-- case: group_by_ordinals_two
-- construct: group-by-ordinal
-- expect: answer
SELECT education, sex, AVG(hours_per_week) AS mean_hours FROM adult_lhd GROUP BY 1, 2;

-- case: group_by_alias_renamed
-- construct: group-by-alias
-- expect: answer
SELECT education AS edu, COUNT(*) AS n FROM adult_lhd GROUP BY edu;

-- case: group_by_case_band
-- construct: group-by-case
-- expect: answer
SELECT CASE WHEN age < 30 THEN 'under 30' WHEN age < 50 THEN '30-49' ELSE '50+' END AS age_band, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_lhd GROUP BY age_band;

-- case: group_by_case_sensitive
-- construct: group-by-case
-- expect: answer
SELECT CASE WHEN hours_per_week > 40 THEN 'overtime' ELSE 'regular' END AS schedule, COUNT(*) AS n, AVG(capital_loss) AS mean_loss FROM adult_lhd GROUP BY 1;

-- case: group_by_decade
-- construct: group-by-expression
-- expect: answer
SELECT floor(age / 10) * 10 AS decade, COUNT(*) AS n FROM adult_lhd GROUP BY floor(age / 10) * 10;

-- case: group_by_hours_band
-- construct: group-by-expression
-- expect: answer
SELECT floor(hours_per_week / 10) * 10 AS hours_band, SUM(capital_loss) AS total FROM adult_lhd GROUP BY 1 ORDER BY 1;

-- case: group_by_all
-- construct: group-by-all
-- expect: answer
-- dialect: duckdb
SELECT sex, education, COUNT(*) AS n, SUM(hours_per_week) AS hours FROM adult_lhd GROUP BY ALL;

-- case: group_by_not_selected
-- construct: group-by-ordinal
-- expect: answer
SELECT COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_lhd GROUP BY sex;

-- ============================================================ WHERE with functions and arithmetic

-- case: where_lower
-- construct: where-function
-- expect: answer
SELECT COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_lhd WHERE lower(sex) = 'female';

-- case: where_age_plus
-- construct: where-arithmetic
-- expect: answer
SELECT sex, COUNT(*) AS n FROM adult_lhd WHERE age + 5 > 50 GROUP BY sex;

-- case: where_coalesce
-- construct: where-function
-- expect: answer
SELECT COUNT(*) AS n FROM adult_lhd WHERE coalesce(education, 'unknown') = 'HS-grad';

-- case: where_hours_arithmetic
-- construct: where-arithmetic
-- expect: answer
SELECT education, COUNT(*) AS n FROM adult_lhd WHERE hours_per_week * 52 > 2500 GROUP BY education;

-- case: where_lower_like
-- construct: where-function
-- expect: answer
SELECT COUNT(*) AS n FROM adult_lhd WHERE lower(education) LIKE '%grad%';

-- case: where_age_mod
-- construct: where-arithmetic
-- expect: answer
SELECT SUM(hours_per_week) AS hours FROM adult_lhd WHERE age % 10 = 0;

-- ============================================================ the sensitive column under OR

-- case: or_sensitive_quasi
-- construct: where-or-sensitive
-- expect: answer
SELECT COUNT(*) AS n FROM adult_lhd WHERE capital_loss > 2500 OR age < 25;

-- case: or_two_sensitive
-- construct: where-or-sensitive
-- expect: answer
SELECT sex, COUNT(*) AS n FROM adult_lhd WHERE capital_loss > 2200 OR hours_per_week > 50 GROUP BY sex;

-- case: or_sensitive_nested
-- construct: where-or-sensitive
-- expect: answer
SELECT AVG(hours_per_week) AS mean_hours FROM adult_lhd WHERE (age > 50 AND capital_loss > 1900) OR (sex = 'Female' AND hours_per_week < 30);

-- ============================================================ ORDER BY, LIMIT, OFFSET

-- case: order_by_aggregate
-- construct: order-by-aggregate
-- expect: answer
SELECT education, SUM(capital_loss) AS total FROM adult_lhd GROUP BY education ORDER BY total DESC;

-- case: order_by_ordinal
-- construct: order-by-ordinal
-- expect: answer
SELECT sex, AVG(hours_per_week) AS mean_hours FROM adult_lhd GROUP BY sex ORDER BY 2 DESC;

-- case: top_n
-- construct: order-by-aggregate
-- expect: answer
SELECT age, COUNT(*) AS n FROM adult_lhd GROUP BY age ORDER BY COUNT(*) DESC LIMIT 3;

-- case: limit_offset
-- construct: limit-offset
-- expect: answer
SELECT education, AVG(capital_loss) AS mean_loss FROM adult_lhd GROUP BY education ORDER BY mean_loss DESC LIMIT 3 OFFSET 1;

-- ============================================================ DISTINCT

-- case: distinct_label
-- construct: distinct
-- expect: answer
SELECT DISTINCT education FROM adult_lhd;

-- case: distinct_filtered
-- construct: distinct
-- expect: answer
SELECT DISTINCT sex FROM adult_lhd WHERE hours_per_week > 60;

-- ============================================================ HAVING

-- case: having_count
-- construct: having-count
-- expect: answer
SELECT education, COUNT(*) AS n FROM adult_lhd GROUP BY education HAVING COUNT(*) >= 10;

-- case: having_count_where
-- construct: having-count
-- expect: answer
SELECT age, COUNT(*) AS n FROM adult_lhd WHERE sex = 'Male' GROUP BY age HAVING COUNT(*) > 5 ORDER BY n DESC;

-- case: having_sum
-- construct: having-sum
-- expect: answer
SELECT education, SUM(capital_loss) AS total FROM adult_lhd GROUP BY education HAVING SUM(capital_loss) > 20000;

-- case: having_avg
-- construct: having-sum
-- expect: answer
SELECT sex, AVG(hours_per_week) AS mean_hours FROM adult_lhd GROUP BY sex HAVING AVG(hours_per_week) > 35;

-- ============================================================ CTEs and derived tables

-- case: cte_filter
-- construct: cte
-- expect: answer
WITH women AS (SELECT * FROM adult_lhd WHERE sex = 'Female') SELECT education, COUNT(*) AS n, AVG(capital_loss) AS mean_loss FROM women GROUP BY education;

-- case: cte_compute
-- construct: cte
-- expect: answer
WITH t AS (SELECT sex, capital_loss / 1000.0 AS loss_k, hours_per_week * 52 AS yearly FROM adult_lhd) SELECT sex, SUM(loss_k) AS total_k, AVG(yearly) AS mean_yearly FROM t GROUP BY sex;

-- case: cte_band
-- construct: cte
-- expect: answer
WITH banded AS (SELECT CASE WHEN age < 40 THEN 'under 40' ELSE '40+' END AS band, hours_per_week FROM adult_lhd) SELECT band, AVG(hours_per_week) AS mean_hours FROM banded GROUP BY band;

-- case: derived_filter
-- construct: derived-table
-- expect: answer
SELECT sex, AVG(capital_loss) AS mean_loss FROM (SELECT sex, capital_loss FROM adult_lhd WHERE education = 'HS-grad') AS t GROUP BY sex;

-- case: derived_compute
-- construct: derived-table
-- expect: answer
SELECT long_week, COUNT(*) AS n FROM (SELECT hours_per_week > 45 AS long_week FROM adult_lhd WHERE age >= 30) AS t GROUP BY long_week;

-- ============================================================ conditional aggregates

-- case: sum_case_count
-- construct: sum-case
-- expect: answer
SELECT sex, SUM(CASE WHEN capital_loss > 2000 THEN 1 ELSE 0 END) AS n_high FROM adult_lhd GROUP BY sex;

-- case: sum_case_quasi
-- construct: sum-case
-- expect: answer
SELECT education, SUM(CASE WHEN age >= 50 THEN capital_loss ELSE 0 END) AS loss_50plus FROM adult_lhd GROUP BY education;

-- case: count_filter
-- construct: count-filter
-- expect: answer
SELECT education, COUNT(*) FILTER (WHERE hours_per_week > 40) AS n_long, COUNT(*) AS n FROM adult_lhd GROUP BY education;

-- case: sum_filter_quasi
-- construct: count-filter
-- expect: answer
SELECT SUM(capital_loss) FILTER (WHERE sex = 'Female') AS women, SUM(capital_loss) FILTER (WHERE sex = 'Male') AS men FROM adult_lhd;

-- ============================================================ aggregates of expressions

-- case: avg_scaled
-- construct: aggregate-expression
-- expect: answer
SELECT sex, AVG(capital_loss * 1.1) AS adjusted FROM adult_lhd GROUP BY sex;

-- case: avg_ln
-- construct: aggregate-expression
-- expect: answer
SELECT education, AVG(ln(capital_loss + 1)) AS mean_log FROM adult_lhd GROUP BY education;

-- case: sum_product
-- construct: aggregate-expression
-- expect: answer
SELECT sex, SUM(hours_per_week * 52) AS yearly_hours FROM adult_lhd GROUP BY sex;

-- case: avg_two_sensitive
-- construct: aggregate-expression
-- expect: answer
SELECT AVG(capital_loss / hours_per_week) AS loss_per_hour FROM adult_lhd WHERE hours_per_week > 0;

-- ============================================================ arithmetic over aggregates

-- case: ratio_sum_count
-- construct: aggregate-arithmetic
-- expect: answer
SELECT sex, SUM(capital_loss) / COUNT(*) AS per_person FROM adult_lhd GROUP BY sex;

-- case: round_avg
-- construct: aggregate-arithmetic
-- expect: answer
SELECT education, ROUND(AVG(hours_per_week), 1) AS mean_hours FROM adult_lhd GROUP BY education;

-- case: range_max_min
-- construct: aggregate-arithmetic
-- expect: answer
SELECT sex, MAX(hours_per_week) - MIN(hours_per_week) AS spread FROM adult_lhd GROUP BY sex;

-- case: share_filter
-- construct: aggregate-arithmetic
-- expect: answer
SELECT SUM(capital_loss) FILTER (WHERE age >= 50) * 100.0 / SUM(capital_loss) AS pct_50plus FROM adult_lhd;

-- case: count_share
-- construct: aggregate-arithmetic
-- expect: answer
SELECT education, 100.0 * COUNT(*) FILTER (WHERE hours_per_week > 40) / COUNT(*) AS pct_long FROM adult_lhd GROUP BY education;

-- ============================================================ statistics

-- case: median
-- construct: median
-- expect: answer
-- dialect: duckdb
SELECT sex, MEDIAN(hours_per_week) AS med FROM adult_lhd GROUP BY sex;

-- case: quantile_cont
-- construct: quantile
-- expect: answer
-- dialect: duckdb
SELECT quantile_cont(capital_loss, 0.9) AS p90 FROM adult_lhd;

-- case: percentile_cont
-- construct: percentile
-- expect: answer
SELECT education, percentile_cont(0.5) WITHIN GROUP (ORDER BY capital_loss) AS med FROM adult_lhd GROUP BY education;

-- case: stddev
-- construct: stddev
-- expect: answer
SELECT sex, STDDEV(hours_per_week) AS sd FROM adult_lhd GROUP BY sex;

-- case: var_pop
-- construct: variance
-- expect: answer
SELECT VAR_POP(capital_loss) AS v FROM adult_lhd WHERE age > 40;

-- ============================================================ COUNT(DISTINCT)

-- case: count_distinct_sensitive
-- construct: count-distinct
-- expect: answer
SELECT sex, COUNT(DISTINCT hours_per_week) AS n_values FROM adult_lhd GROUP BY sex;

-- case: count_distinct_quasi
-- construct: count-distinct
-- expect: answer
SELECT COUNT(DISTINCT education) AS n_edu FROM adult_lhd WHERE capital_loss > 2000;

-- ============================================================ public lookup data

-- case: join_values
-- construct: public-join
-- expect: answer
SELECT v.tier, COUNT(*) AS n, SUM(a.capital_loss) AS total FROM adult_lhd AS a JOIN (VALUES ('Bachelors', 'degree'), ('Masters', 'degree'), ('HS-grad', 'school')) AS v(education, tier) ON a.education = v.education GROUP BY v.tier;

-- case: in_subquery_union
-- construct: public-subquery
-- expect: answer
SELECT sex, COUNT(*) AS n FROM adult_lhd WHERE education IN (SELECT 'Bachelors' UNION SELECT 'Masters') GROUP BY sex;

-- case: join_lookup
-- construct: public-join
-- expect: answer
SELECT l.degree, COUNT(*) AS n, AVG(a.hours_per_week) AS mean_hours FROM adult_lhd AS a JOIN edu_level AS l ON l.education = a.education GROUP BY l.degree;

-- case: in_subquery_lookup
-- construct: public-subquery
-- expect: answer
SELECT SUM(capital_loss) AS total FROM adult_lhd WHERE education IN (SELECT education FROM edu_level WHERE level >= 13);

-- ============================================================ ROLLUP, CUBE, GROUPING SETS

-- case: rollup
-- construct: rollup
-- expect: answer
SELECT sex, education, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_lhd GROUP BY ROLLUP (sex, education);

-- case: cube
-- construct: cube
-- expect: answer
SELECT sex, age, AVG(hours_per_week) AS mean_hours FROM adult_lhd GROUP BY CUBE (sex, age);

-- case: grouping_sets
-- construct: grouping-sets
-- expect: answer
SELECT sex, education, COUNT(*) AS n FROM adult_lhd GROUP BY GROUPING SETS ((sex), (education), ());

-- ============================================================ two versions side by side

-- case: union_versions
-- construct: union-versions
-- expect: answer
SELECT 'v1' AS version, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_lhd_v1 UNION ALL SELECT 'v2' AS version, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_lhd_v2;

-- case: union_versions_filtered
-- construct: union-versions
-- expect: answer
SELECT 'v1' AS version, AVG(hours_per_week) AS mean_hours FROM adult_lhd_v1 WHERE age > 40 UNION ALL SELECT 'v2' AS version, AVG(hours_per_week) AS mean_hours FROM adult_lhd_v2 WHERE age > 40;

-- ============================================================ mixed dashboard queries

-- case: dashboard_bands
-- construct: mixed
-- expect: answer
SELECT CASE WHEN age < 30 THEN '<30' WHEN age < 45 THEN '30-44' ELSE '45+' END AS band, COUNT(*) AS n, ROUND(AVG(hours_per_week), 1) AS mean_hours FROM adult_lhd GROUP BY 1 HAVING COUNT(*) > 5 ORDER BY 2 DESC;

-- case: notebook_cte_share
-- construct: mixed
-- expect: answer
WITH t AS (SELECT education, capital_loss FROM adult_lhd WHERE lower(sex) = 'male') SELECT education, COUNT(*) FILTER (WHERE capital_loss > 1900) * 100.0 / COUNT(*) AS pct FROM t GROUP BY education ORDER BY pct DESC LIMIT 5;

-- case: dashboard_kpis
-- construct: mixed
-- expect: answer
SELECT COUNT(*) AS people, SUM(capital_loss) AS total, ROUND(AVG(hours_per_week), 1) AS mean_hours, COUNT(*) FILTER (WHERE hours_per_week >= 50) AS n_long FROM adult_lhd WHERE age BETWEEN 18 AND 65;

-- ============================================================ must be refused

-- case: refuse_window_sensitive
-- construct: refuse-window
-- expect: refuse
SELECT sex, hours_per_week, avg(hours_per_week) OVER (PARTITION BY sex) AS mean_hours FROM adult_lhd;

-- case: refuse_correlated
-- construct: refuse-correlated
-- expect: refuse
SELECT education, COUNT(*) AS n FROM adult_lhd AS a WHERE hours_per_week > (SELECT AVG(b.hours_per_week) FROM adult_lhd AS b WHERE b.education = a.education) GROUP BY education;

-- case: refuse_join_versions
-- construct: refuse-join-releases
-- expect: refuse
SELECT a.sex, COUNT(*) AS n FROM adult_lhd_v1 AS a JOIN adult_lhd_v2 AS b ON a.class_id = b.class_id GROUP BY a.sex;

-- case: refuse_source
-- construct: refuse-source
-- expect: refuse
SELECT education, AVG(capital_loss) AS mean_loss FROM adult GROUP BY education;

-- case: refuse_schema_sqlanon
-- construct: refuse-sqlanon
-- expect: refuse
SELECT COUNT(*) AS n FROM sqlanon.releases;

-- case: refuse_hierarchies
-- construct: refuse-sqlanon
-- expect: refuse
SELECT label, COUNT(*) AS n FROM sqlanon.hierarchies GROUP BY label;
