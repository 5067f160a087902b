"""Spark: the session over a SparkSession, undo of a failed writing transaction, and
``install``/``attach``."""
