-- Corpus of everyday analyst SQL over the (k,e) release `adult_ke` (issue 25): the yardstick
-- for the rewriter's coverage, run by tests/test_rewrite_corpus.py and bench/coverage.py.
--
-- Release (tests/corpus.py builds it with sqlanon's own API, on DuckDB and PostgreSQL):
-- family `adult_ke` from the source `adult_k` (Adult records: id, age, sex, education,
-- capital_loss, hours_per_week); quasi age, sex, education; sensitive capital_loss; k=5,
-- e=20. Two versions, `adult_ke_v1` and `adult_ke_v2` (after deletions, changed ages and
-- losses and inserted records: v2 has ghosts); `adult_ke` is the latest. Also in the
-- database: the lHD family `adult_lhd` (see corpus_lhd.sql) and the public lookup table
-- `edu_level(education, level, degree)` (level 1-16 as Adult's education_num; degree true
-- from Bachelors up).
--
-- Format: a case is a block of header lines, then one query ending in `;`:
--   -- case: <name>           unique in the file
--   -- construct: <word>      what it exercises (the coverage report counts by it)
--   -- expect: answer|refuse  answer: sqlanon must answer soundly; refuse: it must raise
--                             UnsupportedQueryError
--   -- dialect: duckdb        optional: DuckDB-only SQL (skipped on PostgreSQL)
-- Other `--` lines are comments. Every query is valid DuckDB and PostgreSQL SQL unless
-- marked. The truth is the same query text over the records each version published
-- (their true values; ghosts and held-back rows are not in it), matched to the answer by
-- the group key. Name every output column that is not a bare column, COUNT(*) or
-- F(column) with an alias (the runner names the others as the rewriter does:
-- count_star, sum_capital_loss...).

-- ============================================================ plain shapes (answered today)

-- case: plain_count
-- construct: plain
-- expect: answer
SELECT COUNT(*) FROM adult_ke;

-- case: plain_sum_by_sex
-- construct: plain
-- expect: answer
SELECT sex, COUNT(*), SUM(capital_loss) AS loss, AVG(capital_loss) FROM adult_ke WHERE age BETWEEN 30 AND 50 GROUP BY sex;

-- case: plain_min_max_where_in
-- construct: plain
-- expect: answer
SELECT MIN(capital_loss), MAX(capital_loss) FROM adult_ke WHERE education IN ('Bachelors', 'Masters', 'Doctorate');

-- case: plain_sensitive_where
-- construct: plain
-- expect: answer
SELECT COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke WHERE capital_loss > 2000 AND age >= 40;

-- case: plain_group_two_order
-- construct: plain
-- expect: answer
SELECT education, sex, COUNT(*) AS n, AVG(capital_loss) AS mean_loss FROM adult_ke WHERE age < 60 GROUP BY education, sex ORDER BY education, sex;

-- case: plain_v1
-- construct: plain
-- expect: answer
SELECT sex, SUM(capital_loss) AS total FROM adult_ke_v1 GROUP BY sex;

-- case: plain_like_not
-- construct: plain
-- expect: answer
SELECT COUNT(*) AS n FROM adult_ke WHERE education LIKE '%-grad' AND NOT (sex = 'Male');

-- case: plain_or_quasi
-- construct: plain
-- expect: answer
SELECT sex, AVG(capital_loss) AS mean_loss FROM adult_ke WHERE age < 25 OR age > 60 GROUP BY sex;

-- case: plain_limit
-- construct: plain
-- expect: answer
SELECT age, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke GROUP BY age ORDER BY age LIMIT 10;

-- case: plain_sensitive_between
-- construct: plain
-- expect: answer
SELECT education, COUNT(*) AS n FROM adult_ke WHERE capital_loss BETWEEN 1500 AND 2000 GROUP BY education;

-- case: plain_count_column
-- construct: plain
-- expect: answer
SELECT COUNT(education) AS n_edu, COUNT(capital_loss) AS n_loss FROM adult_ke WHERE age <> 40;

-- case: plain_alias_qualified
-- construct: plain
-- expect: answer
SELECT a.sex, SUM(a.capital_loss) AS total FROM adult_ke AS a WHERE a.age >= 45 GROUP BY a.sex;

-- ============================================================ GROUP BY styles

-- case: group_by_ordinal
-- construct: group-by-ordinal
-- expect: answer
SELECT sex, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke GROUP BY 1;

-- case: group_by_ordinals_two
-- construct: group-by-ordinal
-- expect: answer
SELECT education, sex, AVG(capital_loss) AS mean_loss FROM adult_ke GROUP BY 1, 2;

-- case: group_by_alias_renamed
-- construct: group-by-alias
-- expect: answer
SELECT education AS edu, COUNT(*) AS n FROM adult_ke GROUP BY edu;

-- case: group_by_case_band
-- construct: group-by-case
-- expect: answer
SELECT CASE WHEN age < 30 THEN 'under 30' WHEN age < 50 THEN '30-49' ELSE '50+' END AS age_band, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke GROUP BY age_band;

-- case: group_by_case_band_ordinal
-- construct: group-by-case
-- expect: answer
SELECT CASE WHEN age < 40 THEN 'young' ELSE 'old' END AS band, sex, AVG(capital_loss) AS mean_loss FROM adult_ke GROUP BY 1, 2;

-- case: group_by_case_expression
-- construct: group-by-case
-- expect: answer
SELECT CASE WHEN education IN ('Bachelors', 'Masters', 'Doctorate', 'Prof-school') THEN 'degree' ELSE 'no degree' END AS degree, MAX(capital_loss) AS top FROM adult_ke GROUP BY CASE WHEN education IN ('Bachelors', 'Masters', 'Doctorate', 'Prof-school') THEN 'degree' ELSE 'no degree' END;

-- case: group_by_decade
-- construct: group-by-expression
-- expect: answer
SELECT floor(age / 10) * 10 AS decade, COUNT(*) AS n, AVG(capital_loss) AS mean_loss FROM adult_ke GROUP BY floor(age / 10) * 10;

-- case: group_by_decade_alias
-- construct: group-by-expression
-- expect: answer
SELECT floor(age / 10) * 10 AS decade, SUM(capital_loss) AS total FROM adult_ke GROUP BY decade ORDER BY decade;

-- case: group_by_lower
-- construct: group-by-expression
-- expect: answer
SELECT lower(sex) AS sex_lc, COUNT(*) AS n FROM adult_ke GROUP BY lower(sex);

-- case: group_by_all
-- construct: group-by-all
-- expect: answer
-- dialect: duckdb
SELECT sex, education, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke GROUP BY ALL;

-- case: group_by_all_band
-- construct: group-by-all
-- expect: answer
-- dialect: duckdb
SELECT CASE WHEN age < 35 THEN 'young' ELSE 'older' END AS band, AVG(capital_loss) AS mean_loss FROM adult_ke GROUP BY ALL;

-- case: group_by_not_selected
-- construct: group-by-ordinal
-- expect: answer
SELECT COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke GROUP BY sex;

-- case: group_by_group_id
-- construct: plain
-- expect: answer
SELECT group_id, COUNT(*) AS n, MIN(capital_loss) AS lo, MAX(capital_loss) AS hi FROM adult_ke GROUP BY group_id;

-- ============================================================ WHERE with functions and arithmetic

-- case: where_lower
-- construct: where-function
-- expect: answer
SELECT COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke WHERE lower(sex) = 'female';

-- case: where_upper_group
-- construct: where-function
-- expect: answer
SELECT education, AVG(capital_loss) AS mean_loss FROM adult_ke WHERE upper(sex) = 'MALE' GROUP BY education;

-- case: where_age_plus
-- construct: where-arithmetic
-- expect: answer
SELECT sex, COUNT(*) AS n FROM adult_ke WHERE age + 5 > 50 GROUP BY sex;

-- case: where_age_times
-- construct: where-arithmetic
-- expect: answer
SELECT SUM(capital_loss) AS total FROM adult_ke WHERE age * 2 BETWEEN 60 AND 100;

-- case: where_coalesce
-- construct: where-function
-- expect: answer
SELECT COUNT(*) AS n FROM adult_ke WHERE coalesce(education, 'unknown') <> 'unknown' AND age > 30;

-- case: where_coalesce_sensitive
-- construct: where-function
-- expect: answer
SELECT sex, COUNT(*) AS n FROM adult_ke WHERE coalesce(capital_loss, 0) > 1900 GROUP BY sex;

-- case: where_length
-- construct: where-function
-- expect: answer
SELECT COUNT(*) AS n FROM adult_ke WHERE length(education) > 8;

-- case: where_substr
-- construct: where-function
-- expect: answer
SELECT AVG(capital_loss) AS mean_loss FROM adult_ke WHERE substr(education, 1, 4) = 'Some';

-- case: where_loss_arithmetic
-- construct: where-arithmetic
-- expect: answer
SELECT COUNT(*) AS n FROM adult_ke WHERE capital_loss * 1.1 > 2200;

-- case: where_ilike_style
-- construct: where-function
-- expect: answer
SELECT COUNT(*) AS n FROM adult_ke WHERE lower(education) LIKE '%grad%';

-- case: where_cast
-- construct: where-function
-- expect: answer
SELECT COUNT(*) AS n FROM adult_ke WHERE CAST(age AS VARCHAR) LIKE '3%';

-- case: where_in_expr
-- construct: where-arithmetic
-- expect: answer
SELECT sex, SUM(capital_loss) AS total FROM adult_ke WHERE age % 10 IN (0, 5) GROUP BY sex;

-- ============================================================ the sensitive column under OR

-- case: or_sensitive_quasi
-- construct: where-or-sensitive
-- expect: answer
SELECT COUNT(*) AS n FROM adult_ke WHERE capital_loss > 2500 OR age < 25;

-- case: or_sensitive_grouped
-- construct: where-or-sensitive
-- expect: answer
SELECT sex, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke WHERE capital_loss < 1600 OR education = 'Doctorate' GROUP BY sex;

-- case: or_sensitive_nested
-- construct: where-or-sensitive
-- expect: answer
SELECT AVG(capital_loss) AS mean_loss FROM adult_ke WHERE (age > 50 AND capital_loss > 1900) OR (sex = 'Female' AND capital_loss < 1700);

-- case: or_sensitive_not
-- construct: where-or-sensitive
-- expect: answer
SELECT education, MAX(capital_loss) AS top FROM adult_ke WHERE NOT (capital_loss BETWEEN 1800 AND 2000 OR age > 60) GROUP BY education;

-- ============================================================ ORDER BY, LIMIT, OFFSET

-- case: order_by_aggregate
-- construct: order-by-aggregate
-- expect: answer
SELECT education, SUM(capital_loss) AS total FROM adult_ke GROUP BY education ORDER BY total DESC;

-- case: order_by_aggregate_expression
-- construct: order-by-aggregate
-- expect: answer
SELECT education, COUNT(*) AS n FROM adult_ke GROUP BY education ORDER BY COUNT(*) DESC, education;

-- case: order_by_ordinal
-- construct: order-by-ordinal
-- expect: answer
SELECT sex, AVG(capital_loss) AS mean_loss FROM adult_ke GROUP BY sex ORDER BY 2;

-- case: order_by_ordinal_limit
-- construct: order-by-ordinal
-- expect: answer
SELECT age, SUM(capital_loss) AS total FROM adult_ke GROUP BY age ORDER BY 2 DESC LIMIT 5;

-- case: top_n_by_avg
-- construct: order-by-aggregate
-- expect: answer
SELECT education, AVG(capital_loss) AS mean_loss FROM adult_ke GROUP BY education ORDER BY mean_loss DESC LIMIT 3;

-- case: limit_offset
-- construct: limit-offset
-- expect: answer
SELECT age, COUNT(*) AS n FROM adult_ke GROUP BY age ORDER BY age LIMIT 5 OFFSET 5;

-- case: limit_offset_aggregate
-- construct: limit-offset
-- expect: answer
SELECT education, SUM(capital_loss) AS total FROM adult_ke GROUP BY education ORDER BY total DESC LIMIT 4 OFFSET 2;

-- ============================================================ DISTINCT

-- case: distinct_quasi
-- construct: distinct
-- expect: answer
SELECT DISTINCT education FROM adult_ke;

-- case: distinct_two_filtered
-- construct: distinct
-- expect: answer
SELECT DISTINCT sex, education FROM adult_ke WHERE age > 60;

-- case: distinct_sensitive_filter
-- construct: distinct
-- expect: answer
SELECT DISTINCT sex FROM adult_ke WHERE capital_loss > 2400;

-- ============================================================ HAVING

-- case: having_count
-- construct: having-count
-- expect: answer
SELECT education, COUNT(*) AS n FROM adult_ke GROUP BY education HAVING COUNT(*) >= 20;

-- case: having_count_alias_order
-- construct: having-count
-- expect: answer
SELECT age, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke GROUP BY age HAVING COUNT(*) > 10 ORDER BY n DESC;

-- case: having_sum
-- construct: having-sum
-- expect: answer
SELECT education, SUM(capital_loss) AS total FROM adult_ke GROUP BY education HAVING SUM(capital_loss) > 20000;

-- case: having_avg
-- construct: having-sum
-- expect: answer
SELECT sex, education, AVG(capital_loss) AS mean_loss FROM adult_ke GROUP BY sex, education HAVING AVG(capital_loss) > 1900;

-- case: having_max_and_count
-- construct: having-sum
-- expect: answer
SELECT age, MAX(capital_loss) AS top FROM adult_ke GROUP BY age HAVING MAX(capital_loss) >= 2000 AND COUNT(*) >= 3;

-- ============================================================ CTEs and derived tables

-- case: cte_filter
-- construct: cte
-- expect: answer
WITH women AS (SELECT * FROM adult_ke WHERE sex = 'Female') SELECT education, COUNT(*) AS n, AVG(capital_loss) AS mean_loss FROM women GROUP BY education;

-- case: cte_compute
-- construct: cte
-- expect: answer
WITH t AS (SELECT age, sex, capital_loss * 1.0 / 1000 AS loss_k FROM adult_ke) SELECT sex, SUM(loss_k) AS total_k FROM t GROUP BY sex;

-- case: cte_band
-- construct: cte
-- expect: answer
WITH banded AS (SELECT CASE WHEN age < 40 THEN 'under 40' ELSE '40+' END AS band, capital_loss FROM adult_ke) SELECT band, COUNT(*) AS n, SUM(capital_loss) AS total FROM banded GROUP BY band;

-- case: cte_two_steps
-- construct: cte
-- expect: answer
WITH base AS (SELECT * FROM adult_ke WHERE age BETWEEN 25 AND 65), big AS (SELECT * FROM base WHERE capital_loss > 1800) SELECT sex, COUNT(*) AS n FROM big GROUP BY sex;

-- case: derived_filter
-- construct: derived-table
-- expect: answer
SELECT sex, AVG(capital_loss) AS mean_loss FROM (SELECT sex, capital_loss FROM adult_ke WHERE education = 'HS-grad') AS t GROUP BY sex;

-- case: derived_compute
-- construct: derived-table
-- expect: answer
SELECT decade, COUNT(*) AS n, MAX(loss) AS top FROM (SELECT floor(age / 10) * 10 AS decade, capital_loss AS loss FROM adult_ke) AS t GROUP BY decade;

-- case: derived_flag
-- construct: derived-table
-- expect: answer
SELECT SUM(high) AS n_high, COUNT(*) AS n FROM (SELECT CASE WHEN capital_loss > 2000 THEN 1 ELSE 0 END AS high FROM adult_ke) AS t;

-- ============================================================ conditional aggregates

-- case: sum_case_count
-- construct: sum-case
-- expect: answer
SELECT sex, SUM(CASE WHEN capital_loss > 2000 THEN 1 ELSE 0 END) AS n_high FROM adult_ke GROUP BY sex;

-- case: sum_case_value
-- construct: sum-case
-- expect: answer
SELECT education, SUM(CASE WHEN age >= 50 THEN capital_loss ELSE 0 END) AS loss_50plus FROM adult_ke GROUP BY education;

-- case: count_case
-- construct: sum-case
-- expect: answer
SELECT COUNT(CASE WHEN capital_loss < 1700 THEN 1 END) AS n_low_loss, COUNT(*) AS n FROM adult_ke;

-- case: avg_case
-- construct: sum-case
-- expect: answer
SELECT sex, AVG(CASE WHEN capital_loss > 1900 THEN 1.0 ELSE 0.0 END) AS share_high FROM adult_ke GROUP BY sex;

-- case: count_filter
-- construct: count-filter
-- expect: answer
SELECT education, COUNT(*) FILTER (WHERE capital_loss > 2000) AS n_high, COUNT(*) AS n FROM adult_ke GROUP BY education;

-- case: sum_filter
-- construct: count-filter
-- expect: answer
SELECT SUM(capital_loss) FILTER (WHERE sex = 'Female') AS women, SUM(capital_loss) FILTER (WHERE sex = 'Male') AS men FROM adult_ke;

-- case: count_filter_quasi
-- construct: count-filter
-- expect: answer
SELECT sex, COUNT(*) FILTER (WHERE age < 30) AS young, COUNT(*) FILTER (WHERE age >= 30) AS older FROM adult_ke GROUP BY sex;

-- ============================================================ aggregates of expressions

-- case: avg_scaled
-- construct: aggregate-expression
-- expect: answer
SELECT sex, AVG(capital_loss * 1.1) AS adjusted FROM adult_ke GROUP BY sex;

-- case: avg_ln
-- construct: aggregate-expression
-- expect: answer
SELECT education, AVG(ln(capital_loss + 1)) AS mean_log FROM adult_ke GROUP BY education;

-- case: sum_shifted
-- construct: aggregate-expression
-- expect: answer
SELECT SUM(capital_loss - 1000) AS excess FROM adult_ke WHERE age > 40;

-- case: max_abs
-- construct: aggregate-expression
-- expect: answer
SELECT MAX(abs(capital_loss - 1900)) AS max_dev FROM adult_ke;

-- case: sum_per_year
-- construct: aggregate-expression
-- expect: answer
SELECT sex, SUM(capital_loss / 12.0) AS monthly FROM adult_ke GROUP BY sex;

-- case: avg_age
-- construct: aggregate-expression
-- expect: answer
SELECT education, AVG(age) AS mean_age, COUNT(*) AS n FROM adult_ke GROUP BY education;

-- ============================================================ arithmetic over aggregates

-- case: ratio_sum_count
-- construct: aggregate-arithmetic
-- expect: answer
SELECT sex, SUM(capital_loss) / COUNT(*) AS per_person FROM adult_ke GROUP BY sex;

-- case: ratio_float
-- construct: aggregate-arithmetic
-- expect: answer
SELECT education, SUM(capital_loss) * 1.0 / COUNT(*) AS per_person FROM adult_ke GROUP BY education;

-- case: round_avg
-- construct: aggregate-arithmetic
-- expect: answer
SELECT sex, ROUND(AVG(capital_loss), 1) AS mean_loss FROM adult_ke GROUP BY sex;

-- case: round_sum_thousands
-- construct: aggregate-arithmetic
-- expect: answer
SELECT education, ROUND(SUM(capital_loss) / 1000.0, 2) AS total_k FROM adult_ke GROUP BY education;

-- case: range_max_min
-- construct: aggregate-arithmetic
-- expect: answer
SELECT sex, MAX(capital_loss) - MIN(capital_loss) AS spread FROM adult_ke GROUP BY sex;

-- case: share_filter
-- construct: aggregate-arithmetic
-- expect: answer
SELECT SUM(capital_loss) FILTER (WHERE sex = 'Female') * 100.0 / SUM(capital_loss) AS women_pct FROM adult_ke;

-- case: share_by_group
-- construct: aggregate-arithmetic
-- expect: answer
SELECT education, SUM(capital_loss) FILTER (WHERE age >= 50) * 100.0 / SUM(capital_loss) AS pct_50plus FROM adult_ke GROUP BY education;

-- case: count_share
-- construct: aggregate-arithmetic
-- expect: answer
SELECT sex, 100.0 * COUNT(*) FILTER (WHERE capital_loss > 2000) / COUNT(*) AS pct_high FROM adult_ke GROUP BY sex;

-- case: avg_difference
-- construct: aggregate-arithmetic
-- expect: answer
SELECT AVG(capital_loss) FILTER (WHERE sex = 'Male') - AVG(capital_loss) FILTER (WHERE sex = 'Female') AS gap FROM adult_ke;

-- ============================================================ statistics

-- case: median
-- construct: median
-- expect: answer
-- dialect: duckdb
SELECT sex, MEDIAN(capital_loss) AS med FROM adult_ke GROUP BY sex;

-- case: quantile_cont
-- construct: quantile
-- expect: answer
-- dialect: duckdb
SELECT education, quantile_cont(capital_loss, 0.9) AS p90 FROM adult_ke GROUP BY education;

-- case: percentile_cont
-- construct: percentile
-- expect: answer
SELECT sex, percentile_cont(0.5) WITHIN GROUP (ORDER BY capital_loss) AS med FROM adult_ke GROUP BY sex;

-- case: percentile_cont_quartile
-- construct: percentile
-- expect: answer
SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY capital_loss) AS q1, percentile_cont(0.75) WITHIN GROUP (ORDER BY capital_loss) AS q3 FROM adult_ke WHERE age > 30;

