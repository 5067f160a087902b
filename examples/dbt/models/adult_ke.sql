-- Each `dbt run` publishes the next (k,e)-anonymous version: adult_ke_v1, adult_ke_v2, ...
-- and the view adult_ke of the newest one. Records that cannot be placed safely yet
-- are held back and offered again next run.
{{ config(materialized='sqlanon_release', model='ke', key='id', sensitive='capital_loss',
          quasi=['age', 'sex', 'education'], k=5, e=20) }}

select * from {{ ref('stg_adult') }}
