"""sqlanon: publish a growing private table again and again without leaking it.

    import duckdb, sqlanon
    con = duckdb.connect("clinic.duckdb")
    sqlanon.install(con)
    sqlanon.release_ke(con, "adult", "adult_ke", key="id", sensitive="capital_loss",
                       quasi=["age", "sex"], k=5, e=20)
"""

from sqlanon.api import audit, release_ke
from sqlanon.backends.duckdb import install
from sqlanon.errors import (
    ConcurrentReleaseError,
    ConfigError,
    InfeasibleError,
    SqlanonError,
    UnsafeReleaseError,
    UnsupportedQueryError,
)

__version__ = "0.1.0"

__all__ = [
    "ConcurrentReleaseError",
    "ConfigError",
    "InfeasibleError",
    "SqlanonError",
    "UnsafeReleaseError",
    "UnsupportedQueryError",
    "audit",
    "install",
    "release_ke",
]
