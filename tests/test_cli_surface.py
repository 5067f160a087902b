"""The CLI's edges: a locked file, a closed pipe, a mistyped path, the help text."""

from __future__ import annotations

import argparse
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
