"""Each SQL statement is one file (issue 24): ``sqlanon/sql/<name>.sql`` where the engines
agree, the words they spell differently written as fields (``sqltext.DIALECT_WORDS``), and
``sqlanon/<engine>/sql/<name>.sql`` only where an engine's statement differs by more."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from sqlanon import sqltext

ENGINES = tuple(sqltext.DIALECT_WORDS)
PACKAGE = Path(sqltext.__file__).resolve().parent
COMMON = sorted((PACKAGE / "sql").glob("*.sql"))
WORDS = {word for words in sqltext.DIALECT_WORDS.values() for word in words}


def code(text: str) -> str:
    """The statement without its comments, its whitespace collapsed."""
    lines = [line for line in text.splitlines() if not line.strip().startswith("--")]
    return " ".join(" ".join(lines).split())


def own_files(engine: str) -> list[Path]:
    return sorted((PACKAGE / engine / "sql").glob("*.sql"))


@pytest.mark.parametrize("engine", ENGINES)
def test_every_common_statement_is_spelled_for_every_engine_that_reads_it(engine: str) -> None:
    for path in COMMON:
        text = sqltext.load(engine, path.stem)  # raises on a word the engine cannot spell
        left = set(re.findall(r"\{([a-z_]+)\}", text)) & WORDS
        assert not left, f"{engine}: {path.name} keeps {left}"


@pytest.mark.parametrize("engine", ENGINES)
def test_an_engine_file_is_not_the_common_statement_again(engine: str) -> None:
    for own in own_files(engine):
        common = PACKAGE / "sql" / own.name
        if not common.is_file():
            continue
        try:
            spelled = sqltext.spell(common.read_text(), engine)
        except KeyError:  # a word the engine does not have: its own file is its statement
            continue
        assert code(own.read_text()) != code(spelled), f"{engine}: {own.name}"


def test_no_two_engines_have_the_same_own_statement() -> None:
    for a, b in itertools.combinations(ENGINES, 2):
        theirs = {p.name: code(p.read_text()) for p in own_files(b)}
        same = [p.name for p in own_files(a) if theirs.get(p.name) == code(p.read_text())]
        assert same == [], f"{a} and {b} both have {same}: make it one file in sqlanon/sql/"


def test_spell_leaves_other_fields_and_refuses_a_missing_word(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert sqltext.spell("CAST({key} AS {text_type})", "spark") == "CAST({key} AS STRING)"
    monkeypatch.setitem(sqltext.DIALECT_WORDS, "spark", {})
    with pytest.raises(KeyError, match="text_type"):
        sqltext.spell("CAST({key} AS {text_type})", "spark")
