"""bench/report.py: each bench script rewrites only its own section of BENCHMARKS.md."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "bench" / "report.py"
_SPEC = importlib.util.spec_from_file_location("bench_report", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
report = importlib.util.module_from_spec(_SPEC)
sys.modules["bench_report"] = report
_SPEC.loader.exec_module(report)


def test_creates_the_file_with_header_and_section(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    report.replace_section("alpha", "| a |\n|---|\n| 1 |\n", path)
    text = path.read_text()
    assert text.startswith(report.HEADER)
    assert text.endswith("<!-- begin:alpha -->\n| a |\n|---|\n| 1 |\n<!-- end:alpha -->\n")


def test_replaces_only_its_own_section(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    report.replace_section("alpha", "first alpha", path)
    report.replace_section("beta", "first beta", path)
    path.write_text(path.read_text() + "\nhand-written notes\n")
    report.replace_section("alpha", "second alpha\nover two lines", path)
    text = path.read_text()
    assert "first alpha" not in text
    assert "<!-- begin:alpha -->\nsecond alpha\nover two lines\n<!-- end:alpha -->" in text
    assert "<!-- begin:beta -->\nfirst beta\n<!-- end:beta -->" in text
    assert text.index("begin:alpha") < text.index("begin:beta")
    assert text.endswith("hand-written notes\n")
    assert text.count("# Benchmarks") == 1


def test_same_body_twice_is_a_fixed_point(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    report.replace_section("alpha", "body", path)
    once = path.read_text()
    report.replace_section("alpha", "body", path)
    assert path.read_text() == once


def test_appends_a_missing_section_to_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Mine\nno trailing newline")
    report.replace_section("gamma", "g", path)
    assert (
        path.read_text()
        == "# Mine\nno trailing newline\n\n<!-- begin:gamma -->\ng\n<!-- end:gamma -->\n"
    )


def test_prefix_names_do_not_collide() -> None:
    text = report.splice(report.splice("", "ke", "short"), "ke_release", "long")
    text = report.splice(text, "ke", "short again")
    assert "<!-- begin:ke -->\nshort again\n<!-- end:ke -->" in text
    assert "<!-- begin:ke_release -->\nlong\n<!-- end:ke_release -->" in text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<!-- begin:x -->\nno end\n", "no <!-- end:x --> marker"),
        ("<!-- begin:x -->\n<!-- end:x -->\n<!-- begin:x -->\n<!-- end:x -->\n", "2 times"),
    ],
)
def test_refuses_a_damaged_file(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        report.splice(text, "x", "body")


def test_refuses_bad_names_and_bodies_with_markers() -> None:
    with pytest.raises(ValueError, match="section name"):
        report.splice("", "two words", "body")
    with pytest.raises(ValueError, match="its own markers"):
        report.splice("", "x", "<!-- end:x -->")
