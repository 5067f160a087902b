"""Undoing a writing transaction on Spark: what it noted in ``sqlanon.pending`` before
each write, and the cleanup of a driver that died mid-release (see
:mod:`sqlanon.spark.session`)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

from sqlanon.errors import ConfigError

#: One quoted or plain Spark identifier.
IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)"


class HasSpark(Protocol):
    """What undoing needs of a session: its SparkSession."""

    @property
    def spark(self) -> Any: ...


class Transaction:
    """What one writing transaction must be able to undo (module docstring). Each
    catalog table's data files are listed (and noted) just before its first write, so
    a call refused before it writes lists nothing."""

    def __init__(self, txid: str, noted: list[str] | None) -> None:
        self.txid = txid
        self.files: dict[str, list[str]] = {}  # catalog table -> its files before the writes
        self.created: list[str] = []  # tables and views created, qualified
        self.replaced: dict[str, str] = {}  # view -> its definition before
        self.noted = noted  # sqlanon.pending's files before the notes (None: no table yet)
        self.moved: dict[str, str] = {}  # catalog table -> folder its files moved to

    @classmethod
    def begin(cls, session: HasSpark) -> Transaction:
        spark = session.spark
        return cls(uuid.uuid4().hex, _pending_files(spark) if _has_pending(spark) else None)

    def note(self, spark: Any, kind: str, detail: str) -> None:
        """Write a note to ``sqlanon.pending`` before the write it announces."""
        if self.noted is not None:
            spark.sql(
                "INSERT INTO sqlanon.pending (txid, kind, detail) VALUES (:t, :k, :d)",
                args={"t": self.txid, "k": kind, "d": detail},
            ).collect()

    def writing(self, session: HasSpark, table: str) -> None:
        """Before an INSERT INTO catalog table ``table``: its files, the first time."""
        name = f"sqlanon.`{table}`"
        if name not in self.files:
            spark = session.spark
            self.files[name] = sorted(spark.table(name).inputFiles())
            self.note(spark, "files", json.dumps([name, self.files[name]]))

    def move_away(self, session: HasSpark, table: str) -> None:
        """Move the data files of catalog table ``table`` to a backup folder beside the
        catalog's tables (noted first), before its rows are written anew."""
        spark = session.spark
        name = f"sqlanon.`{table}`"
        folder = self.moved.get(name)
        if folder is None:
            folder = f"{location(spark, 'sqlanon')}/_backup_{self.txid}/{table}"
            self.note(spark, "moved", json.dumps([name, folder]))
            self.moved[name] = folder
        spark.sql(f"REFRESH TABLE {name}").collect()
        _move_files(spark, spark.table(name).inputFiles(), folder)
        spark.sql(f"REFRESH TABLE {name}").collect()

    def creating(self, session: HasSpark, name: str, how: str, kind: str) -> None:
        """Before ``CREATE [OR REPLACE] TABLE|VIEW [IF NOT EXISTS] name``: note what an
        undo must drop or restore. A creation IF NOT EXISTS (the catalog's own tables)
        is not noted for a dead driver: running it again reuses the table."""
        spark = session.spark
        qualified = _qualified(spark, name)
        exists = bool(spark.catalog.tableExists(qualified))
        if "REPLACE" in how.upper() and kind.upper() == "VIEW" and exists:
            before = str(spark.sql(f"SHOW CREATE TABLE {qualified}").collect()[0][0])
            self.replaced.setdefault(qualified, before)
            self.note(spark, "replaced", json.dumps([qualified, before]))
        elif not exists:
            self.created.append(qualified)
            if "NOT EXISTS" not in how.upper():
                self.note(spark, "created", qualified)

    def undo(self, session: HasSpark) -> None:
        _undo(session.spark, self.files, self.created, self.replaced, self.moved)
        self.end(session)

    def end(self, session: HasSpark) -> None:
        """Drop this transaction's notes (the files sqlanon.pending gained since it began:
        one writing transaction at a time)."""
        spark = session.spark
        _drop_backups(spark, self.moved.values())
        if self.noted is None:
            return
        gained = sorted(set(_pending_files(spark)) - set(self.noted))
        if gained:
            _delete_files(spark, gained)
            spark.sql("REFRESH TABLE sqlanon.pending").collect()


def _qualified(spark: Any, name: str) -> str:
    """``name`` with its database (the current one when it has none)."""
    if re.match(rf"^{IDENT}\.{IDENT}$", name):
        return name
    db = str(spark.catalog.currentDatabase())
    return "`" + db.replace("`", "``") + "`." + name


#: The catalog tables writes append to (release tables, views and bounds tables are
#: created whole, and dropped whole on an undo).
CATALOG_TABLES = (
    "migrations",
    "releases",
    "member_spans",
    "cell_spans",
    "state_versions",
    "kept_values",
    "links",
    "hierarchies",
    "hierarchy_widths",
    "query_limits",
    "release_columns",
)
#: The endings of a family's append-only tables in database ``sqlanon`` (its rows and
#: its closed rows: :mod:`sqlanon.state.spark_rows`), undone like the catalog tables.
FAMILY_TABLES = ("__rows", "__closed")


def appended(table: str) -> bool:
    """Whether an INSERT INTO ``sqlanon.<table>`` is undone by deleting the files it
    added: a catalog table or a family's rows."""
    return table in CATALOG_TABLES or table.lower().endswith(FAMILY_TABLES)


