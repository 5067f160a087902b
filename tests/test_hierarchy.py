"""Generalization hierarchies: ARX CSV files, numeric widths, encoding, errors."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from sqlanon.errors import ConfigError
from sqlanon.hierarchy import Hierarchy, load_directory, value_key

# The ARX Adult hierarchies as bundled with sqlanon (unchanged copies, see ATTRIBUTION.md).
ADULT = Path(__file__).resolve().parents[1] / "sqlanon" / "data" / "hierarchies"
BUNDLED_CSV = ADULT.parent / "adult_capital_loss.csv"
# Levels including level 0, as documented in the ARX data's SOURCE.md.
ARX_LEVELS = {
    "age": 5,
    "education": 4,
    "marital-status": 3,
    "native-country": 3,
    "occupation": 3,
    "workclass": 3,
    "race": 2,
    "sex": 2,
    "salary-class": 2,
}


def adult_columns() -> dict[str, list[str]]:
    """The bundled Adult records' columns, named like the hierarchy files."""
    with BUNDLED_CSV.open(newline="") as f:
        rows = list(csv.DictReader(f))
    renamed = {"income": "salary-class"}
    return {
        renamed.get(name, name.replace("_", "-")): [r[name] for r in rows]
        for name in rows[0]
        if renamed.get(name, name.replace("_", "-")) in ARX_LEVELS
    }


def test_every_arx_adult_hierarchy_parses_with_documented_depth() -> None:
    hierarchies = load_directory(ADULT, "adult")
    assert {a: h.height + 1 for a, h in hierarchies.items()} == ARX_LEVELS
    for attribute, h in hierarchies.items():
        assert h.attribute == attribute
        assert h.labels(h.height) == ("*",)
        for raw, labels in h.table.items():
            assert labels[0] == raw and labels[-1] == "*"
    assert len(hierarchies["native-country"].table) == 41  # file without final newline


def test_arx_hierarchies_cover_every_value_of_the_bundled_adult_records() -> None:
    hierarchies = load_directory(ADULT, "adult")
    columns = adult_columns()
    assert set(columns) == set(ARX_LEVELS) and len(columns["age"]) == 1427
    for attribute, values in columns.items():
        codes = hierarchies[attribute].encode(values)
        assert codes.shape == (1427, hierarchies[attribute].height + 1)


def test_codes_index_the_labels_of_each_level() -> None:
    h = Hierarchy.from_arx_csv("education", ADULT / "adult_hierarchy_education.csv")
    values = ["Bachelors", "11th", "Doctorate", "Bachelors"]
    codes = h.encode(values)
    for value, row in zip(values, codes, strict=True):
        assert tuple(h.label(level, int(c)) for level, c in enumerate(row)) == h.table[value]
    assert (codes[0] == codes[3]).all()
    assert (codes[:, -1] == 0).all()


def test_parent_of_a_label_is_the_same_on_every_row() -> None:
    h = Hierarchy.from_arx_csv("age", ADULT / "adult_hierarchy_age.csv")
    codes = h.encode(range(1, 101))
    for level in range(1, h.height):
        for child in np.unique(codes[:, level]):
            assert np.unique(codes[codes[:, level] == child, level + 1]).size == 1


def test_text_source_and_identical_duplicate_rows() -> None:
    h = Hierarchy.from_arx_csv("sex", "Male;*\nFemale;*\nMale;*\n")
    assert h.height == 1 and set(h.table) == {"Male", "Female"}


def test_inconsistent_depth_names_the_row() -> None:
    with pytest.raises(ConfigError, match=r"row 2 'b;B;\*'.*3 columns, row 1 has 2"):
        Hierarchy.from_arx_csv("x", "a;*\nb;B;*\n")


def test_the_top_level_is_one_label_for_every_value() -> None:
    with pytest.raises(ConfigError, match=r'row 2 .*last column is "top" here but "\*" in row 1'):
        Hierarchy.from_arx_csv("x", "a;A;*\nb;B;top\n")