-- case: percentile_disc
-- construct: percentile
-- expect: answer
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY capital_loss) AS med FROM adult_ke;

-- case: stddev
-- construct: stddev
-- expect: answer
SELECT sex, STDDEV(capital_loss) AS sd FROM adult_ke GROUP BY sex;

-- case: stddev_samp_pop
-- construct: stddev
-- expect: answer
SELECT stddev_samp(capital_loss) AS sd_s, stddev_pop(capital_loss) AS sd_p FROM adult_ke WHERE age < 50;

-- case: var_pop
-- construct: variance
-- expect: answer
SELECT education, VAR_POP(capital_loss) AS v FROM adult_ke GROUP BY education;

-- case: var_samp
-- construct: variance
-- expect: answer
SELECT var_samp(capital_loss) AS v FROM adult_ke;

-- ============================================================ COUNT(DISTINCT)

-- case: count_distinct_quasi
-- construct: count-distinct
-- expect: answer
SELECT sex, COUNT(DISTINCT education) AS n_edu FROM adult_ke GROUP BY sex;

-- case: count_distinct_filtered
-- construct: count-distinct
-- expect: answer
SELECT COUNT(DISTINCT age) AS n_ages FROM adult_ke WHERE capital_loss > 2000;

-- case: count_distinct_sensitive
-- construct: count-distinct
-- expect: answer
SELECT education, COUNT(DISTINCT capital_loss) AS n_values FROM adult_ke GROUP BY education;

