{#- A config value as an SQL literal: NULL, true/false, a number, a quoted string, or a
    list of those (DuckDB `[...]`, PostgreSQL `ARRAY[...]`). -#}
{% macro literal(value) -%}
  {{ adapter.dispatch('literal', 'sqlanon')(value) }}
{%- endmacro %}

{% macro default__literal(value) -%}
  {%- if value is none -%}
    NULL
  {%- elif value is boolean -%}
    {{ 'true' if value else 'false' }}
  {%- elif value is number -%}
    {{ value }}
  {%- elif value is string -%}
    '{{ value | replace("'", "''") }}'
  {%- else -%}
    {{ exceptions.raise_compiler_error(
        "sqlanon_release: cannot pass " ~ value ~ " to sqlanon; "
        ~ "give a string, a number or a list of column names") }}
  {%- endif -%}
{%- endmacro %}

{% macro duckdb__literal(value) -%}
  {%- if value is sequence and value is not string and value is not mapping -%}
    [{% for item in value %}{{ sqlanon.default__literal(item) }}{{ ', ' if not loop.last }}{% endfor %}]
  {%- else -%}
    {{ sqlanon.default__literal(value) }}
  {%- endif -%}
{%- endmacro %}

{% macro postgres__literal(value) -%}
  {%- if value is sequence and value is not string and value is not mapping -%}
    ARRAY[{% for item in value %}{{ sqlanon.default__literal(item) }}{{ ', ' if not loop.last }}{% endfor %}]::text[]
  {%- else -%}
    {{ sqlanon.default__literal(value) }}
  {%- endif -%}
{%- endmacro %}
