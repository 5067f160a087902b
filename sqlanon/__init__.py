"""sqlanon: publish a growing private table again and again without leaking it.

import duckdb, sqlanon
con = duckdb.connect("clinic.duckdb")
sqlanon.install(con)
sqlanon.release_ke(con, "adult", "adult_ke", key="id", sensitive="capital_loss",
                   quasi=["age", "sex"], k=5, e=20)
sqlanon.load_hierarchies(con, "adult", "hierarchies/")  # adult_hierarchy_<attr>.csv
sqlanon.release_lhd(con, "adult", "adult_lhd", key="id", quasi=["age", "sex"],
                    sensitive=["capital_loss"], l=3)
"""

from sqlanon.api import (
    attach_export,
    audit,
    capture_changes,
    erase,
    export,
    hierarchy_widths,
    install,
    interval,
    load_hierarchies,
    preview,
    release_ke,
    release_lhd,
    retire,
    rewrite,
    set_limit,
    stop_capture,
)
from sqlanon.errors import (
    BlockedByReadersError,
    ConcurrentReleaseError,
    ConfigError,
    ExportError,
    InfeasibleError,
    InternalError,
    QueryLimitError,
    SqlanonError,
    SuppressionLimitError,
    UnsafeReleaseError,
    UnsupportedQueryError,
)
from sqlanon.version import __version__ as __version__

__all__ = [
    "BlockedByReadersError",
    "ConcurrentReleaseError",
    "ConfigError",
    "ExportError",
    "InfeasibleError",
    "SuppressionLimitError",
    "InternalError",
    "QueryLimitError",
    "SqlanonError",
    "UnsafeReleaseError",
    "UnsupportedQueryError",
    "attach_export",
    "audit",
    "capture_changes",
    "erase",
    "export",
    "hierarchy_widths",
    "install",
    "interval",
    "load_hierarchies",
    "preview",
    "release_ke",
    "release_lhd",
    "retire",
    "rewrite",
    "set_limit",
    "stop_capture",
]
