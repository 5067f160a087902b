{#- Simulates arrivals: appends the next `rows` records of the bundled Adult rows to the
    source table clinic.adult, creating it on first use (DuckDB).
        dbt run-operation append_adult --args '{rows: 714}'   # first half
        dbt run-operation append_adult --args '{rows: 100}'   # then more, any time -#}
{% macro append_adult(rows) %}
  {%- set adult = source('clinic', 'adult') -%}
  {%- set csv = "'" ~ (var('adult_csv') | replace("'", "''")) ~ "'" -%}
  {%- call statement('append_adult') -%}
    create table if not exists {{ adult }} as
      select * from read_csv({{ csv }}) limit 0;
    insert into {{ adult }} by name
      select * from read_csv({{ csv }})
      where id not in (select id from {{ adult }})
      limit {{ rows | int }};
  {%- endcall -%}
  {% do adapter.commit() %}
  {%- set count = run_query("select count(*) from " ~ adult).columns[0].values()[0] -%}
  {{ log(adult ~ " now has " ~ count ~ " rows", info=True) }}
{% endmacro %}
