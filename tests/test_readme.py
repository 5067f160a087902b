"""Every snippet of the README and of the guides in ``docs/`` runs as it stands, in order,
from a directory that is not the repository: a new user's first steps.

A fenced block's info string says how it runs:

- ``python``: executed; the blocks of one chain of files share one namespace;
- ``sql``: each statement run on that namespace's ``con`` (a DuckDB connection);
- ``console``: each ``$ sqlanon ...`` line run through the CLI in this process (exit 0);
  lines without ``$ `` are output shown to the reader;
- not run here: ``bash`` (installs and the repository's scripts, which CI runs itself),
  ``yaml``, ``text`` (file formats, output, diagrams), ``python sketch`` (an outline of
  an interface in docs/ARCHITECTURE.md, not code to run), and blocks for another engine, tagged
  ``sql postgres``, ``python spark``, ``sql dbt``: they need a server, a JVM or dbt, and
  the same calls run in ``tests/test_postgres_*.py``, ``tests/test_spark.py`` and
  ``tests/test_dbt.py`` (``examples/dbt`` is the dbt guide's project).

A block with any other info string, or a file with runnable blocks that no chain runs,
fails the test, so a new snippet cannot go unchecked by accident.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from sqlanon.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```([\w ]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
RUN = {"python", "sql", "console"}
NOT_RUN = {"bash", "yaml", "text", "python sketch", "sql postgres", "python spark", "sql dbt"}
# Files whose blocks run together, in order, in one fresh directory and namespace.
CHAINS = {
    "readme": ["README.md"],
    "owner-analyst": ["docs/OWNER.md", "docs/ANALYST.md"],
}


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path: Path) -> list[tuple[str, str]]:
    return [(m.group(1).strip(), m.group(2)) for m in BLOCK.finditer(path.read_text())]


def statements(block: str) -> list[str]:
    """One SQL block's statements: comments dropped, split at ``;`` ending a line."""
    lines = [line.split("--", 1)[0] if "'--" not in line else line for line in block.splitlines()]
    return [
        s.strip() for s in re.split(r";\s*$", "\n".join(lines), flags=re.MULTILINE) if s.strip()
    ]


def commands(block: str) -> list[list[str]]:
    """A console block's ``$ `` lines (``\\`` continues a line), split as a shell would."""
    found: list[list[str]] = []
    pending = ""
    for line in block.splitlines():
        if pending:
            line, pending = pending + " " + line.strip(), ""
        elif not line.startswith("$ "):
            continue
        else:
            line = line[2:]
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        found.append(shlex.split(line))
    return found


def run_chain(names: list[str]) -> dict[str, Any]:
    """Run every runnable block of ``names`` in the current directory; returns the
    namespace, with ``_results``: (file, SQL statement, rows) for every SQL statement."""
    namespace: dict[str, Any] = {"_results": []}
    for name in names:
        for lang, code in blocks(ROOT / name):
            if lang == "python":
                exec(compile(code, name, "exec"), namespace)  # noqa: S102
            elif lang == "sql":
                con = namespace["con"]
                for statement in statements(code):
                    namespace["_results"].append(
                        (name, statement, con.execute(statement).fetchall())
                    )
            elif lang == "console":
                for argv in commands(code):
                    assert argv[0] == "sqlanon", f"{name}: a console line runs sqlanon only: {argv}"
                    assert cli_main(argv[1:]) == 0, f"{name}: {shlex.join(argv)} failed"
    return namespace


def sql_result(namespace: dict[str, Any], start: str) -> Any:
    """The JSON of the first SQL statement run that starts with ``start``."""
    for _, statement, rows in namespace["_results"]:
        if statement.startswith(start):
            return json.loads(rows[0][0])
    raise AssertionError(f"no statement starts with {start!r}")


def test_every_block_is_run_or_says_why_not() -> None:
    chained = {name for names in CHAINS.values() for name in names}
    for path in documents():
        kinds = {lang for lang, _ in blocks(path)}
        assert kinds <= RUN | NOT_RUN, f"{path.name}: unknown block kinds {kinds - RUN - NOT_RUN}"
        name = str(path.relative_to(ROOT))
        assert not kinds & RUN or name in chained, f"{name} has runnable blocks no chain runs"


def test_the_readme_runs_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = run_chain(CHAINS["readme"])
    assert json.loads(namespace["con"].execute("SELECT sqlanon_audit('adult_ke')").fetchone()[0])
    namespace["con"].close()


def test_the_owner_and_analyst_guides_run_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = run_chain(CHAINS["owner-analyst"])
    first = sql_result(namespace, "SELECT sqlanon_release_ke('adult'")
    assert first["version"] == 1
    again = [json.loads(r[0][0]) for n, s, r in namespace["_results"] if "'adult_ke', key" in s]
    assert again[1].get("unchanged") is True
    assert all(r["exposed"] == 0 for r in sql_result(namespace, "SELECT sqlanon_audit('adult_ke')"))
    assert sql_result(namespace, "SELECT sqlanon_load_hierarchies('adult'")["attributes"]
    lhd = [
        json.loads(r[0][0])
        for n, s, r in namespace["_results"]
        if "sqlanon_release_lhd('adult'" in s
    ]
    assert [s["family"] for s in lhd] == ["adult_pgs", "adult_gzs"]
    assert all(
        r["exposed"] == 0 for r in sql_result(namespace, "SELECT sqlanon_audit('patients_lhd')")
    )
    assert (tmp_path / "patients_lhd_report.html").is_file()
    export = sql_result(namespace, "SELECT sqlanon_export('main.adult'")
    assert export["families"] == ["adult_gzs", "adult_ke", "adult_pgs"]
    answer = [r for n, s, r in namespace["_results"] if n == "docs/ANALYST.md"][0]
    assert answer and {row[0] for row in answer} <= {"Male", "Female"}
    for key in ("con", "analyst"):
        if key in namespace:
            namespace[key].close()
