-- Analysts build on the published family like on any model: ref('adult_ke') is the
-- view of the newest version (never the private source).
select education, count(*) as people, min(age) as youngest, max(age) as oldest
from {{ ref('adult_ke') }}
group by education