def test_a_top_level_other_than_star_is_read_as_star() -> None:
    """ARX accepts any single top value (``Any``); sqlanon publishes it as ``*``."""
    h = Hierarchy.from_arx_csv("x", "a;A;Any\nb;B;Any\n")
    assert h.table == {"a": ("a", "A", "*"), "b": ("b", "B", "*")} and h.height == 2
    with pytest.raises(ConfigError, match=r'"\*" is a label below the top level "Any"'):
        Hierarchy.from_arx_csv("x", "a;*;Any\nb;B;Any\n")


def test_label_with_two_parents_names_both_rows() -> None:
    text = "a;A;AB;*\nb;B;AB;*\nc;A;CD;*\n"
    with pytest.raises(ConfigError, match=r'row 3 .*level-1 label "A".*row 1'):
        Hierarchy.from_arx_csv("x", text)


def test_value_listed_twice_differently() -> None:
    with pytest.raises(ConfigError, match=r'value "a" is listed twice'):
        Hierarchy.from_arx_csv("x", "a;A;*\na;B;*\n")


def test_direct_construction_is_checked_too() -> None:
    with pytest.raises(ConfigError, match="one parent per level"):
        Hierarchy("x", {"a": ("a", "A", "P", "*"), "b": ("b", "A", "Q", "*")})


def test_missing_values_error_names_the_attribute_and_up_to_ten_values() -> None:
    h = Hierarchy.from_arx_csv("sex", ADULT / "adult_hierarchy_sex.csv")
    with pytest.raises(ConfigError, match=r"\"sex\" does not cover 1 value\(s\).*'male'"):
        h.encode(["Male", "male"])
    with pytest.raises(ConfigError) as info:
        h.encode([f"v{i:02d}" for i in range(13)] + ["Female"])
    message = str(info.value)
    assert "13 value(s)" in message and "'v09'" in message and "'v10'" not in message
    assert "and 3 more" in message


def test_missing_file_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot read the hierarchy"):
        Hierarchy.from_arx_csv("x", ADULT / "no_such_file.csv")


def test_from_widths_nests_intervals() -> None:
    h = Hierarchy.from_widths("age", [5, 10, 20], [23, 38, 40.0, 7])
    assert h.height == 4
    assert h.table["23"] == ("23", "[20, 25)", "[20, 30)", "[20, 40)", "*")
    assert h.table["38"] == ("38", "[35, 40)", "[30, 40)", "[20, 40)", "*")
    assert h.table["40"] == ("40", "[40, 45)", "[40, 50)", "[40, 60)", "*")
    assert h.table["7"] == ("7", "[5, 10)", "[0, 10)", "[0, 20)", "*")
    assert h.encode([23.0, 38]).shape == (2, 5)


def test_from_widths_handles_fractions_and_negatives() -> None:
    h = Hierarchy.from_widths("t", [0.5, 1], [-0.2, 1.75])
    assert h.table["-0.2"] == ("-0.2", "[-0.5, 0)", "[-1, 0)", "*")
    assert h.table["1.75"] == ("1.75", "[1.5, 2)", "[1, 2)", "*")


