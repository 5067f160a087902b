"""``sqlanon report`` and the release progress lines, through the real CLI, with the
report rendered in headless Chromium (a missing browser fails: scripts/test installs it)."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import sqlanon
from sqlanon.demo import load_adult
from sqlanon.errors import ConfigError
from sqlanon.report.page import write_report
from tests.test_release_duckdb import make_people

HIERARCHIES = Path(sqlanon.__file__).parent / "data" / "hierarchies"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
IMAGES = re.compile(r'<img id="(\w+)"[^>]*?src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def cli(*args: str, progress: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SQLANON_PROGRESS": "1" if progress else "0"}
    return subprocess.run(
        [sys.executable, "-m", "sqlanon.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


# A progress line without its timing: "sqlanon: rows read: 80 in 0.12 s (667/s)".
TIMING = re.compile(r" in [0-9]+\.[0-9]{2} s \(([0-9,]+( rows)?/s|-)\)$")


def released(*args: str) -> tuple[dict, list[str]]:
    """Run a release command with its progress shown (stderr is a pipe here:
    SQLANON_PROGRESS=1); its JSON summary and its stderr lines, timings cut off."""
    done = cli(*args, progress=True)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    for line in lines[:3]:
        assert TIMING.search(line), line
    return json.loads(done.stdout), [TIMING.sub("", line) for line in lines]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A DuckDB file with a (k,e) family and an lHD family of two versions each, released
    through the CLI; the progress lines of every release are kept."""
    path = tmp_path_factory.mktemp("report") / "clinic.duckdb"
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    make_people(con, 60)
    load_adult(con, "adult_all")
    con.execute("CREATE TABLE adult AS SELECT * FROM adult_all ORDER BY id LIMIT 900")
    sqlanon.load_hierarchies(con, "adult", str(HIERARCHIES))
    con.close()
    ke = ["release-ke", "--db", str(path), "people", "people_ke", "--key", "id"]
    ke += ["--sensitive", "salary", "--quasi", "age", "sex", "--k", "3", "--e", "10"]
    lhd = ["release-lhd", "--db", str(path), "adult", "adult_l", "--key", "id"]
    lhd += ["--quasi", "age", "marital_status", "sex", "--sensitive", "capital_loss"]
    lhd += ["--l", "3"]
    progress = []
    summaries = []
    for version in (1, 2):
        for args in (ke, lhd):
            summary, lines = released(*args)
            assert summary["version"] == version
            summaries.append(summary)
            progress.append(lines)
        if version == 2:
            break
        con = duckdb.connect(str(path))
        make_people(con, 40, start=60)
        con.execute("INSERT INTO adult SELECT * FROM adult_all ORDER BY id OFFSET 900")
        con.close()
    return {"path": path, "summaries": summaries, "progress": progress}


def test_releases_print_progress_to_stderr(db: dict) -> None:
    for summary, lines in zip(db["summaries"], db["progress"], strict=True):
        read = summary["rows_published"] + summary["held_back"] + summary["suppressed"]
        assert lines[:3] == [
            f"sqlanon: rows read: {read:,}",
            f"sqlanon: groups built: {summary['groups']:,}",
            f"sqlanon: rows written: {summary['rows_published']:,}",
        ]
        assert lines[3:] == [
            f"sqlanon: {summary['family']} version {summary['version']} published: "
            f"{summary['inserted']} inserted, 0 deleted, 0 quasi changed, 0 value changed, "
            f"0 ghosts; {summary['left_out']} left out ({summary['held_back']} held back, "
            f"{summary['suppressed']} suppressed; 0 of them by the chain rule)"
        ]