def _has_pending(spark: Any) -> bool:
    return bool(spark.catalog.tableExists("sqlanon.pending"))


def _pending_files(spark: Any) -> list[str]:
    return sorted(spark.table("sqlanon.pending").inputFiles())


def _delete_files(spark: Any, files: Sequence[str]) -> None:
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for f in files:
        path = jvm.org.apache.hadoop.fs.Path(f)
        path.getFileSystem(conf).delete(path, False)


def _fs(spark: Any, path: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), p


def _move_files(spark: Any, files: Sequence[str], folder: str) -> None:
    fs, target = _fs(spark, folder)
    fs.mkdirs(target)
    jvm = spark.sparkContext._jvm
    for f in files:
        source = jvm.org.apache.hadoop.fs.Path(f)
        if not fs.rename(source, jvm.org.apache.hadoop.fs.Path(target, source.getName())):
            raise ConfigError(f"could not move {f} to {folder}; nothing was changed after it")


def _move_back(spark: Any, folder: str, before: Sequence[str]) -> None:
    """Move the files of ``folder`` back to where ``before`` lists them."""
    fs, source = _fs(spark, folder)
    if not fs.exists(source):
        return
    jvm = spark.sparkContext._jvm
    home = {jvm.org.apache.hadoop.fs.Path(f).getName(): f for f in before}
    for status in fs.listStatus(source):
        name = str(status.getPath().getName())
        if name in home:
            fs.rename(status.getPath(), jvm.org.apache.hadoop.fs.Path(home[name]))


def _drop_backups(spark: Any, folders: Any) -> None:
    for folder in folders:
        fs, path = _fs(spark, folder)
        if fs.exists(path):
            fs.delete(path.getParent(), True)


def _undo(
    spark: Any,
    files: dict[str, list[str]],
    created: Sequence[str],
    replaced: dict[str, str],
    moved: dict[str, str],
) -> None:
    """Put the catalog tables of ``files`` back to those files (the ones ``moved`` to a
    backup folder come back), drop ``created``, restore ``replaced``."""
    for name in reversed(list(created)):
        kind = "VIEW" if _is_view(spark, name) else "TABLE"
        spark.sql(f"DROP {kind} IF EXISTS {name}").collect()
    for definition in replaced.values():
        statement = re.sub(
            r"^\s*CREATE\s+VIEW", "CREATE OR REPLACE VIEW", definition, count=1, flags=re.I
        )
        spark.sql(statement).collect()
    for name, before in files.items():
        spark.sql(f"REFRESH TABLE {name}").collect()
        gained = sorted(set(spark.table(name).inputFiles()) - set(before))
        _delete_files(spark, gained)
        if name in moved:
            _move_back(spark, moved[name], before)
        spark.sql(f"REFRESH TABLE {name}").collect()
    _drop_backups(spark, moved.values())


def _is_view(spark: Any, name: str) -> bool:
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    except Exception:  # noqa: BLE001 - gone already: nothing to drop
        return False
    return any(str(r[0]) == "Type" and str(r[1]).upper() == "VIEW" for r in rows)


def recover(session: HasSpark) -> list[str]:
    """Undo what a writing transaction of a driver that died left (``sqlanon.pending``):
    unless ``sqlanon.releases`` gained a file after its notes listed that table's files
    (the catalog row was written: it committed, and stays), the catalog files it added,
    its tables and views go.
    Returns the ids of the transactions cleaned up."""
    spark = session.spark
    if not _has_pending(spark):
        return []
    spark.sql("REFRESH TABLE sqlanon.pending").collect()
    if not _pending_files(spark):
        return []
    notes = spark.sql(
        "SELECT txid, kind, detail, input_file_name() AS f FROM sqlanon.pending"
    ).collect()
    by_tx: dict[str, list[tuple[str, str]]] = {}
    files_of: dict[str, set[str]] = {}
    for txid, kind, detail, f in notes:
        by_tx.setdefault(str(txid), []).append((str(kind), str(detail)))
        files_of.setdefault(str(txid), set()).add(str(f))
    releases = "sqlanon.`releases`"
    for txid, entries in by_tx.items():
        files: dict[str, list[str]] = dict(json.loads(d) for k, d in entries if k == "files")
        if releases in files:
            spark.sql(f"REFRESH TABLE {releases}").collect()
            now = spark.table(releases).inputFiles()
        # the catalog row is the commit point: written, the transaction committed
        if releases not in files or not set(now) - set(files[releases]):
            created = [d for k, d in entries if k == "created"]
            replaced = dict(json.loads(d) for k, d in entries if k == "replaced")
            moved = dict(json.loads(d) for k, d in entries if k == "moved")
            _undo(spark, files, created, replaced, moved)
        else:
            _drop_backups(spark, [json.loads(d)[1] for k, d in entries if k == "moved"])
        _delete_files(spark, sorted(files_of[txid]))
    spark.sql("REFRESH TABLE sqlanon.pending").collect()
    return list(by_tx)


def location(spark: Any, database: str) -> str:
    rows = spark.sql(f"DESCRIBE DATABASE {database}").collect()
    return next(str(r[1]) for r in rows if str(r[0]).lower() == "location")
