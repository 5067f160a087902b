"""Every error sqlanon raises on purpose derives from :class:`SqlanonError`.

Messages say what was wrong and what to do, e.g.
``k=3 needs 3 distinct values of "salary"; the table has 2``.
"""


class SqlanonError(Exception):
    """Root of all sqlanon errors."""


class ConfigError(SqlanonError):
    """Bad arguments: unknown names, impossible parameters, malformed hierarchies."""


class InfeasibleError(SqlanonError):
    """The data cannot satisfy the privacy model with these parameters."""


class UnsafeReleaseError(SqlanonError):
    """Publishing would expose records (deleted or changed rows, a broken cell)."""


class ConcurrentReleaseError(SqlanonError):
    """Another release of the same family is running; retry when it has finished."""


class UnsupportedQueryError(SqlanonError):
    """The interval rewriter cannot answer this query soundly."""


class QueryLimitError(UnsupportedQueryError):
    """The query is longer or nested deeper than the data owner's limits allow
    (``sqlanon.set_limit``)."""


class SerializationError(ConcurrentReleaseError):
    """A REPEATABLE READ or SERIALIZABLE transaction cannot see another release that
    committed after its snapshot; retry the transaction (PostgreSQL SQLSTATE 40001)."""


class UndefinedTableError(ConfigError):
    """The named source table does not exist (or the caller cannot see it)."""


class UndefinedColumnError(ConfigError):
    """The named column is not in the source table."""


class AmbiguousNameError(ConfigError):
    """An unquoted name matches several tables or columns differing only in case."""
