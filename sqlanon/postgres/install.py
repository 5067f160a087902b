"""Install sqlanon into PostgreSQL: files the server's PL/Python imports, then the
catalog and the SQL functions in one database.

**Files** (:func:`install_python_dir`). PL/Python runs the server's own Python
(Debian: ``/usr/bin/python3``) as the OS user ``postgres``; it cannot see the client's
virtualenv. So sqlanon and its runtime dependencies go into directories it can read::

    /var/lib/sqlanon/python/
        <sqlanon version>-<hash>/     one per sqlanon build
            sqlanon/                  the package source with its SQL and migrations
            sqlanon-install.json      marker: version, hash, Python, dependency directory
        deps-cp3XY-<hash>/            one per set of dependency versions
            numpy/ sqlglot/ duckdb/   binary wheels for the server's CPython X.Y from pip,
                                      at the versions installed where this runs
            sqlanon-install.json

The sqlanon hash covers the package source (code, SQL, migrations, data) and the
server's Python ``X.Y``, so a changed sqlanon lands in a new directory and nothing a
running session has imported is overwritten; an upgrade that keeps the dependency
versions reuses their directory. Each directory is built beside its final place and
renamed into it: it is complete or absent. Old directories are left for sessions still
using them; delete them by hand once no session from before the upgrade remains.
(duckdb is there only because ``import sqlanon`` imports the DuckDB backend.)

**Database** (:func:`install_postgres`), holding an advisory lock so concurrent
installs queue:

1. ``CREATE EXTENSION IF NOT EXISTS plpython3u``;
2. the catalog migrations (:func:`sqlanon.state.migrations.migrate`: ``postgres/migrations/*.sql``
   in order, each in its own transaction, recorded in ``sqlanon.migrations``);
3. in one transaction, ``postgres/sql/functions.sql`` with each ``# sqlanon: prologue``
   line replaced by code that puts both directories first on ``sys.path`` once per
   session (see :func:`with_prologue`); sqlanon's PL/Python functions that no longer
   exist in that file are dropped; then ``postgres/sql/grants.sql``: the NOLOGIN roles
   ``sqlanon_owner`` and ``sqlanon_analyst`` (created once per cluster) and their
   privileges, every other grant to PUBLIC on schema sqlanon revoked.

The server must be able to read the directory, so :func:`install_postgres` works when
the server runs on this machine. It checks by asking the server to read the marker.
For a server on another machine, run ``sqlanon install-postgres --server-side`` on
that machine (same sqlanon version; it builds the directory there), then
``sqlanon install-postgres URL`` from anywhere: it finds the directory through the
server and does only the database part.

**Two ways into a database.** ``--server-side`` also places sqlanon as a PostgreSQL
extension (:mod:`sqlanon.postgres.extension`): ``CREATE EXTENSION sqlanon CASCADE``,
``ALTER EXTENSION sqlanon UPDATE``, and ``pg_dump`` dumps the catalog's rows with the
extension. Its scripts are generated from the same files this module applies
(migrations, ``functions.sql`` with the prologue, ``grants.sql``), so both ways give
the same objects. The URL install above stays for servers where no file can be placed
in the extension directory (a managed server that allows PL/Python but no file
access, or a user who is not root there). A database stays with the way it was
installed: :func:`install_postgres` refuses a database holding the extension (it is
upgraded by ``ALTER EXTENSION``), and the extension's install script refuses a
database this module installed (its objects are not extension members, and making
them members by hand would be a third, untested path). Both refusals say what to run.
"""

from __future__ import annotations

import compileall
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlanon import sqltext
from sqlanon.errors import ConfigError, SqlanonError
from sqlanon.postgres.session import PINNED_PATH, PsycopgSession
from sqlanon.state import migrations
from sqlanon.version import __version__

DEFAULT_PYTHON_ROOT = Path("/var/lib/sqlanon/python")
MARKER = "sqlanon-install.json"
# What the server's Python needs besides sqlanon itself (psycopg is client-only).
SERVER_REQUIREMENTS = ("numpy", "sqlglot", "duckdb")

