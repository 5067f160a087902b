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
  fails the model with sqlanon's message and publishes nothing. A run with nothing new
  since the last version publishes nothing (sqlanon returns that version's summary,
  marked unchanged), so re-running or retrying a job never piles up versions; the view
  `<model>` keeps showing the latest one. `--full-refresh` fails the model before
  anything is written: published versions cannot be re-done.

  The release's `dataset` (where an lHD model's hierarchies are looked up, and what a
  new domain is named after) is the model's source, not the view `<model>__source`:
  the table at the root of its single chain of `ref`/`source` (for
  `select * from {{ ref('stg_adult') }}` over `{{ source('clinic', 'adult') }}`:
  `adult`). Set `dataset='...'` when the model reads several relations.
-#}

{% materialization sqlanon_release, default %}
  {%- set kind = config.get('model', 'ke') -%}
  {%- set arguments = sqlanon.release_arguments(kind) -%}
  {%- if config.get('dataset') is none -%}
    {%- set root = sqlanon.root_dataset(model) -%}
    {%- if root is not none -%}
      {%- do arguments.append(('dataset', root)) -%}
    {%- endif -%}
  {%- endif -%}
  {%- set family = this.incorporate(type='view') -%}
  {%- set source = this.incorporate(path={'identifier': this.identifier ~ '__source'}, type='view') -%}
  {%- if should_full_refresh() -%}
    {{ exceptions.raise_compiler_error(sqlanon.full_refresh_refusal(family.identifier)) }}
  {%- endif -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {%- set summary = adapter.dispatch('publish_release', 'sqlanon')(kind, source, family, compiled_code, arguments) -%}
  {{ log(sqlanon.release_message(family.identifier, summary), info=True) }}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [family]}) }}
{% endmaterialization %}


{#- Why --full-refresh fails a release model, and what to do instead. -#}
{% macro full_refresh_refusal(family) %}
  {{ return(
      "sqlanon_release: --full-refresh cannot re-do the releases of " ~ family ~ ": "
      ~ "published versions are permanent (analysts may hold copies, and every later "
      ~ "release of its domain composes with them), so nothing was written. Run without "
      ~ "--full-refresh: the next run publishes what changed since the last version, or "
      ~ "nothing if nothing did. For other parameters, release a new family (another model) "
      ~ "of the same source. Only if no version of " ~ family ~ " was ever shared may you "
      ~ "start over: drop " ~ family ~ ", " ~ family ~ "_v<N>, sqlanon." ~ family
      ~ "_v<N>_bounds and its rows in sqlanon.releases, sqlanon.members and sqlanon.cells, "
      ~ "or release into a new domain (config domain=...). To let project-wide "
      ~ "--full-refresh runs build this model as usual, set full_refresh=false on it.") }}
{% endmacro %}


{#- One log line: what a run published, or that it had nothing new to publish. -#}
{% macro release_message(family, summary) %}
  {%- if summary.get('unchanged') -%}
    {{ return("sqlanon: " ~ family ~ ": no change since version " ~ summary.get('version')
              ~ ": nothing published") }}
  {%- endif -%}
  {{ return("sqlanon: " ~ family ~ " version " ~ summary.get('version') ~ " ("
            ~ summary.get('table') ~ "): " ~ summary.get('rows_published') ~ " rows published, "
            ~ summary.get('held_back', 0) ~ " held back, " ~ summary.get('suppressed', 0)
            ~ " suppressed; " ~ summary.get('inserted', 0) ~ " inserted, "
            ~ summary.get('deleted', 0) ~ " deleted, " ~ summary.get('quasi_changed', 0)
            ~ " quasi changed, " ~ summary.get('value_changed', 0) ~ " value changed, "
            ~ summary.get('ghosts', 0) ~ " ghosts; " ~ summary.get('chain_held', 0)
            ~ " of those left out by the chain rule") }}
{% endmacro %}


{#- The named arguments each model takes, in the order of sqlanon's SQL functions. -#}
{% macro release_parameters() %}
  {{ return({
      'ke': ['key', 'sensitive', 'quasi', 'k', 'e', 'policy', 'domain', 'dataset'],
      'lhd': ['key', 'sensitive', 'quasi', 'l', 'algorithm', 'max_suppression', 'domain',
              'recoding', 'dataset', 'policy'],
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


{#- The identifier of the relation at the root of `node`'s chain of single parents
    (models, seeds, snapshots, sources): the table the model is a view of. None when a
    node on the way reads several relations, or none. -#}
{% macro root_dataset(node) %}
  {%- set current = namespace(node=node, name=none) -%}
  {%- for _ in range(50) -%}
    {%- set parents = current.node.get('depends_on', {}).get('nodes', []) | unique | list -%}
    {%- if current.name is none or parents | length == 1 -%}
      {%- if parents | length != 1 -%}
        {{ return(none) }}
      {%- endif -%}
      {%- set parent = graph.nodes.get(parents[0]) or graph.sources.get(parents[0]) -%}
      {%- if parent is none -%}
        {{ return(none) }}
      {%- endif -%}
      {%- set current.node = parent -%}
      {%- set current.name = parent.get('identifier') or parent.get('alias') or parent.get('name') -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(current.name) }}
{% endmacro %}


{#- `function('schema.<model>__source', '<model>', name <operator> value, ...)` -#}
{% macro release_call(function, operator, source, family, arguments) -%}
  {{ function }}({{ sqlanon.literal(source.schema ~ '.' ~ source.identifier) }}, {{ sqlanon.literal(family.identifier) }}
  {%- for name, value in arguments -%}
    , {{ name }} {{ operator }} {{ sqlanon.literal(value) }}
  {%- endfor -%})
{%- endmacro %}