-- ============================================================ public lookup data

-- case: join_values
-- construct: public-join
-- expect: answer
SELECT v.tier, COUNT(*) AS n, SUM(a.capital_loss) AS total FROM adult_ke AS a JOIN (VALUES ('Bachelors', 'degree'), ('Masters', 'degree'), ('Doctorate', 'degree'), ('HS-grad', 'school')) AS v(education, tier) ON a.education = v.education GROUP BY v.tier;

-- case: join_values_filter
-- construct: public-join
-- expect: answer
SELECT a.sex, AVG(a.capital_loss) AS mean_loss FROM adult_ke AS a JOIN (VALUES ('Masters'), ('Doctorate')) AS v(education) ON a.education = v.education GROUP BY a.sex;

-- case: in_subquery_union
-- construct: public-subquery
-- expect: answer
SELECT sex, COUNT(*) AS n FROM adult_ke WHERE education IN (SELECT 'Bachelors' UNION SELECT 'Masters') GROUP BY sex;

-- case: in_subquery_lookup
-- construct: public-subquery
-- expect: answer
SELECT COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke WHERE education IN (SELECT education FROM edu_level WHERE degree);

-- case: join_lookup
-- construct: public-join
-- expect: answer
SELECT l.level, COUNT(*) AS n, AVG(a.capital_loss) AS mean_loss FROM adult_ke AS a JOIN edu_level AS l ON l.education = a.education GROUP BY l.level;

