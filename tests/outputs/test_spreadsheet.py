"""A CSV export as a spreadsheet reads it: LibreOffice (headless) converts the file, and every
time keeps its exact value; headers name units. Skips without soffice."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from html import unescape
from pathlib import Path

import pytest

from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import export
from pipeline.warehouse.store import Warehouse
from tests.readers.test_exported_timeline import HAND_TRACE

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


def _wall_clock_run(root: Path) -> tuple[Warehouse, str, str]:
    """A warehouse with an exported run on the wall clock (a hand-written trace_view.json,
    times in us since 1970 with ns decimals) and the sample (a monotonic clock)."""
    dump = root / "x_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    dump.mkdir(parents=True)
    (dump / "trace_view.json").write_text(json.dumps([e for e in HAND_TRACE[:12]]))
    wh = Warehouse(root / "wh")
    with wh.writer():
        (wall,) = run_roots(wh, [root / "x_ascend_pt"])
        (mono,) = run_roots(wh, [SAMPLE])
    assert wall.status == "built" and mono.status == "built"
    return wh, wall.run_id, mono.run_id


def test_csv_time_columns_name_units_and_wall_clock_times_are_exact_text(tmp_path):
    wh, wall, mono = _wall_clock_run(tmp_path)
    out = tmp_path / "acl.csv"
    export(wh, "acl_api", [wall], "csv", str(out))
    header, row = out.read_text().splitlines()[:2]
    assert header.split(",")[3] == "Start Time(ns)"
    # HAND_TRACE's aclnnAddmm: ts "1780295077844841.970" us = 1780295077844841970 ns
    assert row.split(",")[3] == "2026-06-01T06:24:37.844841970Z"
    export(wh, "ai_core_metrics", [mono], "csv", str(out))
    assert "Time(ns)" in out.read_text().splitlines()[0].split(",")
    export(wh, "acl_api", [mono, wall], "csv", str(out))
    lines = out.read_text().splitlines()
    assert lines[0].startswith("Run ID,Collected (UTC),Device,")
    collected = {ln.split(",")[0]: ln.split(",")[1] for ln in lines[1:]}
    assert collected[wall].startswith("2026-06-01T06:24:37") and collected[mono]


def _cells(xlsx: Path) -> list[list[str]]:
    """The first sheet's cells as text (shared strings resolved), row by row."""
    with zipfile.ZipFile(xlsx) as z:
        strings = [
            unescape(re.sub(r"<[^>]+>", "", s))
            for s in re.findall(r"<si>(.*?)</si>", z.read("xl/sharedStrings.xml").decode(), re.S)
        ]
        sheet = z.read("xl/worksheets/sheet1.xml").decode()
    rows = []
    for r in re.findall(r"<row [^>]*>(.*?)</row>", sheet, re.S):
        row: list[str] = []
        for attrs, body in re.findall(r"<c ([^>]*?)(?:/>|>(.*?)</c>)", r, re.S):
            letters = re.search(r'r="([A-Z]+)\d+"', attrs).group(1)
            col = 0
            for ch in letters:
                col = col * 26 + ord(ch) - 64
            v = re.search(r"<v>(.*?)</v>", body or "")
            row += [""] * (col - 1 - len(row))
            row.append("" if v is None else strings[int(v.group(1))] if 't="s"' in attrs else v.group(1))
        rows.append(row)
    return rows


def test_libreoffice_reads_every_time_exactly(tmp_path):
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if not soffice:
        pytest.skip("needs LibreOffice (soffice)")
    wh, wall, mono = _wall_clock_run(tmp_path / "w")
    for table, runs, column, want in (
        ("acl_api", [wall], "Start Time(ns)", {"2026-06-01T06:24:37.844841970Z"}),
        (
            "op_summary",
            [wall],
            "Task Start Time(ns)",
            {"2026-06-01T06:24:37.844859030Z", "2026-06-01T06:24:37.844870500Z"},
        ),
    ):
        csv = tmp_path / f"{table}.csv"
        export(wh, table, runs, "csv", str(csv))
        rows = _convert(soffice, csv, tmp_path)
        i = rows[0].index(column)
        assert {r[i] for r in rows[1:]} == want
    # a monotonic run: its ns are numbers LibreOffice keeps to the last digit
    csv = tmp_path / "acl_mono.csv"
    export(wh, "acl_api", [mono], "csv", str(csv))
    text = [ln.split(",") for ln in csv.read_text().splitlines()]
    rows = _convert(soffice, csv, tmp_path)
    i = rows[0].index("Start Time(ns)")
    assert [r[i] for r in rows[1:]] == [t[i] for t in text[1:]]
    d = rows[0].index("Duration(us)")
    assert [float(r[d]) for r in rows[1:]] == [float(t[d]) for t in text[1:]]


def _convert(soffice: str, csv: Path, tmp: Path) -> list[list[str]]:
    out = tmp / "xlsx"
    out.mkdir(exist_ok=True)
    r = subprocess.run(
        [
            soffice,
            "--headless",
            f"-env:UserInstallation={(tmp / 'lo-profile').as_uri()}",
            "--convert-to",
            "xlsx",
            "--outdir",
            str(out),
            str(csv),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    xlsx = out / (csv.stem + ".xlsx")
    assert xlsx.exists(), r.stderr
    return _cells(xlsx)
