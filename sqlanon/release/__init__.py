"""A release: read -> plan -> write, one skeleton (``pipeline``) for both models and
both paths. ``ke_release`` and ``lhd_release`` check a call and hand the pipeline a job
(``ke_job``, ``lhd_job``: the model's parameters, planner and catalog row); the engine
path plans on counts read in SQL and writes in SQL (``engine_path``, with each model's
``ke_engine`` / ``lhd_engine``), the row path reads rows into numpy (``row_path``,
``ke_rows``, ``lhd_rows``); ``domain_scope``, ``plan`` (the chain rule) and ``publish``
(catalog row and view) are what they share. Import the modules themselves: this package
re-exports nothing."""
