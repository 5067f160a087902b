"""sqlanon on the command line: thin wrappers over the library.

Every command takes ``--db`` (a DuckDB file, a ``postgresql://`` URL, or a Spark master
URL such as ``local[2]`` or ``spark://host:7077``). A
:class:`SqlanonError` becomes one line on stderr and exit code 2, a database error
(a DuckDB file locked by another process, a refused connection) one line and exit
code 1; a closed pipe (``sqlanon query --explain ... | head -1``) ends it quietly.
Commands that only read (``query``, ``audit``, ``report``, ``export``) never create a
database.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from sqlanon.api import (
    audit,
    erase,
    export,
    hierarchy_widths,
    interval,
    load_hierarchies,
    preview,
    release_ke,
    release_lhd,
    retire,
    rewrite,
)
from sqlanon.connect import connect, first_line
from sqlanon.demo import run_demo
from sqlanon.display import Progress, change_line, dry_run_line, print_table
from sqlanon.errors import ConfigError, InternalError, SqlanonError, is_database_error
from sqlanon.models.lhd_defer import DEFAULT_POLICY as DEFAULT_LHD_POLICY
from sqlanon.models.lhd_defer import LHD_POLICIES
from sqlanon.models.lhd_planner import RECODINGS
from sqlanon.postgres.extension import place_extension
from sqlanon.postgres.install import install_postgres, install_python_dir
from sqlanon.report.page import write_report
from sqlanon.version import __version__

_DB_HELP = (
    "the database: a DuckDB file, a postgresql:// URL or a Spark master (local[2], spark://...)"
)
_READ_DB_HELP = (
    "the database: an existing DuckDB file (never created), a postgresql:// URL or a Spark "
    "master (local[2], spark://...)"
)
_DOMAIN_HELP = "the people behind the source (docs/OWNER.md, Domains); decided when not given"
_SOURCE_HELP = "the private table to publish (table or schema.table)"
_FAMILY_HELP = "the release family: the name analysts query (its versions are <family>_v<n>)"
_KEY_HELP = "the column that identifies a record (unique, never published)"
_QUASI_HELP = (
    "the columns published generalized, that analysts filter and group by "
    "(quasi-identifiers); at least one"
)
_K_HELP = "(k,e): every published group holds at least k records"
_E_HELP = "(k,e): and its sensitive values span at least e (max - min)"
_POLICY_HELP = "how records of earlier groups are planned again (docs/OWNER.md, The privacy rule)"
_L_HELP = "lHD: every published class holds at least l distinct values of each sensitive column"
_ALGORITHM_HELP = "lHD planner (auto picks by size)"
_MAX_SUPPRESSION_HELP = (
    "lHD: refuse the release if more than this share of the records would be left out"
)
_DATASET_HELP = (
    "what the source is a copy, view or model of (default: its table's name): lHD looks "
    "its hierarchies up under this name (load-hierarchies, hierarchy-widths), and a new "
    "domain is named after it"
)
_DRY_RUN_HELP = "plan as the release would and print its summary; write nothing"
_RECODING_HELP = (
    "local: each class at the lowest levels its members share; global: one level per "
    "quasi-identifier for the whole release (every label of a column of one level)"
)


def _print_release(family: str, summary: dict[str, Any]) -> None:
    """The summary as JSON on stdout (for scripts); the line for people on stderr."""
    line = dry_run_line(family, summary) if summary.get("dry_run") else change_line(family, summary)
    _print_done(line, summary)


def _release_ke(args: argparse.Namespace) -> None:
    with connect(args.db) as con:
        summary = release_ke(
            con,
            args.source,
            args.family,
            key=args.key,
            sensitive=args.sensitive,
            quasi=args.quasi,
            k=args.k,
            e=args.e,
            policy=args.policy,
            progress=Progress(),
            domain=args.domain,
            dataset=args.dataset,
            dry_run=args.dry_run,
        )
    _print_release(args.family, summary)


def _release_lhd(args: argparse.Namespace) -> None:
    with connect(args.db) as con:
        summary = release_lhd(
            con,
            args.source,
            args.family,
            key=args.key,
            quasi=args.quasi,
            sensitive=args.sensitive,
            l=args.l,
            algorithm=args.algorithm,
            max_suppression=args.max_suppression,
            progress=Progress(),
            domain=args.domain,
            dataset=args.dataset,
            dry_run=args.dry_run,
            recoding=args.recoding,
            policy=args.policy,
        )
    _print_release(args.family, summary)


#: Per model, the options of ``sqlanon preview`` that a release takes, and the type of
#: the values ``--sweep NAME=V1,V2`` gives each.
_PREVIEW_PARAMETERS = {
    "ke": {"k": int, "e": float, "policy": str},
    "lhd": {"l": int, "algorithm": str, "max_suppression": float, "recoding": str, "policy": str},
}


def _sweep(model: str | None, given: Sequence[str]) -> dict[str, list[Any]]:
    """``["k=3,5,10"]`` as ``{"k": [3, 5, 10]}`` (``model`` None: either model's names;
    the release says which it varies)."""
    types = (
        _PREVIEW_PARAMETERS[model]
        if model
        else _PREVIEW_PARAMETERS["ke"] | _PREVIEW_PARAMETERS["lhd"]
    )
    sweep: dict[str, list[Any]] = {}
    for item in given:
        name, _, values = item.partition("=")
        name = name.strip().replace("-", "_")
        if name not in types or not values:
            raise ConfigError(
                f"--sweep takes NAME=V1,V2,... with NAME one of {', '.join(types)}; got {item!r}"
            )
        try:
            sweep[name] = [types[name](v.strip()) for v in values.split(",")]
        except ValueError as exc:
            raise ConfigError(f"--sweep {item!r}: {exc}") from exc
    return sweep


def _preview(args: argparse.Namespace) -> None:
    sweep = _sweep(args.model, args.sweep)
    given = {n: getattr(args, n) for n in _PREVIEW_PARAMETERS[args.model]}
    params = {n: v for n, v in given.items() if v is not None and n not in sweep}
    params.update(key=args.key, quasi=args.quasi, domain=args.domain, dataset=args.dataset)
    if args.model == "ke":
        if len(args.sensitive) != 1:
            raise ConfigError("a (k,e) release takes one --sensitive column")
        params["sensitive"] = args.sensitive[0]
    else:
        params["sensitive"] = args.sensitive
    with connect(args.db) as con:
        rows = preview(con, args.source, args.family, args.model, sweep, **params)
    print_table(rows)


def _erase(args: argparse.Namespace) -> None:
    with connect(args.db) as con:
        done = erase(con, args.source)
    _print_done(
        f"{done['source']}: {done['ghosts']} published records are ghosts now, "
        f"{done['forgotten']} never-published records forgotten; nothing published "
        "(the next release publishes the ghosts)",
        done,
    )


def _retire(args: argparse.Namespace) -> None:
    with connect(args.db) as con:
        done = retire(con, args.family, args.keep)
    line = f"serving versions {done['served']}, retired {done['retired']}"
    _print_done(f"{done['family']}: {line}; the private state keeps every version", done)


def _print_done(line: str, done: dict[str, Any]) -> None:
    print(f"sqlanon: {line}", file=sys.stderr, flush=True)
    print(json.dumps(done, indent=2))


def _load_hierarchies(args: argparse.Namespace) -> None:
    with connect(args.db) as con:
        print(json.dumps(load_hierarchies(con, args.dataset, args.folder), indent=2))


def _hierarchy_widths(args: argparse.Namespace) -> None:
    with connect(args.db) as con:
        print(json.dumps(hierarchy_widths(con, args.dataset, args.attribute, args.widths)))


def _audit(args: argparse.Namespace) -> None:
    with connect(args.db) as con:
        rows = audit(con, args.family, records=args.records)
    if args.records:
        print(json.dumps(rows, indent=2))
    else:
        print_table(rows)


def _report(args: argparse.Namespace) -> None:
    out = args.out or f"{args.family}_report.html"
    with connect(args.db) as con:
        sweep = _sweep(None, args.sweep) if args.sweep else None
        written = write_report(con, args.family, out, sweep)
    print(f"report of {args.family} written to {written}")


def _query(args: argparse.Namespace) -> None:
    with connect(args.db) as con:
        if args.explain:
            print(rewrite(args.sql, con, args.dialect))
        else:
            print_table(interval(con, args.sql))


def _export(args: argparse.Namespace) -> None:
    with connect(args.db) as con:
        print(json.dumps(export(con, args.name, args.path, args.format), indent=2))


def _install(args: argparse.Namespace) -> None:
    if args.db.startswith(("postgresql://", "postgres://")):
        install_postgres(args.db)
        print(f"sqlanon installed in {args.db.rsplit('@', 1)[-1]}")
        return
    with connect(args.db, existing=False):
        print(f"sqlanon installed in {args.db}")


def _install_postgres(args: argparse.Namespace) -> None:
    if args.server_side and args.url is not None:
        raise ConfigError("give a postgresql:// URL or --server-side, not both")
    if not args.server_side and args.url is None:
        raise ConfigError(
            "give a postgresql:// URL (install into that database, as a superuser) or "
            "--server-side (on the server machine: build what its PL/Python imports)"
        )
    if args.server_side:
        built = install_python_dir(args.python_root, python_version=args.python_version)
        print(f"sqlanon for the server's PL/Python is in {built}")
        placed = place_extension(built, extension_dir=args.extension_dir)
        update = f", upgrade script from {placed.upgrade_from}" if placed.upgrade_from else ""
        print(
            f"extension sqlanon {placed.version} placed in {placed.directory}{update}: "
            "CREATE EXTENSION sqlanon CASCADE (new database) or "
            "ALTER EXTENSION sqlanon UPDATE (existing one)"
        )
        return
    if args.extension_dir is not None:
        raise ConfigError("--extension-dir goes with --server-side")
    done = install_postgres(args.url, python_root=args.python_root)
    applied = ", ".join(done.migrations) or "none pending"
    print(
        f"sqlanon installed in {args.url.rsplit('@', 1)[-1]} (from {done.python_dir}; "
        f"migrations: {applied}); roles sqlanon_owner and sqlanon_analyst"
    )


def _demo(args: argparse.Namespace) -> None:
    run_demo(args.db, k=args.k, e=args.e)


def build_parser() -> argparse.ArgumentParser:
    description = __doc__.splitlines()[0] if __doc__ else "sqlanon"
    parser = argparse.ArgumentParser(prog="sqlanon", description=description.replace("``", ""))
    parser.add_argument("--version", action="version", version=f"sqlanon {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_setup_commands(commands)
    _add_release_commands(commands)
    _add_state_commands(commands)
    _add_read_commands(commands)
    return parser


def _add_setup_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``demo``, ``install`` and ``install-postgres``."""
    demo = commands.add_parser("demo", help="replay the seeds' Adult experiment and print it")
    demo.add_argument("--db", default="sqlanon_demo.duckdb", help="DuckDB file to (re)create")
    demo.add_argument("--k", type=int, default=5, help=_K_HELP + " (default 5)")
    demo.add_argument("--e", type=float, default=20, help=_E_HELP + " (default 20)")
    demo.set_defaults(run=_demo)

    install = commands.add_parser("install", help="apply migrations (DuckDB file or Postgres URL)")
    install.add_argument(
        "--db",
        required=True,
        help="a DuckDB file (created if missing), a postgresql:// URL or a Spark master URL",
    )
    install.set_defaults(run=_install)

    pg = commands.add_parser(
        "install-postgres",
        help="install into a PostgreSQL database (URL, as a superuser), or build the "
        "server-side package directory on the server machine (--server-side)",
    )
    pg.add_argument("url", nargs="?", help="postgresql://... of the database")
    pg.add_argument(
        "--server-side",
        action="store_true",
        help="on the server machine: build the directory its PL/Python imports",
    )
    pg.add_argument(
        "--python-root",
        default=None,
        help="where that directory lives (default /var/lib/sqlanon/python)",
    )
    pg.add_argument(
        "--python-version",
        default=None,
        help="with --server-side: the server's Python X.Y (default: this one)",
    )
    pg.add_argument(
        "--extension-dir",
        default=None,
        help="with --server-side: the server's extension directory "
        "(default: $(pg_config --sharedir)/extension)",
    )
    pg.set_defaults(run=_install_postgres)


