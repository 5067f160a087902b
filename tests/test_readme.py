"""The README's DuckDB code blocks run as they stand, in order, from a directory that is
not the repository ("Use it" up to "PostgreSQL": a new user's first steps)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    start, end = text.index("\n## Use it\n"), text.index("\n### PostgreSQL\n")
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(text[start:end])]


def statements(block: str) -> list[str]:
    """One SQL block's statements: comments dropped, split at ``;`` ending a line."""
    lines = [line.split("--", 1)[0] if "'--" not in line else line for line in block.splitlines()]
    return [
        s.strip() for s in re.split(r";\s*$", "\n".join(lines), flags=re.MULTILINE) if s.strip()
    ]


def test_the_readme_blocks_run_verbatim_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = blocks()
    assert [lang for lang, _ in found] == ["python", "sql", "sql", "sql", "python", "sql"]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    results: list[Any] = []
    for lang, code in found:
        if lang == "python":
            exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102
            continue
        con = namespace["con"]
        for statement in statements(code):
            results.append(con.execute(statement).fetchall())
    namespace["con"].close()
    namespace["analyst"].close()
    assert os.path.isfile(tmp_path / "clinic.duckdb")
    export = json.loads(results[9][0][0])  # the analyst section starts from the export
    assert export["families"] == ["adult_gzs", "adult_ke", "adult_pgs"]
    first, again = (json.loads(results[i][0][0]) for i in (0, 1))
    assert first["version"] == 1 and again.get("unchanged") is True
    assert json.loads(results[3][0][0]) and all(
        r["exposed"] == 0 for r in json.loads(results[3][0][0])
    )
    assert json.loads(results[4][0][0])["attributes"]  # the bundled hierarchies were found
    lhd = [json.loads(results[i][0][0]) for i in (6, 7)]
    assert [s["family"] for s in lhd] == ["adult_pgs", "adult_gzs"]
    interval = results[10]
    assert {row[0] for row in interval} <= {"Male", "Female"} and interval