-- case: join_lookup_where
-- construct: public-join
-- expect: answer
SELECT a.sex, SUM(a.capital_loss) AS total FROM adult_ke AS a JOIN edu_level AS l ON l.education = a.education WHERE l.level >= 13 GROUP BY a.sex;

-- case: left_join_lookup
-- construct: public-join
-- expect: answer
SELECT l.degree, COUNT(*) AS n FROM adult_ke AS a LEFT JOIN edu_level AS l ON l.education = a.education GROUP BY l.degree;

-- case: not_in_lookup
-- construct: public-subquery
-- expect: answer
SELECT COUNT(*) AS n FROM adult_ke WHERE education NOT IN (SELECT education FROM edu_level WHERE level < 9);

-- ============================================================ ROLLUP, CUBE, GROUPING SETS

-- case: rollup
-- construct: rollup
-- expect: answer
SELECT sex, education, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke GROUP BY ROLLUP (sex, education);

-- case: rollup_grouping
-- construct: rollup
-- expect: answer
SELECT sex, GROUPING(sex) AS is_total, AVG(capital_loss) AS mean_loss FROM adult_ke GROUP BY ROLLUP (sex);

-- case: cube
-- construct: cube
-- expect: answer
SELECT sex, education, SUM(capital_loss) AS total FROM adult_ke WHERE age > 30 GROUP BY CUBE (sex, education);

