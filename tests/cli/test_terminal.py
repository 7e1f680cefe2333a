"""Terminal output at a real width: no value split across lines, runs one line each, and
progress that names the phase and counts bytes and steps."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from pipeline import progress
from pipeline.cli import common
from pipeline.cli.main import app
from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import fetch
from pipeline.warehouse.store import Warehouse
from tests.helpers.history import build_history

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    return build_history(
        tmp_path_factory.mktemp("term"), [{"seed": 1, "devices": 2}, {"seed": 2}, {"seed": 3}]
    )


def _at_width(monkeypatch, width: int) -> io.StringIO:
    buf = io.StringIO()
    monkeypatch.setattr(
        common,
        "out",
        common._StdoutConsole(file=buf, width=width, soft_wrap=True, force_terminal=False, color_system=None),
    )
    return buf


def _run(*args) -> None:
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output


def test_show_at_120_columns_splits_no_value(three, monkeypatch):
    wh, nights = three
    buf = _at_width(monkeypatch, 120)
    _run("show", nights[0].run_id, "ai_core_metrics", "--limit", "5", "--warehouse", wh.path)
    text = buf.getvalue()
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= 120
    assert "more column(s) not shown" in text and "--json" in text
    # every row of the table is one line holding each shown value whole
    _, t = fetch(wh, "ai_core_metrics", [nights[0].run_id], devices=[0])
    body = [ln for ln in lines if ln.startswith("│")]
    assert len(body) == 5 * 2  # five rows for each of the two devices
    for row, line in zip(t.to_pylist()[:5], body):
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells[2] == row["op_name"] and cells[3] == str(row["ts_ns"])


def test_runs_is_one_line_per_run_at_100_columns(three, monkeypatch):
    wh, nights = three
    buf = _at_width(monkeypatch, 100)
    _run("runs", "--warehouse", wh.path)
    lines = buf.getvalue().splitlines()
    assert max(len(ln) for ln in lines) <= 100
    for n in nights:
        (line,) = [ln for ln in lines if n.run_id in ln]  # the whole id, on one line
        assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", line) and "built" in line
    assert len([ln for ln in lines if ln.startswith("│")]) == len(nights)
    assert "profetl runs --json" in buf.getvalue()


def test_fit_columns_keeps_priority_and_never_narrows_a_value():
    headers = ["Run ID", "Source", "Status"]
    rows = [["r" * 24, "s" * 60, "built"]]
    shown, hidden = common.fit_columns(headers, rows, 40, priority=[0, 2, 1])
    assert shown == [0, 2] and hidden == [1]
    assert common.fit_columns(headers, rows, 200) == ([0, 1, 2], [])
    assert common._header_lines("Bytes skipped", 5) == "Bytes\nskipped"


def test_progress_reports_phases_bytes_and_steps(tmp_path):
    seen = []
    previous = progress.listen(lambda **kw: seen.append(kw))
    try:
        wh = Warehouse(tmp_path / "wh")
        with wh.writer():
            (o,) = run_roots(wh, [SAMPLE])
    finally:
        progress.listen(previous)
    assert o.status == "built"
    phases = [(k["phase"], k["total"], k["unit"]) for k in seen if "phase" in k]
    assert [p for p, _, _ in phases] == ["ingest", "build"]
    size = sum(f.stat().st_size for f in SAMPLE.rglob("*") if f.is_file())
    assert phases[0][1:] == (size, "bytes") and phases[1][2] == "steps"
    start = next(i for i, k in enumerate(seen) if k.get("phase") == "build")
    decoded = sum(k.get("advance", 0) for k in seen[:start])
    assert decoded == o.ingest.row["bytes_decoded"] > 0 and decoded <= size
    steps = [k for k in seen[start:] if k.get("advance")]
    assert len(steps) == phases[1][1]
    assert any(str(k.get("step", "")).startswith("marts/") for k in seen[start:])


def test_progress_line_on_a_terminal(tmp_path, monkeypatch):
    """The live line itself: phase, amount and step, rendered by rich on stderr."""
    buf = io.StringIO()
    monkeypatch.setattr(common, "err", Console(file=buf, width=120, force_terminal=True, color_system=None))
    monkeypatch.setattr(common, "interactive", lambda: True)
    with common.job_progress() as next_dump:
        next_dump("d")
        progress.report(phase="ingest", total=4096, unit="bytes")
        progress.report(advance=2048)
        progress.report(phase="build", total=3, unit="steps")
        progress.report(advance=1, step="staging/stg_x")
    assert progress._listener is None
    text = buf.getvalue()
    assert "dump 1 d: build" in text and "1/3 steps" in text and "staging/stg_x" in text
    assert "2.0 KB of 4.0 KB" in text or "ingest" in text


def test_show_prints_avg_ns_as_whole_ns_as_msprof(three):
    """Avg(ns) shows as msprof's runtime_api shows it, Time(ns) / Calls in integers (cut toward
    zero), beside the integer Time(ns), Min(ns) and Max(ns); never as 3.03793e+06."""
    from pipeline.outputs.cells import cell
    from pipeline.outputs.sections import sections

    wh, nights = three
    fractional = 0
    for table, count in (("api_statistic", "Count"), ("runtime_api_summary", "Calls")):
        for s in sections(wh, nights[0].run_id, table):
            time_i, count_i, avg_i = (s.headers.index(h) for h in ("Time(ns)", count, "Avg(ns)"))
            for row in s.rows:
                time_ns, n = int(row[time_i]), int(row[count_i])
                assert row[avg_i] == str(time_ns // n), (table, row)
                fractional += time_ns % n != 0
    assert fractional  # some averages are not whole ns, so the test can tell
    assert cell(3037934.5, "ns") == "3037934" and cell(1e16 + 0.0, "ns") == "10000000000000000"


def test_show_prints_percentages_with_three_decimals(three):
    """Time(%) shows with three decimals, as msprof's files round it, so the column lines up
    (with 6 significant digits it read 10.5304 above 8.62788); the shares of a device's rows are
    those of its Time(ns) column."""
    from pipeline.outputs.cells import cell
    from pipeline.outputs.sections import sections

    wh, nights = three
    shown = sections(wh, nights[0].run_id, "task_scheduler")
    assert shown and all(s.rows for s in shown)  # (no rows would pass the loop unchecked)
    for s in shown:
        pct_i, time_i = s.headers.index("Time(%)"), s.headers.index("Time(ns)")
        total = sum(int(r[time_i]) for r in s.rows)
        for row in s.rows:
            assert re.fullmatch(r"\d+\.\d{3}", row[pct_i]), row
            assert abs(float(row[pct_i]) - 100 * int(row[time_i]) / total) <= 0.0005 + 1e-9, row
    assert cell(8.627884, "%") == "8.628" and cell(100.0, "%") == "100.000" and cell(8.627884) == "8.62788"


def test_show_prints_no_number_in_exponent_notation(three):
    """Floats show without an exponent, like the integer columns beside them (api_statistic's
    Variance of a real export showed 6.71628e+07 beside 18428416, and 2.5e-07)."""
    from pipeline.outputs.cells import cell
    from pipeline.outputs.sections import TABLES, sections

    wh, nights = three
    cells = [v for t in TABLES for s in sections(wh, nights[0].run_id, t) for row in s.rows for v in row]
    assert len(cells) > 1000 and any("." in v for v in cells)  # floats among them
    assert not [v for v in cells if re.fullmatch(r"-?[\d.]+e[+-]\d+", v)]
    assert cell(67162816.3) == "67162816" and cell(999999.5) == "1000000"
    assert cell(2.5e-07) == "0.00000025" and cell(-3.2e-06) == "-0.0000032" and cell(0.0) == "0"
    assert cell(1.234567891e-5) == "0.0000123457" and cell(12345.678) == "12345.7"


def test_show_names_an_unknown_chip_n_a(tmp_path):
    """An export that names no chip: show's first line says N/A, as runs and report do, not
    Python's None."""
    import json

    from tests.helpers.built import build_dump

    trace = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "X", "name": "k", "pid": 1, "tid": 3, "ts": "1000.000", "dur": "2.500",
         "args": {"Task Id": 7, "Stream Id": 3, "Task Type": "AI_CORE"}},
    ]  # fmt: skip
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "trace_view.json").write_text(json.dumps(trace))
    run, _ = build_dump(tmp_path / "wh", tmp_path / "export")
    assert run["chip"] is None  # (the case this test is about)
    r = CliRunner().invoke(app, ["show", run["run_id"], "op_summary", "--warehouse", str(tmp_path / "wh")])
    assert r.exit_code == 0, r.output
    first = r.stdout.splitlines()[0]
    assert first.startswith(f"Run {run['run_id']}  (N/A, devices ") and "None" not in first, first
