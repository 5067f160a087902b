"""Spark backend: a :class:`Session` over a ``pyspark.sql.SparkSession``.

Spark SQL has no transactions, no temporary tables and no ``information_schema``;
this module gives the release machinery what it needs of them:

- **Parameters.** SQL keeps sqlanon's ``$1, $2`` placeholders; they become Spark's
  named parameter markers (``:p1``) bound through ``spark.sql(sql, args=...)``
  (Spark >= 3.4), so values never enter the text.
- **Temporary tables.** ``CREATE TEMP TABLE name AS query`` (the common SQL's only
  form) is materialized as a parquet table in database ``sqlanon_work`` behind a
  temporary view ``name``: a Spark view is lazy, and the release must read the source
  and its state once, not again in every later statement. Its query may read the
  table it replaces (the Spark form of an UPDATE, ``sqlanon/spark/sql/ke_engine_*.sql``), and
  ``ALTER TABLE _sqlanon_x ADD COLUMN c T DEFAULT v`` makes it anew with the column;
  ``INSERT INTO _sqlanon_x`` goes to its parquet table. :meth:`load_temp` makes a
  temporary view over a small local DataFrame (plans and ids: aggregates only).
- **Commit point.** Catalog tables (database ``sqlanon``) are append-only parquet
  tables (Spark takes no UPDATE or DELETE on them). Before its
  first INSERT into a catalog table a writing transaction lists that table's data
  files; it notes them, and every table and view it creates or replaces, in
  ``sqlanon.pending`` before the write; the catalog row in ``sqlanon.releases`` is
  written last. On an exception everything else is undone (the data files the catalog
  tables gained are deleted, created tables dropped, replaced views put back). A
  driver that died mid-release is cleaned up by the next writing transaction from its
  notes: unless ``sqlanon.releases`` gained a file, what the dead one wrote is removed.
  (Its temporary tables in ``sqlanon_work`` stay as unused files.) Rows are replaced
  (ghosts) by ``INSERT OVERWRITE sqlanon.<table> SELECT ...`` (:meth:`_overwrite`):
  the old files move to a backup folder, noted first, and come back on an undo.
- **Locks.** Writing transactions of one Python process run one at a time (a process
  lock: the undo deletes files, so two must not interleave). Nothing serializes two
  driver processes: release a domain from one driver at a time.
- **Catalog listing.** Tables and columns come from ``spark.catalog``
  (:meth:`SparkSqlSession.find_tables`, :meth:`SparkSqlSession.table_columns`).

``pyspark`` is imported only when a SparkSession is used (``import sqlanon`` never
needs it).
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import numpy as np

from sqlanon.errors import ConfigError
from sqlanon.spark.undo import CATALOG_TABLES, IDENT, Transaction, appended, recover

#: Where temporary tables are materialized (parquet tables behind temporary views).
WORK_DATABASE = "sqlanon_work"

_TEMP_TABLE = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?TEMP(?:ORARY)?\s+TABLE\s+`?([A-Za-z_][A-Za-z0-9_]*)`?\s+AS\s+(.*)$",
    re.IGNORECASE | re.DOTALL,
)
_DROP_TABLE = re.compile(
    r"^\s*DROP\s+TABLE\s+(IF\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*$", re.IGNORECASE
)
_ADD_COLUMN = re.compile(
    r"^\s*ALTER\s+TABLE\s+(_sqlanon_[a-z_]+)\s+ADD\s+COLUMN\s+([a-z_]+)\s+([A-Za-z]+)"
    r"\s+DEFAULT\s+('[^'\\]*'|-?[0-9]+|true|false)\s*$",
    re.IGNORECASE,
)
_CREATES = re.compile(
    rf"^\s*CREATE\s+(OR\s+REPLACE\s+)?(TABLE|VIEW)\s+(IF\s+NOT\s+EXISTS\s+)?"
    rf"({IDENT}(?:\.{IDENT})?)",
    re.IGNORECASE,
)
_OVERWRITE = re.compile(
    r"^\s*INSERT\s+OVERWRITE\s+sqlanon\.([a-z_]+)\s+(SELECT\b.*)$", re.IGNORECASE | re.DOTALL
)
_INSERT_TEMP = re.compile(
    r"^\s*INSERT\s+INTO\s+(_sqlanon_[a-z_]+)\s+(.*)$", re.IGNORECASE | re.DOTALL
)
_INSERTS = re.compile(
    r"^\s*INSERT\s+INTO\s+(?:TABLE\s+)?`?sqlanon`?\.`?([A-Za-z0-9_]+)`?", re.IGNORECASE
)
_SPARK_TYPES = {
    "VARCHAR": "STRING",
    "DOUBLE PRECISION": "DOUBLE",
    "TEXT": "STRING",
    "UBIGINT": "DECIMAL(20, 0)",
}

#: One writing transaction at a time in this process (see the module's docstring).
_WRITER = threading.RLock()


def bind(sql: str, params: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """``$n`` placeholders outside literals, quoted names and comments -> ``:pn``.

    >>> bind("SELECT '$1', $1 AS `$2`", [5])
    ("SELECT '$1', :p1 AS `$2`", {'p1': 5})
    """
    out: list[str] = []
    i, n = 0, len(sql)
    used: set[int] = set()
    while i < n:
        ch = sql[i]
        if ch in "'`\"":
            end = i + 1
            while end < n:
                if sql[end] == "\\" and ch != "`":
                    end += 2
                    continue
                if sql[end] == ch:
                    if end + 1 < n and sql[end + 1] == ch:  # a doubled quote
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[i : end + 1])
            i = end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end])
            i = end
        elif ch == "$" and i + 1 < n and sql[i + 1].isdigit():
            end = i + 1
            while end < n and sql[end].isdigit():
                end += 1
            number = int(sql[i + 1 : end])
            used.add(number)
            out.append(f":p{number}")
            i = end
        else:
            out.append(ch)
            i += 1
    if used and max(used) > len(params):
        raise ConfigError(f"SQL uses ${max(used)} but {len(params)} parameters were given")
    return "".join(out), {f"p{k}": _python(params[k - 1]) for k in sorted(used)}


def _python(value: Any) -> Any:
    """A parameter as py4j can pass it (numpy scalars become Python numbers)."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def spark_type(name: str) -> str:
    """A SQL type as sqlanon's common code writes it, in Spark's spelling."""
    return _SPARK_TYPES.get(name.upper(), name)


