{#-
  materialized='sqlanon_release': each `dbt run` publishes the next anonymized version
  of the release family named after the model.

      {{ config(materialized='sqlanon_release', model='ke', key='id',
                sensitive='capital_loss', quasi=['age', 'sex', 'education'], k=5, e=20) }}
      select * from {{ ref('stg_adult') }}

  The model's SQL becomes the private source, a view `<model>__source` beside it; sqlanon
  then writes `<model>_v<N>` and points the view `<model>` at it. sqlanon creates those
  relations itself, so this materialization never creates or replaces `<model>`: it only
  tells dbt's relation cache that the view is there. A release that is unsafe or invalid
  fails the model with sqlanon's message and publishes nothing.
-#}

{% materialization sqlanon_release, default %}
  {%- set kind = config.get('model', 'ke') -%}
  {%- set arguments = sqlanon.release_arguments(kind) -%}
  {%- set family = this.incorporate(type='view') -%}
  {%- set source = this.incorporate(path={'identifier': this.identifier ~ '__source'}, type='view') -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {%- set summary = adapter.dispatch('publish_release', 'sqlanon')(kind, source, family, compiled_code, arguments) -%}
  {{ log("sqlanon: " ~ family.identifier ~ " version " ~ summary.get('version') ~ " ("
         ~ summary.get('table') ~ "): " ~ summary.get('rows_published') ~ " rows published, "
         ~ summary.get('held_back', 0) ~ " held back, " ~ summary.get('suppressed', 0)
         ~ " suppressed", info=True) }}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [family]}) }}
{% endmaterialization %}


{#- The named arguments each model takes, in the order of sqlanon's SQL functions. -#}
{% macro release_parameters() %}
  {{ return({
      'ke': ['key', 'sensitive', 'quasi', 'k', 'e', 'policy', 'seed', 'domain'],
      'lhd': ['key', 'sensitive', 'quasi', 'l', 'algorithm', 'max_suppression', 'seed',
              'domain'],
  }) }}
{% endmacro %}


{#- (name, value) for every parameter the model's config sets; the others keep
    sqlanon's defaults, and sqlanon itself checks the values. -#}
{% macro release_arguments(kind) %}
  {%- set parameters = sqlanon.release_parameters() -%}
  {%- if kind not in parameters -%}
    {{ exceptions.raise_compiler_error(
        "sqlanon_release: model must be one of " ~ (parameters.keys() | list | join(', '))
        ~ "; got " ~ kind) }}
  {%- endif -%}
  {%- set arguments = [] -%}
  {%- for name in parameters[kind] -%}
    {%- if config.get(name) is not none -%}
      {%- do arguments.append((name, config.get(name))) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(arguments) }}
{% endmacro %}


{#- `function('schema.<model>__source', '<model>', name <operator> value, ...)` -#}
{% macro release_call(function, operator, source, family, arguments) -%}
  {{ function }}({{ sqlanon.literal(source.schema ~ '.' ~ source.identifier) }}, {{ sqlanon.literal(family.identifier) }}
  {%- for name, value in arguments -%}
    , {{ name }} {{ operator }} {{ sqlanon.literal(value) }}
  {%- endfor -%})
{%- endmacro %}