_PACKAGE = Path(__file__).resolve().parents[1]  # the sqlanon package
_PROLOGUE_LINE = re.compile(r"^# sqlanon: prologue$", re.MULTILINE)
_PROLOGUE = """\
if GD.get("sqlanon.python_path") != {paths!r}:
    import sys
    for _path in GD.get("sqlanon.python_path", ()):
        if _path in sys.path:
            sys.path.remove(_path)
    for _name in [m for m in sys.modules if m == "sqlanon" or m.startswith("sqlanon.")]:
        del sys.modules[_name]
    sys.path[0:0] = {paths!r}
    GD["sqlanon.python_path"] = {paths!r}"""


@dataclass(frozen=True)
class PostgresInstall:
    """What :func:`install_postgres` did."""

    python_dir: Path  # where the database's functions import sqlanon from
    deps_dir: Path  # ... and numpy, sqlglot, duckdb
    built: bool  # the directories were built now (False: the server already had them)
    migrations: list[str]  # migrations applied now


def install_postgres(url: str, *, python_root: Path | str | None = None) -> PostgresInstall:
    """Make sqlanon usable in the database at ``url`` (idempotent; also upgrades).

    ``url`` must connect as a superuser (PL/Python is an untrusted language).
    ``python_root`` defaults to ``/var/lib/sqlanon/python``; it must be readable by
    the server's OS user.
    """
    import psycopg

    root = Path(python_root) if python_root is not None else DEFAULT_PYTHON_ROOT
    with psycopg.connect(url, autocommit=True) as conn:
        # This connection is the installer's own: pin its path before any query that
        # could resolve an operator (whoever may create in a schema of the URL's path
        # could plant one); the data steps still find old releases in its schema.
        (schema,) = conn.execute("SELECT pg_catalog.current_schema()").fetchone() or (None,)
        conn.execute("SELECT pg_catalog.set_config('search_path', %s, false)", [PINNED_PATH])
        session = PsycopgSession(conn, schema=schema)
        session.execute("SELECT pg_advisory_lock(hashtext('sqlanon:install'))")
        try:
            _create_plpython(conn)
            _refuse_extension(session)
            server_python = _probe(session, None)["python"]
            python_dir = root / python_dir_name(server_python)
            built = False
            marker = _server_marker(session, python_dir, server_python)
            if marker is None:
                install_python_dir(root, python_version=server_python)
                built = True
                marker = _server_marker(session, python_dir, server_python)
            if marker is None:
                raise _server_cannot_read(session, python_dir)
            deps_dir = root / marker["deps"]
            session.execute("DROP FUNCTION pg_temp.sqlanon_install_probe(text)")

            applied = migrations.migrate(session)
            functions = with_prologue(sqltext.load("postgres", "functions"), python_dir, deps_dir)
            with session.transaction():
                session.execute(functions)
                _drop_stale_functions(session, python_dir)
                session.execute(sqltext.load("postgres", "grants"))
        finally:
            session.execute("SELECT pg_advisory_unlock(hashtext('sqlanon:install'))")
    return PostgresInstall(python_dir, deps_dir, built, applied)


def install_python_dir(
    python_root: Path | str | None = None, *, python_version: str | None = None
) -> Path:
    """Build ``<python_root>/<version>-<hash>`` for a server whose PL/Python runs Python
    ``python_version`` (``"3.11"``; default: the Python running this). Idempotent.

    This is the whole of ``sqlanon install-postgres --server-side``.
    """
    root = Path(python_root) if python_root is not None else DEFAULT_PYTHON_ROOT
    version = python_version or _this_python()
    requirements = [_pinned(name) for name in SERVER_REQUIREMENTS]
    pins = hashlib.sha256(f"python {version}\n{requirements}".encode()).hexdigest()
    deps = root / f"deps-cp{version.replace('.', '')}-{pins[:12]}"
    _build(
        deps,
        lambda scratch: _pip_install(scratch, version, requirements),
        {"python": version, "requirements": requirements},
    )
    final = root / python_dir_name(version)
    _build(
        final,
        lambda scratch: _copy_package(scratch / "sqlanon", version),
        {
            "sqlanon": sqlanon_version(),
            "hash": source_hash(version),
            "python": version,
            "deps": deps.name,
        },
    )
    return final