-- case: grouping_sets
-- construct: grouping-sets
-- expect: answer
SELECT sex, education, COUNT(*) AS n FROM adult_ke GROUP BY GROUPING SETS ((sex), (education), ());

-- ============================================================ two versions side by side

-- case: union_versions
-- construct: union-versions
-- expect: answer
SELECT 'v1' AS version, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke_v1 UNION ALL SELECT 'v2' AS version, COUNT(*) AS n, SUM(capital_loss) AS total FROM adult_ke_v2;

-- case: union_versions_grouped
-- construct: union-versions
-- expect: answer
SELECT 'v1' AS version, sex, AVG(capital_loss) AS mean_loss FROM adult_ke_v1 GROUP BY sex UNION ALL SELECT 'v2' AS version, sex, AVG(capital_loss) AS mean_loss FROM adult_ke_v2 GROUP BY sex;

-- case: union_filters
-- construct: union-versions
-- expect: answer
SELECT 'young' AS who, COUNT(*) AS n FROM adult_ke WHERE age < 30 UNION ALL SELECT 'old' AS who, COUNT(*) AS n FROM adult_ke WHERE age >= 60;

-- ============================================================ mixed dashboard queries

-- case: dashboard_bands_having_order
-- construct: mixed
-- expect: answer
SELECT CASE WHEN age < 30 THEN '<30' WHEN age < 45 THEN '30-44' ELSE '45+' END AS band, COUNT(*) AS n, ROUND(AVG(capital_loss), 1) AS mean_loss FROM adult_ke GROUP BY 1 HAVING COUNT(*) > 5 ORDER BY 2 DESC;

