"""sqlanon as a PostgreSQL extension: ``CREATE EXTENSION sqlanon CASCADE``, upgraded by
``ALTER EXTENSION sqlanon UPDATE``, known to ``pg_dump``.

``sqlanon install-postgres --server-side`` builds the Python directories
(:mod:`sqlanon.postgres.install`) and then, with :func:`place_extension`, writes into the
server's extension directory (``$(pg_config --sharedir)/extension``)::

    sqlanon.control                  default_version = this build's version,
                                     requires = 'plpython3u', schema = sqlanon
    sqlanon--<version>.sql           install script of this build
    sqlanon--<previous>--<version>.sql   upgrade script from the build placed before

**Versions.** A version names one build on one server: ``<sqlanon version>-<12 hex
digits>``, the digits a hash of the package source (code, SQL, every migration), the
server's Python ``X.Y`` and the two directories the functions import from. The
functions' bodies import that build's directory (the prologue, see
:func:`sqlanon.postgres.install.with_prologue`), so any change, a migration or not, is a
new version whose functions point at the new directory. The catalog level is in each
script's header (``-- migrations: 001_catalog 002_...``).

**One source of truth.** Both kinds of script are generated from the files
``install-postgres URL`` applies:

- install: a guard (refuses a database ``install-postgres URL`` installed:
  ``postgres/sql/extension_guard.sql``), ``postgres/sql/bootstrap.sql`` without its
  ``CREATE SCHEMA`` (the control file's ``schema`` creates it), every migration in
  order with its row in ``sqlanon.migrations``, ``functions.sql`` with the prologue,
  ``grants.sql``, then ``postgres/sql/extension_finish.sql``. (Data steps are
  skipped: they rewrite rows of releases, and a new catalog has none.)
- upgrade ``old -> new``: the migrations ``new`` has and ``old`` (its install script's
  header) has not, each followed by its data step (``extension_data_step.sql``:
  PL/Python running :func:`sqlanon.state.migrations.run_data_step` from the new directory) and
  its ledger row; then functions, grants and the finish, as in the install script.

So a new migration file makes a new version whose upgrade script applies it, with no
hand-written script. The upgrade scripts form a chain: each placement writes one from
the control file's previous ``default_version``; PostgreSQL follows the chain from
whatever version a database has (keep the Python directories of versions a database
may still be at until it is updated). Placing an older build after a newer one writes
no (downgrade) script.

``extension_finish.sql`` marks every catalog table but ``sqlanon.migrations`` with
``pg_extension_config_dump`` (pg_dump dumps their rows; the ledger's rows come from the
install script), drops PL/Python functions the build no longer defines, and releases
from the extension any bounds table a data step recreated during the script: bounds
tables (schema sqlanon), release tables and views (the caller's schema) are created by
releases, are not extension members, and are dumped and restored like any table.
Roles are cluster-wide: ``grants.sql`` creates them only when missing, and
``DROP EXTENSION`` leaves them (and every release-created object) in place.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlanon import sqltext
from sqlanon.errors import ConfigError
from sqlanon.postgres import install
from sqlanon.state.migrations import has_data_step

EXTENSION = "sqlanon"
_MIGRATION_NAME = re.compile(r"^[0-9]{3}_[a-z0-9_]+$")
_HEADER_MIGRATIONS = re.compile(r"^-- migrations:(.*)$", re.MULTILINE)
_DEFAULT_VERSION = re.compile(r"^\s*default_version\s*=\s*'([^']*)'", re.MULTILINE)
_CONTROL = """\
# sqlanon: releases of private tables that compose safely; written by
# `sqlanon install-postgres --server-side` (sqlanon.postgres.extension), do not edit.
comment = 'sqlanon: privacy-safe releases of growing private tables'
default_version = '{version}'
requires = 'plpython3u'
schema = sqlanon
relocatable = false
superuser = true
"""


@dataclass(frozen=True)
class PlacedExtension:
    """What :func:`place_extension` wrote."""

    directory: Path  # the server's extension directory
    version: str  # this build's version, now the default
    upgrade_from: str | None  # the previous default, if an upgrade script from it exists


def extension_version(python_dir: Path | str, deps_dir: Path | str, python_version: str) -> str:
    """``<sqlanon version>-<12 hex digits>`` for this build installed at ``python_dir``."""
    digest = hashlib.sha256(
        f"{install.source_hash(python_version)}\n{python_dir}\n{deps_dir}\n".encode()
    ).hexdigest()
    return f"{install.sqlanon_version()}-{digest[:12]}"


def install_script(
    version: str, python_dir: Path | str, deps_dir: Path | str, migrations: list[str] | None = None
) -> str:
    """The text of ``sqlanon--<version>.sql``: the whole catalog, functions and grants.

    ``migrations`` (names, default: every one) exists so tests can build an older catalog.
    """
    names = _migration_names(migrations)
    texts = dict(sqltext.migrations("postgres"))
    bootstrap = [
        s
        for s in sqltext.statements(sqltext.load("postgres", "bootstrap"))
        if not s.upper().startswith("CREATE SCHEMA")
    ]
    parts = [
        _header(version, names),
        sqltext.load("postgres", "extension_guard"),
        *(s + ";" for s in bootstrap),
    ]
    for name in names:
        parts += [texts[name].rstrip().rstrip(";") + ";", _ledger_row(name)]
    parts += _functions_and_grants()
    return _with_prologue("\n\n".join(parts) + "\n", python_dir, deps_dir)


def upgrade_script(
    old_script: str,
    version: str,
    python_dir: Path | str,
    deps_dir: Path | str,
    migrations: list[str] | None = None,
) -> str | None:
    """The text of ``sqlanon--<old>--<version>.sql``, given the old version's install or
    upgrade script (its header lists its migrations); ``None`` when the old version has
    a migration this build lacks (a downgrade)."""
    found = _HEADER_MIGRATIONS.search(old_script)
    if found is None:
        raise ConfigError("the previous sqlanon extension script has no `-- migrations:` header")
    old = found.group(1).split()
    names = _migration_names(migrations)
    if not set(old) <= set(names):
        return None
    texts = dict(sqltext.migrations("postgres"))
    step = sqltext.load("postgres", "extension_data_step")

    parts = [_header(version, names)]
    for name in names:
        if name in old:
            continue
        parts.append(texts[name].rstrip().rstrip(";") + ";")
        if has_data_step(name):
            parts.append(sqltext.render(step, step=f'"{name}"'))
        parts.append(_ledger_row(name))
    parts += _functions_and_grants()
    return _with_prologue("\n\n".join(parts) + "\n", python_dir, deps_dir)


def place_extension(
    python_dir: Path,
    *,
    extension_dir: Path | str | None = None,
    migrations: list[str] | None = None,
) -> PlacedExtension:
    """Write the control file and this build's scripts into ``extension_dir`` (default:
    the server's, from ``pg_config``). ``python_dir`` is what
    :func:`sqlanon.postgres.install.install_python_dir` built. Idempotent.

    Scripts first, control file last, each written beside its place and renamed into
    it, so ``CREATE EXTENSION`` never reads half a file.
    """
    marker = json.loads((python_dir / install.MARKER).read_text())
    deps_dir = python_dir.parent / marker["deps"]
    directory = Path(extension_dir) if extension_dir is not None else server_extension_dir()
    version = extension_version(python_dir, deps_dir, marker["python"])
    control = directory / f"{EXTENSION}.control"
    previous = None
    if control.is_file():
        found = _DEFAULT_VERSION.search(control.read_text())
        previous = found.group(1) if found else None
    script = install_script(version, python_dir, deps_dir, migrations)
    _write(directory / f"{EXTENSION}--{version}.sql", script)
    upgrade_from = None
    old_path = directory / f"{EXTENSION}--{previous}.sql"
    if previous is not None and previous != version and old_path.is_file():
        upgrade = upgrade_script(old_path.read_text(), version, python_dir, deps_dir, migrations)
        if upgrade is not None:
            _write(directory / f"{EXTENSION}--{previous}--{version}.sql", upgrade)
            upgrade_from = previous
    _write(control, _CONTROL.format(version=version))
    return PlacedExtension(directory, version, upgrade_from)


def server_extension_dir(pg_config: str | None = None) -> Path:
    """``$(pg_config --sharedir)/extension`` of the server installed on this machine."""
    candidates = [pg_config] if pg_config else []
    if not candidates:
        on_path = shutil.which("pg_config")
        versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_config"))
        if len(versions) == 1:
            candidates.append(str(versions[0]))  # Debian: one server version installed
        elif on_path and not versions:
            candidates.append(on_path)
    if not candidates:
        raise ConfigError(
            "cannot tell which PostgreSQL server's extension directory to use (no single "
            "pg_config found): pass --extension-dir (`pg_config --sharedir` of the "
            "server, followed by /extension)"
        )
    try:
        done = subprocess.run(  # noqa: S603 - a pg_config binary, no shell
            [candidates[0], "--sharedir"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ConfigError(
            f"{candidates[0]} --sharedir failed ({exc}): pass --extension-dir instead"
        ) from exc
    return Path(done.stdout.strip()) / "extension"


def _migration_names(migrations: list[str] | None) -> list[str]:
    every = [name for name, _ in sqltext.migrations("postgres")]
    names = every if migrations is None else [n for n in every if n in migrations]
    for name in names:
        if not _MIGRATION_NAME.match(name):
            raise ConfigError(f"migration file name {name!r}: use NNN_lowercase_words.sql")
    return names


def _header(version: str, migrations: list[str]) -> str:
    return (
        f"-- sqlanon extension version {version}, generated by sqlanon.postgres.extension from\n"
        "-- sqlanon/postgres/migrations/*.sql, sqlanon/postgres/sql/functions.sql and grants.sql:\n"
        "-- do not edit.\n"
        f"-- migrations: {' '.join(migrations)}\n"
        '\\echo Use "CREATE EXTENSION sqlanon CASCADE" to load this file. \\quit'
    )


def _ledger_row(name: str) -> str:
    # name matched _MIGRATION_NAME (digits, lowercase letters, _): a safe literal.
    return f"INSERT INTO sqlanon.migrations (name) VALUES ('{name}');"  # noqa: S608


def _functions_and_grants() -> list[str]:
    return [
        sqltext.load("postgres", "functions"),
        sqltext.load("postgres", "grants"),
        sqltext.load("postgres", "extension_finish"),
    ]


def _with_prologue(script: str, python_dir: Path | str, deps_dir: Path | str) -> str:
    return install.with_prologue(script, python_dir, deps_dir)


def _write(path: Path, text: str) -> None:
    if path.is_file() and path.read_text() == text:
        return
    scratch = path.parent / f".{path.name}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        scratch.write_text(text)
        os.chmod(scratch, 0o644)
        scratch.rename(path)
    except OSError as exc:
        scratch.unlink(missing_ok=True)
        raise ConfigError(
            f"cannot write {path} ({exc.strerror}): placing the extension needs a user "
            "who may write the server's extension directory (e.g. root)"
        ) from exc