@pytest.mark.parametrize(
    ("widths", "values", "message"),
    [
        ([5, 12], [1], "12 is not a multiple of 5"),
        ([10, 5], [1], "5 is not a multiple of 10"),
        ([0], [1], "must be positive"),
        ([], [1], "are empty"),
        ([5], ["abc"], "'abc' is not a number"),
        ([5], [float("inf")], "not finite"),
    ],
)
def test_from_widths_rejects_bad_input(
    widths: list[float], values: list[object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Hierarchy.from_widths("age", widths, values)


def test_as_rows_lists_every_value_and_level() -> None:
    h = Hierarchy.from_arx_csv("m", "a;A;*\nb;A;*\n")
    assert h.as_rows() == [
        ("m", "a", 0, "a"),
        ("m", "a", 1, "A"),
        ("m", "a", 2, "*"),
        ("m", "b", 0, "b"),
        ("m", "b", 1, "A"),
        ("m", "b", 2, "*"),
    ]


def test_load_directory_requires_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no adult_hierarchy_<attribute>.csv"):
        load_directory(tmp_path, "adult")
    (tmp_path / "demo_hierarchy_zip.csv").write_text("60632;6063*;*\n")
    assert list(load_directory(tmp_path, "demo")) == ["zip"]


@pytest.mark.parametrize(
    "dataset",
    ["*", "**/tenantB", "tenant?", "tenant[AB]", "../tenantB", "a/b", ".hidden", "-x", ""],
)
def test_load_directory_takes_a_plain_dataset_name_only(tmp_path: Path, dataset: str) -> None:
    (tmp_path / "tenantB_hierarchy_sex.csv").write_text("F;*\nM;*\n")
    with pytest.raises(ConfigError, match="letters, digits, _ and -"):
        load_directory(tmp_path, dataset)


def test_load_directory_reads_exact_names_in_the_folder_only(tmp_path: Path) -> None:
    """No pattern from the caller's text, no subfolder, no symbolic link: '*' once loaded
    another tenant's tenantB_hierarchy_sex.csv, '**/tenantB' searched subfolders."""
    (tmp_path / "tenantA_hierarchy_sex.csv").write_text("F;*\nM;*\n")
    (tmp_path / "tenantB_hierarchy_sex.csv").write_text("f;*\nm;*\n")
    (tmp_path / "tenantA_hierarchy_bad name.csv").write_text("x;*\n")
    (tmp_path / "tenantA_hierarchy_zip.csv.bak").write_text("x;*\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tenantA_hierarchy_age.csv").write_text("1;*\n")
    secret = tmp_path.parent / f"{tmp_path.name}_secret.txt"
    secret.write_text("password;*\n")
    (tmp_path / "tenantA_hierarchy_stolen.csv").symlink_to(secret)
    found = load_directory(tmp_path, "tenantA")
    assert list(found) == ["sex"] and set(found["sex"].table) == {"F", "M"}
    with pytest.raises(ConfigError, match="no sub_hierarchy_") as raised:
        load_directory(tmp_path, "sub")
    assert "password" not in str(raised.value)


def test_a_missing_an_unreadable_and_an_empty_folder_look_alike(tmp_path: Path) -> None:
    """The error shows the folder given and nothing about whether it exists."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("not a folder")
    messages = []
    for folder in [tmp_path / "missing", tmp_path / "empty", tmp_path / "file"]:
        with pytest.raises(ConfigError) as raised:
            load_directory(folder, "tenantA")
        messages.append(str(raised.value).replace(str(folder), "<folder>"))
    assert len(set(messages)) == 1, messages
    assert "does not exist, cannot be read, or holds no such file" in messages[0]


def test_a_missing_value_has_a_branch_of_its_own() -> None:
    """NULL (None, or NaN from a numeric column) is NULL below the top, '*' at the top:
    it meets another value only at '*'. Files and widths need nothing for it."""
    h = Hierarchy.from_arx_csv("m", "a;A;*\nb;A;*\n")
    codes = h.encode(["a", None, "b", float("nan"), None])
    assert [h.label(1, int(c)) for c in codes[:, 1]] == ["A", None, "A", None, None]
    assert [h.label(0, int(c)) for c in codes[:, 0]] == ["a", None, "b", None, None]
    assert {h.label(2, int(c)) for c in codes[:, 2]} == {"*"}
    assert codes[1].tolist() == codes[3].tolist() == codes[4].tolist()
    widths = Hierarchy.from_widths("age", [5], [23, None, float("nan")])
    assert list(widths.table) == ["23"]
    assert widths.label(1, int(widths.encode([None])[0, 1])) is None
    with pytest.raises(ConfigError, match="does not cover 1"):
        h.encode(["a", "NULL"])  # the text NULL is a value like any other


def test_value_key_normalizes_numbers() -> None:
    assert value_key(39) == value_key(39.0) == value_key(np.int64(39)) == value_key("39") == "39"
    assert value_key(0.5) == "0.5"
    assert value_key(b"x") == "x"
