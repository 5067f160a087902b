"""The CLI's edges: a locked file, a closed pipe, a mistyped path, the help text."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from sqlanon.cli import build_parser, main
from tests.test_duckdb_surface import _released

ROOT = Path(__file__).resolve().parent.parent
QUERY = "SELECT sex, COUNT(*), SUM(salary) AS s FROM people_ke GROUP BY sex"


def _sqlanon(*args: str) -> list[str]:
    return [sys.executable, "-m", "sqlanon.cli", *args]


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = Path(tmp_path_factory.mktemp("cli")) / "people.duckdb"
    _released(path)
    return path


def test_a_file_locked_by_another_process_is_one_line(released: Path) -> None:
    holder = duckdb.connect(str(released))  # this process holds the write lock
    try:
        done = subprocess.run(
            _sqlanon("query", "--db", str(released), QUERY),
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
    finally:
        holder.close()
    assert done.returncode == 2
    assert done.stderr.startswith("sqlanon: cannot open")
    assert "lock" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_closed_pipe_ends_quietly(released: Path) -> None:
    """``sqlanon query --explain ... | head -1``: the reader is gone before we write."""
    process = subprocess.Popen(
        _sqlanon("query", "--db", str(released), "--explain", QUERY),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read()
    process.stderr.close()
    assert process.wait(timeout=120) != 0
    assert stderr == b""


@pytest.mark.parametrize(
    "command",
    [
        ["query", QUERY],
        ["query", "--explain", QUERY],
        ["audit", "people_ke"],
        ["report", "people_ke"],
        [
            "release-ke",
            "people",
            "people_ke",
            "--key",
            "id",
            "--sensitive",
            "s",
            "--quasi",
            "a",
            "--k",
            "2",
            "--e",
            "1",
        ],
        [
            "release-lhd",
            "people",
            "people_l",
            "--key",
            "id",
            "--quasi",
            "a",
            "--sensitive",
            "s",
            "--l",
            "2",
        ],
        ["erase", "people"],
        ["retire", "people_ke", "--keep", "1"],
        ["load-hierarchies", "adult"],
    ],
)
def test_commands_never_create_a_database_from_a_typo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    typo = tmp_path / "typo.duckdb"
    assert main([command[0], "--db", str(typo), *command[1:]]) == 2
    assert not typo.exists()
    err = capsys.readouterr().err
    assert err.startswith(f"sqlanon: no database file '{typo}'") and err.count("\n") == 1


def test_install_creates_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = tmp_path / "new.duckdb"
    assert main(["install", "--db", str(new)]) == 0
    assert new.exists() and "sqlanon installed in" in capsys.readouterr().out


def test_read_commands_still_read_an_existing_file(
    released: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", "--db", str(released), QUERY]) == 0
    assert "s_low" in capsys.readouterr().out


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def test_help_is_plain_text_and_every_db_option_says_what_it_takes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = build_parser()
    texts = [parser.format_help()]
    for name, sub in _subparsers(parser).items():
        texts.append(sub.format_help())
        for action in sub._actions:
            if "--db" in action.option_strings:
                assert action.help, f"{name} --db has no help"
    for text in texts:
        assert "``" not in text and ":class:" not in text
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "``" not in capsys.readouterr().out


def test_version_prints_the_version_and_exits_0() -> None:
    from sqlanon.version import __version__

    done = subprocess.run(
        _sqlanon("--version"), capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, f"sqlanon {__version__}")


def test_every_argument_has_help_and_required_ones_show_as_required() -> None:
    parser = build_parser()
    for name, sub in _subparsers(parser).items():
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"sqlanon {name} {action.dest} has no help text"
    for name in ("release-ke", "release-lhd", "preview"):
        usage = " ".join(_subparsers(parser)[name].format_usage().split())
        # a required option is shown outside brackets: "--quasi QUASI [QUASI ...]"
        assert "--quasi QUASI [QUASI ...]" in usage and "[--quasi" not in usage, usage
        assert "[--key" not in usage and "--key KEY" in usage


def test_install_postgres_without_arguments_says_what_to_give(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["install-postgres"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sqlanon: give a postgresql:// URL") and "--server-side" in err
    assert "not both" not in err
    assert main(["install-postgres", "postgresql://x/y", "--server-side"]) == 2
    assert "not both" in capsys.readouterr().err


def test_hierarchy_widths_command_stores_a_numeric_hierarchy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "w.duckdb"
    assert main(["install", "--db", str(path)]) == 0
    assert main(["hierarchy-widths", "--db", str(path), "people", "age", "5", "10", "20"]) == 0
    assert '"widths": [5.0, 10.0, 20.0]' in capsys.readouterr().out
    con = duckdb.connect(str(path))
    try:
        rows = con.execute("SELECT dataset, attribute, widths FROM sqlanon.hierarchy_widths")
        assert [(d, a, json.loads(w)) for d, a, w in rows.fetchall()] == [
            ("people", "age", [5.0, 10.0, 20.0])
        ]
    finally:
        con.close()
    assert main(["hierarchy-widths", "--db", str(path), "people", "age", "5", "7"]) == 2
    assert "7.0 is not a multiple of 5.0" in capsys.readouterr().err


def test_report_without_matplotlib_names_the_extra(released: Path, tmp_path: Path) -> None:
    """matplotlib made unimportable in a real CLI run (as on an install without the
    [report] extra)."""
    code = (
        "import sys; sys.modules['matplotlib'] = None; from sqlanon.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "report", "--db", str(released), "people_ke", "--out",
         str(tmp_path / "r.html")],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "pip install 'sqlanon[report]'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


RELEASE = ["people", "people_ke2", "--key", "id", "--sensitive", "salary", "--quasi", "age",
           "sex", "--k", "3", "--e", "10"]  # fmt: skip


def test_release_progress_shows_on_a_terminal_only(tmp_path: Path) -> None:
    """Progress lines (count, time, rate) on stderr when it is a terminal (a real pty);
    none when it is a pipe."""
    import os
    import pty

    path = tmp_path / "p.duckdb"
    _released(path)
    env = {k: v for k, v in os.environ.items() if k != "SQLANON_PROGRESS"}
    piped = subprocess.run(
        _sqlanon("release-ke", "--db", str(path), *RELEASE),
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert "rows read" not in piped.stderr and len(piped.stderr.splitlines()) == 1

    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        _sqlanon("release-ke", "--db", str(path), *RELEASE[:1], "people_ke3", *RELEASE[2:]),
        stdout=subprocess.PIPE, stderr=secondary, cwd=ROOT, env=env,
    )  # fmt: skip
    os.close(secondary)
    assert process.stdout is not None
    process.stdout.read()
    process.stdout.close()
    assert process.wait(timeout=120) == 0
    seen = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # the pty is closed once the child has exited
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    lines = seen.decode().splitlines()
    timed = r"in [0-9]+\.[0-9]{2} s \(([0-9,]+( rows)?/s|-)\)"
    assert re.fullmatch(rf"sqlanon: rows read: 60 {timed}", lines[0]), lines
    assert re.fullmatch(rf"sqlanon: groups built: [0-9,]+ {timed}", lines[1]), lines
    assert re.fullmatch(rf"sqlanon: rows written: [0-9,]+ {timed}", lines[2]), lines
    assert "people_ke3 version 1 published" in lines[3]