-- case: notebook_cte_share
-- construct: mixed
-- expect: answer
WITH t AS (SELECT education, capital_loss FROM adult_ke WHERE lower(sex) = 'male') SELECT education, COUNT(*) FILTER (WHERE capital_loss > 1900) * 100.0 / COUNT(*) AS pct FROM t GROUP BY education ORDER BY pct DESC LIMIT 5;

-- case: report_join_rollup
-- construct: mixed
-- expect: answer
SELECT l.degree, a.sex, COUNT(*) AS n, SUM(a.capital_loss) AS total FROM adult_ke AS a JOIN edu_level AS l ON l.education = a.education GROUP BY ROLLUP (l.degree, a.sex);

-- case: report_decade_stats
-- construct: mixed
-- expect: answer
SELECT floor(age / 10) * 10 AS decade, COUNT(*) AS n, MIN(capital_loss) AS lo, MAX(capital_loss) AS hi, MAX(capital_loss) - MIN(capital_loss) AS spread FROM adult_ke WHERE coalesce(education, '') <> 'Preschool' GROUP BY 1 ORDER BY 1;

-- case: dashboard_kpis
-- construct: mixed
-- expect: answer
SELECT COUNT(*) AS people, SUM(capital_loss) AS total, ROUND(AVG(capital_loss), 1) AS mean_loss, COUNT(*) FILTER (WHERE capital_loss > 2000) AS n_high FROM adult_ke WHERE age BETWEEN 18 AND 65;