def _build(final: Path, fill: Callable[[Path], None], marker: dict[str, Any]) -> None:
    """Make ``final`` with ``fill`` unless it exists: in a scratch directory beside it,
    marker last, then one rename, so readers see a complete directory or none."""
    if (final / MARKER).is_file():
        return
    try:
        _make_readable_dirs(final.parent)
        scratch = final.parent / f".{final.name}.{uuid.uuid4().hex[:8]}.tmp"
        scratch.mkdir()
    except OSError as exc:
        raise ConfigError(
            f"cannot write {final.parent} ({exc.strerror}). If the PostgreSQL server runs "
            "on this machine, install as a user who may write there (e.g. root) or pick a "
            "python_root its OS user can read; if it runs on another machine, run "
            "`sqlanon install-postgres --server-side` on that machine first"
        ) from exc
    try:
        fill(scratch)
        (scratch / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
        _make_tree_readable(scratch)
        try:
            scratch.rename(final)
        except OSError:
            if not (final / MARKER).is_file():  # unless a concurrent install won the race
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def python_dir_name(python_version: str) -> str:
    """``<sqlanon version>-<first 12 hex digits of source_hash>``."""
    return f"{sqlanon_version()}-{source_hash(python_version)[:12]}"


def source_hash(python_version: str) -> str:
    """sha256 over this sqlanon's files (as laid out in a wheel) and the Python ``X.Y``."""
    digest = hashlib.sha256(f"python {python_version}\n".encode())
    for relative, path in _package_files():
        digest.update(f"{relative}\n{path.stat().st_size}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def with_prologue(sql: str, python_dir: Path | str, deps_dir: Path | str) -> str:
    """Replace each ``# sqlanon: prologue`` line of PL/Python function text with code
    that makes ``import sqlanon`` (and numpy, ...) load from the installed directories.

    The check costs one dict lookup per call. The first call of a session puts the
    directories first on ``sys.path`` and remembers them in ``GD``; if the session had
    imported sqlanon from other directories (an install upgraded under a running
    session), those modules are dropped so the new ones load. numpy, sqlglot and
    duckdb stay as first imported in that session.
    """
    paths = [str(python_dir), str(deps_dir)]
    for path in paths:
        if "$" in path or "\n" in path or "\\" in path:
            raise ConfigError(f"python directory {path!r}: choose a path without $, \\ or newlines")
    return _PROLOGUE_LINE.sub(lambda _: _PROLOGUE.format(paths=paths), sql)


def _create_plpython(conn: Any) -> None:
    from psycopg import errors

    user, superuser = conn.execute(
        "SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    if not superuser:
        raise ConfigError(
            f"installing sqlanon needs a superuser connection (PL/Python is an untrusted "
            f"language); {user!r} is not one"
        )
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS plpython3u")
    except (errors.UndefinedFile, errors.FeatureNotSupported) as exc:
        raise ConfigError(
            "the server has no PL/Python: install it on the server machine "
            "(Debian/Ubuntu: apt-get install postgresql-plpython3-<major version>); "
            f"server said: {exc.diag.message_primary}"
        ) from exc


def _refuse_extension(session: Any) -> None:
    """A database where ``CREATE EXTENSION sqlanon`` installed sqlanon is upgraded by
    ``ALTER EXTENSION``: installing plain objects over it would break the extension."""
    rows = session.query("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'sqlanon'")
    if rows:
        raise ConfigError(
            f"this database has sqlanon as a PostgreSQL extension (version {rows[0][0]}), "
            "which `sqlanon install-postgres URL` does not manage: run `sqlanon "
            "install-postgres --server-side` on the server machine to place this sqlanon's "
            "extension files, then `ALTER EXTENSION sqlanon UPDATE` in this database"
        )


def _probe(session: Any, marker: Path | None) -> dict[str, Any]:
    """The server's Python ``X.Y``, and ``marker`` as the server reads it (or ``error``)."""
    session.execute(sqltext.load("postgres", "install_probe"))
    rows = session.query(
        "SELECT pg_temp.sqlanon_install_probe($1)", [None if marker is None else str(marker)]
    )
    return dict(json.loads(rows[0][0]))


def _server_marker(session: Any, python_dir: Path, server_python: str) -> dict[str, Any] | None:
    """The marker of this sqlanon build as the server reads it, if it can."""
    marker = _probe(session, python_dir / MARKER)["marker"]
    if marker is None or marker.get("hash") != source_hash(server_python):
        return None
    deps = _probe(session, python_dir.parent / marker["deps"] / MARKER)["marker"]
    return dict(marker) if deps is not None else None


def _server_cannot_read(session: Any, python_dir: Path) -> ConfigError:
    error = _probe(session, python_dir / MARKER)["error"]
    return ConfigError(
        f"the server cannot read {python_dir / MARKER} ({error}). Either it runs on "
        "another machine: run `sqlanon install-postgres --server-side` there (same sqlanon "
        "version), then this command again; or its OS user (postgres) cannot read "
        f"{python_dir.parent}: make it and every parent directory readable and searchable"
    )


def _drop_stale_functions(session: Any, python_dir: Path) -> None:
    """Drop sqlanon's PL/Python functions that the new functions.sql no longer defines
    (they would still import an old directory). Replaced ones keep their grants."""
    stale = session.query(
        "SELECT p.oid::regprocedure::text FROM pg_proc AS p"
        " JOIN pg_namespace AS n ON n.oid = p.pronamespace"
        " JOIN pg_language AS l ON l.oid = p.prolang"
        " WHERE n.nspname = 'sqlanon' AND l.lanname = 'plpython3u'"
        " AND strpos(p.prosrc, $1) = 0",
        [repr(str(python_dir))],
    )
    for (signature,) in stale:
        # regprocedure's text is a schema-qualified, quoted signature made by the server.
        session.execute(f"DROP FUNCTION {signature}")


def _pip_install(target: Path, python_version: str, requirements: list[str]) -> None:
    """Install ``requirements`` as binary wheels for CPython ``python_version``."""
    if importlib.util.find_spec("pip") is None:
        raise ConfigError(f"installing for PostgreSQL needs pip in {sys.executable}'s environment")
    command = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--no-input", "--target", str(target), "--only-binary=:all:",
        "--python-version", python_version, "--implementation", "cp", *requirements,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise SqlanonError(
            f"pip could not fetch {', '.join(requirements)} for the server's Python "
            f"{python_version}:\n{done.stderr.strip()[-2000:]}"
        )


def _pinned(name: str) -> str:
    """``name==<version installed here>``, so the server runs what the client tested."""
    try:
        return f"{name}=={importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        return name


def _package_files() -> list[tuple[str, Path]]:
    """Every file of this sqlanon with its path inside the package, sorted: the code and
    its package data (``sql/``, ``<engine>/sql/``, ``<engine>/migrations/``, ``data/``),
    laid out as in a wheel."""
    files = {
        p.relative_to(_PACKAGE).as_posix(): p
        for p in _PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    return sorted(files.items())


def _copy_package(target: Path, python_version: str) -> None:
    for relative, path in _package_files():
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    if python_version == _this_python():
        # The server may not write __pycache__ here: compile once, now.
        compileall.compile_dir(target, quiet=1)


def _this_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def sqlanon_version() -> str:
    return str(__version__)


def _make_readable_dirs(root: Path) -> None:
    """Create ``root`` and its missing parents as world-searchable directories."""
    missing = [p for p in (root, *root.parents) if not p.exists()]
    for directory in reversed(missing):
        directory.mkdir()
        directory.chmod(0o755)


def _make_tree_readable(top: Path) -> None:
    """The server's OS user reads what this one wrote, whatever the umask was."""
    for dirpath, _dirnames, filenames in os.walk(top):
        os.chmod(dirpath, 0o755)  # noqa: S103 - read-only code for another OS user
        for name in filenames:
            path = os.path.join(dirpath, name)
            os.chmod(path, 0o755 if os.access(path, os.X_OK) else 0o644)  # noqa: S103
