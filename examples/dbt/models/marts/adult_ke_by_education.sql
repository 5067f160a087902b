-- Analysts build on the published family like on any model: ref('adult_ke') is the
-- view of the newest version (never the private source). Once records were deleted
-- from the source, a version also shows their ghosts (NULL quasi columns, ghost = true,
-- README "Changing tables"): they are not people to count here.
{%- set columns = adapter.get_columns_in_relation(ref('adult_ke')) | map(attribute='name') | map('lower') | list %}
select education, count(*) as people, min(age) as youngest, max(age) as oldest
from {{ ref('adult_ke') }}
{%- if 'ghost' in columns %}
where not ghost
{%- endif %}
group by education