class SparkSqlSession:
    """A :class:`sqlanon.session.Session` over one ``SparkSession``."""

    dialect = "spark"
    schema: str | None = None

    def __init__(self, spark: Any) -> None:
        if type(spark).__module__.startswith("pyspark.sql.connect"):
            raise ConfigError(
                "a Spark Connect session cannot run sqlanon: its undo deletes catalog data "
                "files through the driver's Hadoop FileSystem; use a classic SparkSession"
            )
        self._spark = spark
        self._temp: dict[str, str] = {}  # temporary table -> its parquet table
        self._tx: Transaction | None = None
        self._depth = 0

    # -- statements ---------------------------------------------------------------

    def _run(self, sql: str, params: Sequence[Any] = ()) -> Any:
        text = "\n".join(
            line for line in sql.splitlines() if not line.strip().startswith("--")
        ).strip()
        temp = _TEMP_TABLE.match(text)
        if temp:
            return self._create_temp(temp.group(1), temp.group(2), params)
        alter = _ADD_COLUMN.match(text)
        if alter and alter.group(1) in self._temp:
            name, column, kind, default = alter.groups()
            self._create_temp(
                name,
                f"SELECT *, CAST({default} AS {spark_type(kind)}) AS {column} FROM {name}",  # noqa: S608
                (),
            )
            return None
        drop = _DROP_TABLE.match(text)
        if drop and drop.group(2) in self._temp:
            self._drop_temp(drop.group(2))
            return None
        overwrite = _OVERWRITE.match(text)
        if overwrite:
            return self._overwrite(overwrite.group(1), overwrite.group(2), params)
        into_temp = _INSERT_TEMP.match(text)
        if into_temp and into_temp.group(1) in self._temp:
            text = f"INSERT INTO {self._temp[into_temp.group(1)]} {into_temp.group(2)}"
        inserts = _INSERTS.match(text)
        if inserts and self._tx is not None and appended(inserts.group(1)):
            self._tx.writing(self, inserts.group(1))
        created = _CREATES.match(text)
        if created and self._tx is not None:
            how = (created.group(1) or "") + (created.group(3) or "")
            self._tx.creating(self, created.group(4), how, created.group(2))
        bound, args = bind(text, params)
        return self._spark.sql(bound, args=args or None)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        df = self._run(sql, params)
        if df is not None:
            df.collect()  # commands run when called; a query runs here

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        df = self._run(sql, params)
        return [tuple(_plain(v) for v in row) for row in df.collect()]

    def query_dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        df = self._run(sql, params)
        names = df.columns
        return [dict(zip(names, (_plain(v) for v in row), strict=True)) for row in df.collect()]

    def query_arrays(self, sql: str, params: Sequence[Any] = ()) -> dict[str, np.ndarray]:
        """Columns of a small result (counts, plans, ids: never a table's rows), as
        DuckDB's session returns them: numbers with a NULL as float64 with NaN, other
        columns with a NULL as object arrays with None."""
        df = self._run(sql, params)
        rows = df.collect()
        out: dict[str, np.ndarray] = {}
        for i, field in enumerate(df.schema.fields):
            values = [_plain(row[i]) for row in rows]
            kind = field.dataType.typeName()
            if kind in ("byte", "short", "integer", "long"):
                out[field.name] = (
                    np.array(values, dtype=np.int64)
                    if None not in values
                    else np.array([np.nan if v is None else v for v in values], dtype=np.float64)
                )
            elif kind in ("float", "double", "decimal"):
                out[field.name] = np.array(
                    [np.nan if v is None else v for v in values], dtype=np.float64
                )
            elif kind == "boolean" and None not in values:
                out[field.name] = np.array(values, dtype=bool)
            else:
                out[field.name] = np.array(values, dtype=object)
        return out

    def load_temp(self, name: str, columns: dict[str, np.ndarray], types: dict[str, str]) -> None:
        """Temporary view ``name`` over a small local DataFrame (plans, ids), marked
        for broadcast joins."""
        self._drop_temp(name)
        q = self.quote_ident
        kinds = {c: spark_type(types[c]) for c in columns}
        # text for a typed column (kept values): loaded as text, cast by Spark
        as_text = {
            c
            for c, v in columns.items()
            if np.asarray(v).dtype.kind in "OU"
            and kinds[c].upper() != "STRING"
            and any(isinstance(x, str) for x in np.asarray(v).tolist())
        }
        schema = ", ".join(f"{q(c)} {'STRING' if c in as_text else kinds[c]}" for c in columns)
        data = [_column(np.asarray(v), kinds[c]) for c, v in columns.items()]
        rows = list(zip(*data, strict=True)) if data else []
        frame = self._spark.createDataFrame(rows, schema=schema)
        if as_text:
            frame = frame.selectExpr(
                *(
                    f"CAST({q(c)} AS {kinds[c]}) AS {q(c)}" if c in as_text else q(c)
                    for c in columns
                )
            )
        # A local DataFrame has no size estimate: without the hint Spark sorts and
        # shuffles the source's rows to join them with a plan of a few thousand rows,
        # or broadcasts the source to it (at 10^7 rows, out of memory).
        frame.hint("broadcast").createOrReplaceTempView(name)

    def _create_temp(self, name: str, query: str, params: Sequence[Any]) -> None:
        """``CREATE TEMP TABLE name AS query``; the query may read ``name`` itself (the
        Spark form of an UPDATE or ALTER of a temporary table: sqlanon/spark/sql/*.sql)."""
        # a directory named _... is hidden from Spark's file listing: no leading _
        table = f"{WORK_DATABASE}.t{uuid.uuid4().hex}{name}"
        bound, args = bind(query, params)
        self._spark.sql(
            f"CREATE TABLE {table} USING parquet AS {bound}",  # noqa: S608 - sqlanon's names
            args=args or None,
        ).collect()
        self._drop_temp(name)
        self._temp[name] = table
        # a view by name (not over a DataFrame): rows inserted later show in it
        self._spark.sql(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM {table}").collect()  # noqa: S608

    def _drop_temp(self, name: str) -> None:
        self._spark.catalog.dropTempView(name)
        table = self._temp.pop(name, None)
        if table is not None:
            self._spark.sql(f"DROP TABLE IF EXISTS {table}").collect()

    def _overwrite(self, table: str, query: str, params: Sequence[Any]) -> None:
        """``INSERT OVERWRITE sqlanon.<table> SELECT ...`` (the Spark form of an UPDATE
        or DELETE of catalog rows, ``sqlanon/spark/sql/live_*.sql``): the query's rows go to a
        work table, the table's data files move to a backup folder (noted first), and the
        rows are inserted back; an undo deletes them and moves the backup back."""
        if self._tx is None or table not in CATALOG_TABLES:
            raise ConfigError(f"INSERT OVERWRITE sqlanon.{table} runs only inside a transaction")
        self._tx.writing(self, table)
        self._create_temp("_sqlanon_overwrite", query, params)
        self._tx.move_away(self, table)
        self._spark.sql(
            f"INSERT INTO sqlanon.`{table}` SELECT * FROM _sqlanon_overwrite"  # noqa: S608
        ).collect()
        self._drop_temp("_sqlanon_overwrite")

    def quote_ident(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    # -- catalog listing (Spark has no information_schema) -----------------------

    def current_schema(self) -> str:
        return str(self._spark.catalog.currentDatabase())

    def find_tables(self, schema: str, table: str) -> list[tuple[str, str]]:
        """Tables and views whose database and name equal ``schema`` and ``table``
        ignoring case."""
        found = []
        for db in self._spark.catalog.listDatabases():
            if db.name.lower() != schema.lower():
                continue
            for t in self._spark.catalog.listTables(db.name):
                if not t.isTemporary and t.name.lower() == table.lower():
                    found.append((db.name, t.name))
        return sorted(found)

    def table_columns(self, schema: str, table: str) -> list[tuple[str, str]]:
        """``(column, data type)`` of one table, in order."""
        name = f"{self.quote_ident(schema)}.{self.quote_ident(table)}"
        return [(c.name, str(c.dataType)) for c in self._spark.catalog.listColumns(name)]

    # -- transactions --------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing as far as Spark allows: the catalog row is the commit point,
        everything written before it is undone on an exception (module docstring)."""
        with _WRITER:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            recover(self)
            self._tx = Transaction.begin(self)
            self._depth = 1
            try:
                yield
            except BaseException:
                self._tx.undo(self)
                raise
            else:
                self._tx.end(self)
            finally:
                self._tx = None
                self._depth = 0
                for name in list(self._temp):
                    self._drop_temp(name)

    def lock_family(self, family: str) -> None:
        """A writing transaction already holds this process's lock (best effort: two
        driver processes are not serialized; release a domain from one at a time)."""

    def close(self) -> None:
        for name in list(self._temp):
            self._drop_temp(name)

    # -- for the transaction -------------------------------------------------------

    @property
    def spark(self) -> Any:
        return self._spark


_INTEGRAL = re.compile(r"^(tinyint|smallint|int|integer|bigint|long|short|byte)$", re.IGNORECASE)


def _column(values: np.ndarray, kind: str) -> list[Any]:
    """A numpy column as Python values Spark accepts for a column of type ``kind``
    (counts arrive as float64; integral columns take ints, NaN as NULL)."""
    if _INTEGRAL.match(kind) and values.dtype.kind == "f":
        return [None if np.isnan(v) else int(v) for v in values]
    if kind.upper() in ("DOUBLE", "FLOAT") and values.dtype.kind in "iu":
        return [float(v) for v in values]
    return [_plain(v) for v in values.tolist()]


def _plain(value: Any) -> Any:
    """Spark's DECIMAL arrives as ``Decimal``; sqlanon's code reads numbers as float."""
    if isinstance(value, Decimal):
        return float(value)
    return value
