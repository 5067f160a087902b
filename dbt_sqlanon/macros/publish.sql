{#- publish_release(kind, source, family, code, arguments) -> the release summary (dict).
    Builds the private source view from the model's SQL, then calls sqlanon's release
    function for `kind` ('ke' or 'lhd'). -#}

{% macro default__publish_release(kind, source, family, code, arguments) %}
  {{ exceptions.raise_compiler_error(
      "sqlanon_release runs on DuckDB (dbt-duckdb) and PostgreSQL (dbt-postgres); "
      ~ "this target is " ~ target.type) }}
{% endmacro %}


{#- DuckDB: sqlanon's functions are Python UDFs that release on a cursor of their own,
    in a transaction of their own. That cursor sees only committed data and creates the
    family in the database's default schema `main`, so the source view is committed
    before the call and the call runs outside dbt's transaction. -#}
{% macro duckdb__publish_release(kind, source, family, code, arguments) %}
  {%- if family.schema | lower != 'main' or family.database | lower != target.database | lower -%}
    {{ exceptions.raise_compiler_error(
        "sqlanon_release on DuckDB publishes into the schema main of the profile's database "
        ~ target.database ~ "; this model would build into " ~ family.database ~ "."
        ~ family.schema ~ ". Build it in main (profile schema: main, and no custom schema "
        ~ "or database for this model)") }}
  {%- endif -%}

  {{ run_hooks(pre_hooks, inside_transaction=True) }}
  {%- call statement('sqlanon_source') -%}
    create or replace view {{ source }} as (
      {{ code }}
    )
  {%- endcall -%}
  {{ adapter.commit() }}

  {%- call statement('main', fetch_result=True, auto_begin=False) -%}
    select {{ sqlanon.release_call('sqlanon_release_' ~ kind, ':=', source, family, arguments) }} as summary
  {%- endcall -%}

  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {{ adapter.commit() }}
  {{ return(fromjson(load_result('main')['data'][0][0])) }}
{% endmacro %}


{#- PostgreSQL: sqlanon.release_<kind> is PL/Python running inside dbt's transaction, so
    the source view and the release commit together or not at all. The release lands in
    current_schema(), which SET LOCAL points at the model's schema until the commit. -#}
{% macro postgres__publish_release(kind, source, family, code, arguments) %}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}
  {%- call statement('sqlanon_source') -%}
    drop view if exists {{ source }};
    create view {{ source }} as (
      {{ code }}
    );
    set local search_path to {{ adapter.quote(family.schema) }}
  {%- endcall -%}

  {%- call statement('main', fetch_result=True) -%}
    select ({{ sqlanon.release_call('sqlanon.release_' ~ kind, '=>', source, family, arguments) }})::text as summary
  {%- endcall -%}

  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {{ adapter.commit() }}
  {{ return(fromjson(load_result('main')['data'][0][0])) }}
{% endmacro %}