def report(db: dict, family: str, out: Path) -> str:
    done = cli("report", "--db", str(db["path"]), family, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"report of {family} written to {out}"
    return out.read_text(encoding="utf-8")


def images(page: str) -> dict[str, bytes]:
    """The embedded charts, decoded; each must be a PNG."""
    found = {name: base64.b64decode(data, validate=True) for name, data in IMAGES.findall(page)}
    for name, png in found.items():
        assert png.startswith(PNG_MAGIC), name
    return found


def version_rows(page: str) -> list[list[str]]:
    table = page.split('<table id="versions">', 1)[1].split("</table>", 1)[0]
    body = table.split("<tbody>", 1)[1]
    return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>.*?</tr>", body)]


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.fail(
            "chromium is not installed: run scripts/test (it installs Debian's chromium), "
            "or apt-get install -y chromium",
            pytrace=False,
        )
    return found


def headless(report_file: Path, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    work.mkdir(exist_ok=True)
    return subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={work / 'profile'}",
            *args,
            report_file.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def check_renders(report_file: Path, work: Path, expected_images: int) -> None:
    """Every image of the report decodes in Chromium, and the page screenshots."""
    probe = work / "probe.html"
    work.mkdir(exist_ok=True)
    probe.write_text(
        report_file.read_text(encoding="utf-8").replace(
            "</body>",
            "<script>window.addEventListener('load', () => { document.title = "
            "'widths:' + [...document.images].map(i => i.naturalWidth).join(',') + "
            "';page:' + document.documentElement.scrollWidth; });"
            "</script></body>",
        ),
        encoding="utf-8",
    )
    dom = headless(
        probe, work, "--virtual-time-budget=10000", "--window-size=1200,2000", "--dump-dom"
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    title = re.search(r"<title>widths:([0-9,]*);page:([0-9]+)</title>", dom.stdout)
    assert title, dom.stdout[:2000]
    widths = [int(w) for w in title.group(1).split(",") if w]
    assert len(widths) == expected_images and all(w > 0 for w in widths), widths
    # the page fits a 1,200 px window: a wide versions table scrolls inside its box
    assert int(title.group(2)) <= 1200, f"the page is {title.group(2)} px wide"

    shot = work / "shot.png"
    done = headless(report_file, work, f"--screenshot={shot}", "--window-size=1200,2000")
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes().startswith(PNG_MAGIC)
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[:2] == (2000, 1200)
    assert pixels.std() > 0.05  # not a blank page


def test_ke_report(db: dict, tmp_path: Path) -> None:
    out = tmp_path / "people.html"
    page = report(db, "people_ke", out)
    rows = version_rows(page)
    assert [r[0] for r in rows] == ["1", "2"]
    header = page.split("<thead>", 1)[1].split("</thead>", 1)[0]
    for column in (
        "held back",
        "groups",
        "sum of errors",
        "static optimum (all rows)",
        "× optimum of published rows",
        "audit: exposed",
    ):
        assert f"<th>{column}</th>" in header
    first, second = (s for s in db["summaries"] if s["family"] == "people_ke")
    assert rows[0][3] == str(first["rows_published"]) and rows[1][2] == "100"
    assert all(r[-2] == "30/30" for r in rows)  # every workload query answered
    assert [r[-3] for r in rows] == ["0", "0"] and "The audit could not run" not in page
    assert 'id="exposed"' not in page and 'class="warning"' not in page
    assert "release(s) of domain <code>main.people</code>" in page
    assert "finds no exposed record" in page
    charts = images(page)
    assert sorted(charts) == ["spread", "widths"]
    assert "<script" not in page and "http" not in page  # self-contained, nothing fetched
    assert 'id="widths-caption"' in page and "relative\nwidth is the interval" in page
    check_renders(out, tmp_path / "chromium", 2)


def test_lhd_report(db: dict, tmp_path: Path) -> None:
    out = tmp_path / "adult.html"
    page = report(db, "adult_l", out)
    rows = version_rows(page)
    assert [r[0] for r in rows] == ["1", "2"] and rows[1][2] == "1,427"
    header = page.split("<thead>", 1)[1].split("</thead>", 1)[0]
    for column in ("suppressed", "classes", "precision loss", "DM", "audit: exposed"):
        assert f"<th>{column}</th>" in header
    assert [r[-3] for r in rows] == ["0", "0"]  # audit: exposed
    assert 'id="exposed"' not in page and "finds no exposed record" in page
    assert "Class sizes per version" in page
    # interval answers over lHD releases (sqlanon.rewriter.lhd_intervals): the workload
    # is charted
    assert all(r[-2] == "30/30" for r in rows) and "Not available:" not in page
    assert sorted(images(page)) == ["spread", "widths"]
    assert 'id="widths-caption"' in page and "relative\nwidth is the interval" in page
    check_renders(out, tmp_path / "chromium", 2)


def sweep_rows(page: str) -> tuple[list[str], list[list[str]]]:
    table = page.split('<table id="sweep">', 1)[1].split("</table>", 1)[0]
    header = re.findall(r"<th>(.*?)</th>", table.split("</thead>", 1)[0])
    body = table.split("<tbody>", 1)[1]
    return header, [re.findall(r"<td>(.*?)</td>", r) for r in re.findall(r"<tr>.*?</tr>", body)]


@pytest.mark.parametrize(
    ("family", "sweep", "model"),
    [
        ("people_ke", ["k=2,3,1000"], "ke"),
        ("adult_l", ["l=2,3", "recoding=local,global"], "lhd"),
    ],
)
def test_the_report_compares_settings_of_the_next_version(
    db: dict, tmp_path: Path, family: str, sweep: list[str], model: str
) -> None:
    """``--sweep``: the family's next version, then a new family in its domain per
    setting, one dry run each, as ``sqlanon.preview`` gives them with the newest
    version's other parameters; the database is left as it was."""
    con = duckdb.connect(str(db["path"]), read_only=True)
    before = con.execute("SELECT count(*) FROM sqlanon.members").fetchone()
    last, domain = con.execute(
        "SELECT CAST(parameters AS VARCHAR), domain FROM sqlanon.releases WHERE family = ? "
        "ORDER BY version DESC LIMIT 1",
        [family],
    ).fetchone()
    con.close()
    out = tmp_path / "sweep.html"
    args = [a for item in sweep for a in ("--sweep", item)]
    done = cli("report", "--db", str(db["path"]), family, "--out", str(out), *args)
    assert done.returncode == 0, done.stderr
    header, rows = sweep_rows(out.read_text(encoding="utf-8"))
    parameters = json.loads(last)
    varied = {name: values.split(",") for name, values in (i.split("=") for i in sweep)}
    kept = {
        n: parameters[n]
        for n in ("key", "quasi", "sensitive", "e", "policy", "algorithm", "max_suppression")
        if n in parameters and n not in varied
    }
    typed = {n: [int(v) if n in "kl" else v for v in vs] for n, vs in varied.items()}
    first = next(iter(varied))
    con = duckdb.connect(str(db["path"]))
    own = {n: parameters[n] for n in varied if n != first}
    expected = sqlanon.preview(
        con, parameters["source"], family, model, {first: [parameters[first]]},
        domain=domain, **kept, **own,
    )  # fmt: skip
    expected = [{**own, **expected[0]}]
    expected += sqlanon.preview(
        con, parameters["source"], f"{family}_try1", model, typed, domain=domain, **kept
    )
    assert con.execute("SELECT count(*) FROM sqlanon.members").fetchone() == before
    con.close()
    assert len(rows) == len(expected) == 1 + math.prod(len(v) for v in varied.values())
    assert [r[header.index("as")] for r in rows] == ["next version"] + ["new family"] * (
        len(rows) - 1
    )
    assert expected[0]["refused"] is None and expected[0]["rows_published"] > 0
    for row, want in zip(rows, expected, strict=True):
        shown = dict(zip(header, row, strict=True))
        for name in varied:
            value = want[name]
            assert shown[name] == (f"{value:,}" if isinstance(value, int) else str(value))
        published = want["rows_published"]
        assert shown["rows_published"] == ("–" if published is None else f"{published:,}")
    if model == "ke":  # k = 1000 cannot be met by 100 people
        assert rows[-1][header.index("refused")] != "–"


def test_exposed_records_stand_out(tmp_path: Path) -> None:
    """The seeds' published rule (policy paper) on MODELS.md's counter-example: v2 puts
    two new records in a group holding two whole v1 groups; subtracting them pins both.
    The report opens with a warning block naming the attacks, counts and releases."""
    path = tmp_path / "leak.duckdb"
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    con.execute("CREATE TABLE pay (id INTEGER, age INTEGER, salary INTEGER)")
    values = [2, 16, 25, 26, 31, 32, 48, 50, 53, 56, 58]
    con.executemany(
        "INSERT INTO pay VALUES (?, ?, ?)", [(i, 20 + i, v) for i, v in enumerate(values)]
    )
    args = {"key": "id", "sensitive": "salary", "quasi": ["age"], "k": 3, "e": 5}
    sqlanon.release_ke(con, "pay", "pay_paper", policy="paper", **args)
    con.execute("INSERT INTO pay VALUES (11, 31, 22), (12, 32, 30)")
    sqlanon.release_ke(con, "pay", "pay_paper", policy="paper", **args)
    con.close()
    out = tmp_path / "leak.html"
    page = report({"path": path}, "pay_paper", out)
    warning = page.index('<div class="warning" id="exposed">')
    assert warning < page.index("<h2>Versions</h2>")  # first thing after the title
    block = page[warning : page.index("</div>", warning)]
    assert "Warning: 2 record(s) exposed" in block
    assert "<b>cell</b>" in block and "<b>subtraction</b>" in block
    assert "<b>comparison</b>" not in block  # every group keeps 3 distinct values
    table = block.split('<table id="exposed-releases">', 1)[1]
    assert re.findall(r"<tr><td>(.*?)</td>", table) == ["pay_paper v2"]
    cells = re.findall(r"<td>(.*?)</td>", table)
    assert cells == ["pay_paper v2", "2", "2", "2", "2", "2", "0", "0"]
    assert [r[-3] for r in version_rows(page)] == ["0", "2"]
    assert sorted(images(page)) == ["spread", "widths"]


def test_held_back_rows_are_explained(tmp_path: Path) -> None:
    """Policy defer keeps groups as they are: a lone new row waits until enough others
    arrive to form a valid piece with it."""
    path = tmp_path / "defer.duckdb"
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    con.execute("CREATE TABLE pay (id INTEGER, age INTEGER, salary INTEGER)")
    con.executemany("INSERT INTO pay VALUES (?, ?, ?)", [(i, 20 + i, 10 * i) for i in range(9)])
    args = {"key": "id", "sensitive": "salary", "quasi": ["age"], "k": 3, "e": 5}
    arrivals = [[], [(100, 50, 500)], [(101, 51, 600)], [(102, 52, 700)]]
    held = []
    for rows in arrivals:
        if rows:
            con.executemany("INSERT INTO pay VALUES (?, ?, ?)", rows)
        held.append(sqlanon.release_ke(con, "pay", "pay_d", policy="defer", **args)["held_back"])
    con.close()
    assert held == [0, 1, 2, 0]
    page = report({"path": path}, "pay_d", tmp_path / "defer.html")
    table = page.split('<table id="waiting">', 1)[1].split("</table>", 1)[0]
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr><td>.*?</tr>", table)]
    assert rows == [
        ["1", "0", "–", "0"],
        ["2", "1", "1 new", "0"],
        ["3", "2", "1 since v2, 1 new", "0"],
        ["4", "0", "–", "0"],
    ]
    assert "to form a valid piece yet" in page and "absent from this version" in page


def test_report_api_and_errors(db: dict, tmp_path: Path) -> None:
    from sqlanon.report.page import write_report

    con = duckdb.connect(str(db["path"]))
    try:
        written = write_report(con, "people_ke", tmp_path / "api.html")
        assert written == tmp_path / "api.html" and images(written.read_text())
        with pytest.raises(ConfigError, match="no release family 'nope'"):
            write_report(con, "nope", tmp_path / "x.html")
    finally:
        con.close()
    bad = cli("report", "--db", str(db["path"]), "nope")
    assert bad.returncode == 2 and bad.stderr.startswith("sqlanon: no release family")
    assert "Traceback" not in bad.stderr


def test_missing_matplotlib_is_a_clear_error(
    db: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlanon.report.page import write_report

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    con = duckdb.connect(str(db["path"]))
    try:
        with pytest.raises(ConfigError, match=r"pip install 'sqlanon\[report\]'"):
            write_report(con, "people_ke", tmp_path / "x.html")
    finally:
        con.close()


@pytest.mark.postgres
def test_report_over_postgres(
    pg_url: str, pg_db: str, pg_python_root: Path, tmp_path: Path
) -> None:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    url = pg_url.rsplit("/", 1)[0] + "/" + conninfo_to_dict(pg_db)["dbname"]
    done = cli("install-postgres", url, "--python-root", str(pg_python_root))
    assert done.returncode == 0, done.stderr
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE people (id integer, age integer, sex text, salary integer)")
    release = ["release-ke", "--db", url, "people", "people_ke", "--key", "id"]
    release += ["--sensitive", "salary", "--quasi", "age", "sex", "--k", "3", "--e", "10"]
    for first, count in ((1, 60), (61, 40)):
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO people SELECT i, 20 + mod(i * 7, 50), CASE mod(i, 3) WHEN 0 "
                "THEN 'F' ELSE 'M' END, mod(i * 37, 60) * 10 "
                "FROM generate_series(%s::int, %s::int) AS i",
                [first, first + count - 1],
            )
        summary, lines = released(*release)
        assert lines[0] == f"sqlanon: rows read: {first + count - 1}"
    out = tmp_path / "pg.html"
    done = cli("report", "--db", url, "people_ke", "--out", str(out))
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    rows = version_rows(page)
    assert [r[0] for r in rows] == ["1", "2"] and rows[1][2] == "100"
    assert all(r[-2] == "30/30" for r in rows) and [r[-3] for r in rows] == ["0", "0"]
    assert sorted(images(page)) == ["spread", "widths"]


def test_a_release_made_with_a_seed_is_flagged(tmp_path: Path) -> None:
    """Issue 23: releases no longer take a seed, but a catalog may hold ones made by an
    sqlanon that did; their rows link to their keys for whoever guesses the seed."""
    path = tmp_path / "seeded.duckdb"
    con = duckdb.connect(str(path))
    sqlanon.install(con)
    con.execute("CREATE TABLE pay (id INTEGER, age INTEGER, salary INTEGER)")
    con.executemany("INSERT INTO pay VALUES (?, ?, ?)", [(i, 20 + i, 10 * i) for i in range(9)])
    args = {"key": "id", "sensitive": "salary", "quasi": ["age"], "k": 3, "e": 5}
    sqlanon.release_ke(con, "pay", "pay_s", **args)
    con.close()
    clean = report({"path": path}, "pay_s", tmp_path / "clean.html")
    assert 'id="seeded"' not in clean
    con = duckdb.connect(str(path))
    con.execute(
        "UPDATE sqlanon.releases SET parameters = json_merge_patch(parameters, '{\"seeded\": true}')"
    )
    con.close()
    page = report({"path": path}, "pay_s", tmp_path / "seeded.html")
    block = page[page.index('<div class="warning" id="seeded">') :]
    assert "1 release(s) made with a seed" in block and "pay_s v1" in block


@pytest.mark.parametrize("sensitive", [["diagnosis", "salary"], ["diagnosis"]])
def test_an_lhd_report_sums_its_first_numeric_sensitive_attribute(
    tmp_path: Path, sensitive: list[str]
) -> None:
    """A text attribute first (a diagnosis) is not summed: the workload takes the first
    numeric one, or says there is none; the report is written either way."""
    con = duckdb.connect(str(tmp_path / "clinic.duckdb"))
    sqlanon.install(con)
    make_people(con, 60)
    con.execute("ALTER TABLE people ADD COLUMN diagnosis VARCHAR")
    con.execute("UPDATE people SET diagnosis = ['flu', 'cold', 'asthma'][1 + id % 3]")
    (tmp_path / "people_hierarchy_sex.csv").write_text("F;*\nM;*\n")
    sqlanon.load_hierarchies(con, "people", str(tmp_path))
    sqlanon.hierarchy_widths(con, "people", "age", [10, 20])
    sqlanon.release_lhd(
        con, "people", "people_l", key="id", quasi=["age", "sex"], sensitive=sensitive, l=2
    )
    page = write_report(con, "people_l", tmp_path / "r.html").read_text()
    con.close()
    if "salary" in sensitive:
        assert "AVG/SUM queries of <code>salary</code>" in page and 'id="widths"' in page
    else:
        assert "Not available: no sensitive attribute of this family is numeric" in page