def _add_release_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands that publish: ``release-ke``, ``release-lhd`` (and ``preview``, their
    dry runs)."""
    ke = commands.add_parser("release-ke", help="publish the next (k,e) version of a family")
    _add_release_arguments(ke)
    ke.add_argument(
        "--sensitive", required=True, help="the column published as [min, max] per group"
    )
    ke.add_argument("--k", type=int, required=True, help=_K_HELP)
    ke.add_argument("--e", type=float, required=True, help=_E_HELP)
    ke.add_argument(
        "--policy", default="auto", choices=["auto", "merge", "defer", "paper"], help=_POLICY_HELP
    )
    ke.add_argument("--domain", default=None, help=_DOMAIN_HELP)
    ke.add_argument("--dry-run", action="store_true", help=_DRY_RUN_HELP)
    ke.set_defaults(run=_release_ke)

    lhd = commands.add_parser("release-lhd", help="publish the next lHD-diverse version")
    _add_release_arguments(lhd)
    lhd.add_argument(
        "--sensitive", nargs="+", required=True, help="the columns published exactly, l-diverse"
    )
    lhd.add_argument("--l", type=int, required=True, help=_L_HELP)
    lhd.add_argument(
        "--algorithm",
        default="auto",
        choices=["auto", "greedy", "scalable", "refine"],
        help=_ALGORITHM_HELP,
    )
    lhd.add_argument(
        "--policy",
        default=DEFAULT_LHD_POLICY,
        choices=list(LHD_POLICIES),
        help="publish: place every appended record it can now; auto/defer: hold appended "
        "records back (within --max-suppression) while they can only form wide classes",
    )
    lhd.add_argument("--recoding", default="local", choices=RECODINGS, help=_RECODING_HELP)
    lhd.add_argument(
        "--max-suppression", type=float, default=0.05, help=_MAX_SUPPRESSION_HELP + " (0.05)"
    )
    lhd.add_argument("--domain", default=None, help=_DOMAIN_HELP)
    lhd.add_argument("--dry-run", action="store_true", help=_DRY_RUN_HELP)
    lhd.set_defaults(run=_release_lhd)
    _add_preview_command(commands)


def _add_state_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands that write a domain's state without a release: ``erase``,
    ``retire``, ``load-hierarchies`` and ``hierarchy-widths``."""
    erase = commands.add_parser(
        "erase",
        help="apply deletions from a released source to sqlanon's state now: published "
        "records gone from it become ghosts (keys erased), without publishing a version",
    )
    erase.add_argument("--db", required=True, help=_DB_HELP)
    erase.add_argument("source", help="the released table (table or schema.table)")
    erase.set_defaults(run=_erase)

    retire_ = commands.add_parser(
        "retire", help="stop serving all but a family's newest --keep versions (state stays)"
    )
    retire_.add_argument("--db", required=True, help=_DB_HELP)
    retire_.add_argument("family", help=_FAMILY_HELP)
    retire_.add_argument("--keep", type=int, required=True, help="versions still served (>= 1)")
    retire_.set_defaults(run=_retire)

    hier = commands.add_parser(
        "load-hierarchies", help="store ARX hierarchy CSVs <dataset>_hierarchy_<attr>.csv"
    )
    hier.add_argument("--db", required=True, help=_DB_HELP)
    hier.add_argument(
        "dataset",
        help="the name the files start with: the source table's, or any name a release "
        "gives as --dataset",
    )
    hier.add_argument(
        "folder", nargs="?", help="folder of the CSVs (default: the bundled ones, for adult)"
    )
    hier.set_defaults(run=_load_hierarchies)

    widths = commands.add_parser(
        "hierarchy-widths",
        help="store a numeric hierarchy for one column: intervals of each width, then *",
    )
    widths.add_argument("--db", required=True, help=_DB_HELP)
    widths.add_argument("dataset", help="as for load-hierarchies")
    widths.add_argument("attribute", help="the numeric column")
    widths.add_argument(
        "widths",
        nargs="+",
        type=float,
        help="interval widths, each a multiple of the one before (e.g. 5 10 20)",
    )
    widths.set_defaults(run=_hierarchy_widths)


