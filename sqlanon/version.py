"""sqlanon's version (the PostgreSQL installer names its directories after it)."""

__version__ = "0.1.0"
