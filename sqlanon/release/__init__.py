"""A release in three stages: read the source and the state of earlier releases,
plan (the pure models), apply (SQL per dialect). ``release.ke`` and ``release.lhd``
publish a version of each model; ``source``, ``state``, ``plan`` and ``bounds`` are
what they share; ``ke_engine`` runs (k,e) releases on counts, applied in the engine.
Import the modules themselves: this package re-exports nothing."""