def _add_release_arguments(parser: argparse.ArgumentParser) -> None:
    """What every release command takes: ``--db``, the source, the family, ``--key``
    and ``--quasi``."""
    parser.add_argument("--db", required=True, help=_DB_HELP)
    parser.add_argument("source", help=_SOURCE_HELP)
    parser.add_argument("family", help=_FAMILY_HELP)
    parser.add_argument("--key", required=True, help=_KEY_HELP)
    parser.add_argument("--quasi", nargs="+", required=True, help=_QUASI_HELP)
    parser.add_argument("--dataset", default=None, help=_DATASET_HELP)


def _add_preview_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """``preview``: one dry run per setting of a sweep, as a table."""
    pre = commands.add_parser(
        "preview",
        help="dry-run the next version of a family for each setting of a sweep "
        "(--sweep k=3,5,10) and print one row per setting; writes nothing",
    )
    pre.add_argument("model", choices=["ke", "lhd"], help="ke: (k,e); lhd: l-diversity")
    _add_release_arguments(pre)
    pre.add_argument(
        "--sensitive", nargs="+", required=True, help="the sensitive column(s) (ke: one)"
    )
    pre.add_argument(
        "--sweep",
        action="append",
        required=True,
        help="NAME=V1,V2,... (ke: k, e, policy; lhd: l, algorithm, max_suppression, "
        "recoding, policy); "
        "repeat it to cross settings",
    )
    pre.add_argument("--k", type=int, default=None, help=_K_HELP)
    pre.add_argument("--e", type=float, default=None, help=_E_HELP)
    pre.add_argument(
        "--policy",
        default=None,
        choices=sorted({"auto", "merge", "defer", "paper", *LHD_POLICIES}),
        help="ke: auto, merge, defer, paper; lhd: " + ", ".join(LHD_POLICIES),
    )
    pre.add_argument("--l", type=int, default=None, help=_L_HELP)
    pre.add_argument(
        "--algorithm",
        default=None,
        choices=["auto", "greedy", "scalable", "refine"],
        help=_ALGORITHM_HELP,
    )
    pre.add_argument("--max-suppression", type=float, default=None, help=_MAX_SUPPRESSION_HELP)
    pre.add_argument("--recoding", default=None, choices=RECODINGS, help=_RECODING_HELP)
    pre.add_argument("--domain", default=None, help=_DOMAIN_HELP)
    pre.set_defaults(run=_preview)