-- case: where_sensitive_or_having
-- construct: mixed
-- expect: answer
SELECT education, SUM(capital_loss) AS total FROM adult_ke WHERE capital_loss > 1700 OR sex = 'Female' GROUP BY 1 HAVING COUNT(*) >= 5 ORDER BY total DESC;

-- ============================================================ must be refused

-- case: refuse_window_sensitive
-- construct: refuse-window
-- expect: refuse
SELECT sex, capital_loss, rank() OVER (PARTITION BY sex ORDER BY capital_loss DESC) AS r FROM adult_ke;

-- case: refuse_window_over_aggregate
-- construct: refuse-window
-- expect: refuse
SELECT sex, SUM(capital_loss) AS total, SUM(SUM(capital_loss)) OVER () AS grand FROM adult_ke GROUP BY sex;

-- case: refuse_correlated
-- construct: refuse-correlated
-- expect: refuse
SELECT sex, COUNT(*) AS n FROM adult_ke AS a WHERE capital_loss > (SELECT AVG(b.capital_loss) FROM adult_ke AS b WHERE b.sex = a.sex) GROUP BY sex;

-- case: refuse_join_releases
-- construct: refuse-join-releases
-- expect: refuse
SELECT a.sex, COUNT(*) AS n FROM adult_ke_v1 AS a JOIN adult_ke_v2 AS b ON a.group_id = b.group_id GROUP BY a.sex;

-- case: refuse_join_ke_lhd
-- construct: refuse-join-releases
-- expect: refuse
SELECT COUNT(*) AS n FROM adult_ke AS a JOIN adult_lhd AS b ON a.capital_loss = b.capital_loss;

-- case: refuse_source
-- construct: refuse-source
-- expect: refuse
SELECT sex, SUM(capital_loss) AS total FROM adult_k GROUP BY sex;

-- case: refuse_source_in_subquery
-- construct: refuse-source
-- expect: refuse
SELECT COUNT(*) AS n FROM adult_ke WHERE age IN (SELECT age FROM adult_k WHERE capital_loss > 3000);

-- case: refuse_schema_sqlanon
-- construct: refuse-sqlanon
-- expect: refuse
SELECT COUNT(*) AS n FROM sqlanon.members;
