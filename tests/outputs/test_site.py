"""profetl site: synthetic nights with a regression planted in one workload and pure noise in
another; the pages checked as text, as files whose links resolve, and in headless Chromium."""

from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import numpy as np
import pytest

from pipeline.outputs.site import build_site
from pipeline.warehouse.store import Warehouse
from tests.helpers.chromium import CHROMIUM, NO_CHROMIUM, console_lines, dump_dom
from tests.helpers.history import START_US, base_tables, load_nights

NIGHTS = 20
PLANTED = 13  # the first night of workload A at the new level
STEP = 1.2  # +20 % on every tracked time of A from that night on
NOISE = 0.01  # 1 % night-to-night noise on both workloads
A, B = "synthetic/planted", "synthetic/noise"

pytestmark = pytest.mark.slow  # ingests and builds the nights (docs/testing.md)


def _night(i: int) -> str:
    return (datetime.fromtimestamp(START_US / 1e6, UTC) + timedelta(days=i)).date().isoformat()


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("site-base")
    return base_tables(root)


@pytest.fixture(scope="module")
def site(base, tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    rng = np.random.default_rng(46)
    a = 1 + rng.normal(0, NOISE, NIGHTS)
    a[PLANTED:] *= STEP
    b = 1 + rng.normal(0, NOISE, NIGHTS)
    wh = Warehouse(root / "wh")
    # A's software changed with its regression; B's run columns change nowhere
    versions = [{"platform_version": "8.0.RC2" if i < PLANTED else "8.0.RC3"} for i in range(NIGHTS)]
    load_nights(wh, *base, {A: list(a), B: list(b)}, columns={A: versions})
    built = build_site(wh, root / "site")
    return wh, built, root / "site"


class _Page(HTMLParser):
    """The page's links (href, src), its change rows and its grid cells."""

    def __init__(self):
        super().__init__()
        self.links, self.changes, self.cells, self.lineage = [], [], [], []
        self._row = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.links += [a[k] for k in ("src", "href") if a.get(k)]
        if tag == "tr" and a.get("class") == "change":
            self.changes.append((a["data-night"], a["data-workload"], a["data-metric"], a["data-direction"]))
        if tag == "tr" and "data-workload" in a and a.get("class") != "change":
            self._row = a["data-workload"]
        if tag == "li" and "data-column" in a:
            self.lineage.append((self.changes[-1][1], a["data-column"]))
        if tag == "td" and "data-night" in a:
            self.cells.append((self._row, a["data-night"], a["class"]))


def _parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_the_front_page_lists_the_planted_change_at_its_night_and_nothing_for_noise(site):
    _, built, out = site
    page = _parse(out / "index.html")
    assert page.changes, "no change listed"
    assert {(night, w, d) for night, w, _, d in page.changes} == {(_night(PLANTED), A, "up")}
    metrics = {m for _, _, m, _ in page.changes}
    # every tracked kind of the base run moved: its AI Core time, its ops, its APIs, its steps
    assert "run:aicore_time" in metrics
    assert any(m.startswith("op:") for m in metrics) and any(m.startswith("api:") for m in metrics)
    assert "iteration:Iteration Time mean" in metrics
    # the grid: A's cell of that night is marked slower, every other cell unchanged
    marked = {(w, n) for w, n, cls in page.cells if "up" in cls.split() or "down" in cls.split()}
    assert marked == {(A, _night(PLANTED))}
    assert len(page.cells) == 2 * min(NIGHTS, 14)
    # the run columns that changed between the nights around it: the version, named once
    assert page.lineage == [(A, "platform_version")]
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "<b>platform_version</b>: 8.0.RC2 → 8.0.RC3" in html


def test_changes_parquet_is_read_by_sql_with_the_planted_size(site):
    _, built, out = site
    rows = duckdb.sql(
        f"SELECT workload, night::VARCHAR, direction, relative, z FROM '{out / 'changes.parquet'}' "
        "WHERE metric = 'run:aicore_time'"
    ).fetchall()
    assert len(rows) == 1
    workload, night, direction, relative, z = rows[0]
    assert (workload, night, direction) == (A, _night(PLANTED), "up")
    # the level after is 1.2 times the level before, up to the noise of the segments' means
    assert abs(relative - (STEP - 1)) < 4 * NOISE * STEP
    assert z > 5
    assert built.changes == duckdb.sql(f"SELECT count(*) FROM '{out / 'changes.parquet'}'").fetchall()[0][0]


def test_every_link_resolves_to_a_file_of_the_site_and_nothing_is_remote(site):
    _, built, out = site
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == 1 + 2 + 2 * NIGHTS  # front page, two workloads, a report per run
    for page in pages:
        for link in _parse(page).links:
            assert not re.match(r"^[a-z]+:|^//", link), (page, link)  # no http:, file:, //host
            if link.startswith("#"):
                continue
            assert (page.parent / link.split("#")[0]).resolve().is_file(), (page, link)
    # a workload page's points open their runs' reports
    wl = next((out / "workloads").glob("synthetic_planted-*.html")).read_text(encoding="utf-8")
    blob = json.loads(
        wl[
            wl.index('id="site-charts">') + len('id="site-charts">') : wl.index(
                "</script>", wl.index('id="site-charts"')
            )
        ]
    )
    hrefs = {h for c in blob for t in c["figure"]["data"] for h in t["customdata"]}
    assert hrefs == {f"../runs/night{i:04d}-w0.html" for i in range(NIGHTS)}
    assert all((out / "workloads" / h).resolve().is_file() for h in hrefs)


def test_a_new_night_rebuilds_only_what_it_changes(base, tmp_path):
    """A site built, then one more night loaded: only the new runs are measured and get report
    pages; a build with nothing new writes no page. Through the command line, as cron runs it."""
    from typer.testing import CliRunner

    from pipeline.cli.main import app

    wh = Warehouse(tmp_path / "wh")
    load_nights(wh, *base, {A: [1.0, 1.01, 0.99, 1.0, 1.02, 0.98], B: [1.0, 0.99, 1.01, 1.0, 1.0, 1.01]})
    out = tmp_path / "site"

    def site() -> dict:
        r = CliRunner().invoke(app, ["site", "--out", str(out), "--json", "-w", str(wh.path)])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    first = site()
    assert (first["runs"], first["workloads"], first["runs_measured"], first["reports_written"]) == (
        12,
        2,
        12,
        12,
    )
    again = site()
    assert (again["runs_measured"], again["reports_written"], again["pages_written"]) == (0, 0, [])
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.html")}
    load_nights(wh, *base, {A: [1.0], B: [1.0]}, first=6)
    third = site()
    assert (third["runs"], third["runs_measured"], third["reports_written"], third["reports_kept"]) == (
        14,
        2,
        2,
        12,
    )
    assert sorted(third["pages_written"]) == sorted(
        ["index.html"] + [p for p in first["pages_written"] if p.startswith("workloads/")]
    )
    assert all(p.stat().st_mtime_ns == t for p, t in before.items() if "/runs/" in p.as_posix())
    r = CliRunner().invoke(app, ["site", "--out", str(out / "index.html"), "-w", str(wh.path)])
    assert r.exit_code == 2 and "not a folder" in r.output


def _page_requests(netlog: Path) -> list[str]:
    """The URLs of the requests the page made, from Chromium's network log: a request of the
    browser itself (its update and time checks) has no origin; one of a page from a file: URL
    has the opaque origin "null"."""
    d = json.loads(netlog.read_text(encoding="utf-8"))
    start = d["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        e["params"]["url"]
        for e in d["events"]
        if e["type"] == start and (e.get("params") or {}).get("initiator", "not an origin") != "not an origin"
    ]


def _headless(page: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    netlog = tmp_path / f"{page.stem}.netlog.json"
    p = dump_dom(page.as_uri(), tmp_path / "profile", netlog=netlog)
    return p, _page_requests(netlog)


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_headless_chromium_loads_the_pages_offline_without_errors_or_requests(site, tmp_path):
    """The front page and a workload page (which draws its charts with the shared library) in
    headless Chromium with no network: no console message from the page, no error recorded by
    the page, every chart drawn, and the network log holds no request the page made (a page
    that loads two remote files shows that the log would hold them)."""
    _, built, out = site
    control = tmp_path / "control.html"
    control.write_text(
        '<!DOCTYPE html><title>c</title><img src="http://example.invalid/x.png">'
        '<script src="https://cdn.example.invalid/a.js"></script>'
    )
    got = sorted(_headless(control, tmp_path)[1])
    assert got == ["http://example.invalid/x.png", "https://cdn.example.invalid/a.js"]
    workload = next((out / "workloads").glob("synthetic_planted-*.html"))
    for page in (out / "index.html", workload):
        p, requests = _headless(page, tmp_path)
        body = re.search(r'<body(?: data-charts="(\d+)")? data-errors="([^"]*)"', p.stdout)
        assert body, p.stdout[:500]
        assert body.group(2) == ""
        if page == workload:
            ids = re.findall(r'<div class="chart" id="([^"]+)"', page.read_text(encoding="utf-8"))
            assert int(body.group(1)) == len(ids) >= 4
            for chart in ids:  # each chart div holds Plotly's drawing
                start = p.stdout.index(f'id="{chart}"')
                assert 'class="main-svg"' in p.stdout[start : start + 20_000], chart
        assert console_lines(p) == []
        assert requests == [], page


def test_report_nights_writes_the_reports_of_the_last_nights_only(base, tmp_path):
    wh = Warehouse(tmp_path / "wh")
    load_nights(wh, *base, {A: [1.0, 1.01, 0.99, 1.0, 1.02, 0.98]})
    out = tmp_path / "site"
    b = build_site(wh, out, report_nights=2)
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["night0004-w0.html", "night0005-w0.html"]
    assert b.reports_written == 2
    page = next((out / "workloads").glob("*.html"))
    for link in _parse(page).links:  # no link to a report that was not written
        assert link.startswith("#") or (page.parent / link).resolve().is_file(), link
    wl = page.read_text(encoding="utf-8")
    blob = wl[wl.index('id="site-charts">') :]
    assert '"../runs/night0003-w0.html"' not in blob and '"../runs/night0005-w0.html"' in blob
    # --since: the runs before it leave the site, and their pages with them
    since = datetime.fromtimestamp(START_US / 1e6, UTC) + timedelta(days=5)
    b = build_site(wh, out, since=since, report_nights=2)
    assert b.runs == 1 and sorted(p.name for p in (out / "runs").iterdir()) == ["night0005-w0.html"]


def test_the_grid_names_the_year_when_nights_span_years_and_keeps_undated_runs():
    """Nights of two years are headed by whole dates (08-18 of 2023 and of 2024 would look
    alike), and a run whose collection time is unknown (an export without a wall clock) has a
    cell in a "no date" column rather than a row of empty cells."""
    from pipeline.outputs.site import _front

    def run(run_id, workload, at):
        return {"run_id": run_id, "workload": workload, "collected_at": at}

    runs = [
        run("a", "w1", datetime(2023, 8, 18, 6, tzinfo=UTC)),
        run("b", "w1", datetime(2024, 8, 18, 6, tzinfo=UTC)),
        run("c", "w2", None),
    ]
    page = _front(runs, [], {"a", "c"}, ["w1", "w2"], None)
    assert page["night_labels"] == ["2023-08-18", "2024-08-18", "no date"]
    cells = {row["workload"]: [c and c["run_id"] for c in row["cells"]] for row in page["grid"]}
    assert cells == {"w1": ["a", "b", None], "w2": [None, None, "c"]}
    one_year = _front([runs[1], run("d", "w1", datetime(2024, 9, 1, tzinfo=UTC))], [], set(), ["w1"], None)
    assert one_year["night_labels"] == ["08-18", "09-01"]  # (one year: month and day)