def _add_read_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands that only read (never create a database): ``query``, ``audit`` and
    ``report``."""
    query = commands.add_parser("query", help="answer an aggregate query with hard intervals")
    query.add_argument("--db", required=True, help=_READ_DB_HELP)
    query.add_argument("sql", help="an aggregate query over release families")
    query.add_argument("--explain", action="store_true", help="print the rewritten SQL only")
    query.add_argument("--dialect", default="duckdb", help="with --explain: target SQL dialect")
    query.set_defaults(run=_query)

    audit = commands.add_parser(
        "audit", help="replay an attacker over every release of the family's domain"
    )
    audit.add_argument("--db", required=True, help=_READ_DB_HELP)
    audit.add_argument("family", help="a release family (its whole domain is audited)")
    audit.add_argument(
        "--records", action="store_true", help="print JSON with the exposed keys (owner only)"
    )
    audit.set_defaults(run=_audit)

    report = commands.add_parser(
        "report",
        help="write a self-contained HTML report of a family's versions "
        "(needs matplotlib: pip install 'sqlanon[report]')",
    )
    report.add_argument("--db", required=True, help=_READ_DB_HELP)
    report.add_argument("family", help="the release family")
    report.add_argument("--out", default=None, help="HTML file (default <family>_report.html)")
    report.add_argument(
        "--sweep",
        action="append",
        default=None,
        help="NAME=V1,V2,... as for preview: also compare these settings of the next "
        "version, one dry run each (nothing is written); repeat it to cross settings",
    )
    report.set_defaults(run=_report)

    export_ = commands.add_parser(
        "export", help="write an analyst's copy of a family's or domain's releases"
    )
    export_.add_argument("--db", required=True, help=_READ_DB_HELP)
    export_.add_argument("name", help="a family, or a domain (every family of it)")
    export_.add_argument("path", help="a new file (or folder), or an earlier export to add to")
    export_.add_argument(
        "--format",
        choices=["duckdb", "parquet"],
        default="duckdb",
        help="a DuckDB file, or a folder of Parquet files (default duckdb)",
    )
    export_.set_defaults(run=_export)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except SqlanonError as exc:
        print(f"sqlanon: {first_line(exc)}", file=sys.stderr)
        if isinstance(exc, InternalError) and exc.__cause__ is not None:
            traceback.print_exception(exc.__cause__, file=sys.stderr)  # for the report
        return 2
    except BrokenPipeError:
        # The reader went away (`| head -1`): stop quietly, like other Unix tools. Point
        # stdout at /dev/null so the interpreter's final flush does not complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:
        if not is_database_error(exc):
            raise
        print(f"sqlanon: {type(exc).__name__}: {first_line(exc)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
