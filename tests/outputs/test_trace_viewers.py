"""timeline as trace viewers read it: tracks that nest, flows that bind, speedscope's import
(replayed in Python, and the real one in headless Chromium where the machine has both),
each device's own inference, durations in args, and the clock the times are on."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from pipeline.outputs import trace as trace_module
from tests.helpers.trace import chrome_trace
from tests.helpers.trace_check import flow_errors, nesting_errors, speedscope_warnings


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from tests.helpers.history import build_history

    # two devices whose inferences do not line up; a second run from the msprof layout
    return build_history(tmp_path_factory.mktemp("tv"), [
        {"seed": 11, "devices": 2, "inferences": 7},
        {"seed": 4, "devices": 2, "inferences": 3, "drop_complete": 2},
    ])


def _threads(trace: dict) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_name"}


def test_tracks_nest_flows_bind_and_speedscope_imports_without_complaint(runs):
    wh, nights = runs
    for night in nights:
        for kw in ({}, {"inference": 2}, {"start": "100us", "end": "300us"}):
            events = chrome_trace(wh, night.run_id, **kw)["traceEvents"]
            assert [e for e in events if e["ph"] == "X"]
            assert nesting_errors(events) == []
            assert flow_errors(events) == []
            assert speedscope_warnings(events) == []


def test_ts_counts_exact_ns_from_the_origin(runs):
    wh, nights = runs
    trace = chrome_trace(wh, nights[0].run_id)
    origin = trace["otherData"]["ts_origin_ns"]
    truth = nights[0].truth
    assert origin == min(min(c.start_ns for c in truth.api_calls),
                         min(x.input[0] for x in truth.inferences))
    # the JSON text of ts is the exact decimal of (start_ns - origin) / 1000
    texts = {json.dumps(e["ts"]) for e in trace["traceEvents"] if e.get("cat") == "api"}
    want = {f"{(c.start_ns - origin) // 1000}.{(c.start_ns - origin) % 1000:03d}".rstrip("0").rstrip(".")
            for c in truth.api_calls}
    assert {t[:-2] if t.endswith(".0") else t for t in texts} == want
    assert "monotonic" in trace["otherData"]["clock"] and str(origin) in trace["otherData"]["clock"]


def test_clock_note_says_wall_clock_for_wall_clock_times():
    t0 = 1_767_225_600_123_456_789  # 2026-01-01T00:00:00.123456789Z
    note = trace_module._clock(t0)
    assert note.startswith("wall clock (UTC)") and "2026-01-01T00:00:00.123456789Z" in note
    assert "monotonic" not in note
    assert trace_module._clock(5_000_000_000).startswith("host monotonic raw")


def test_inference_window_is_each_devices_own(runs):
    wh, nights = runs
    truth = nights[0].truth
    spans = {}
    for x in truth.inferences:
        if x.infer_id == 4:
            spans[x.device_id] = (x.input[0], x.output[1])
    assert len(spans) == 2 and spans[0] != spans[1]
    trace = chrome_trace(wh, nights[0].run_id, inference=4)
    origin = trace["otherData"]["ts_origin_ns"]
    phases = [e for e in trace["traceEvents"] if e.get("cat") == "inference"]
    assert sorted((e["pid"], e["args"]["infer_id"]) for e in phases) == [(0, 4)] * 3 + [(1, 4)] * 3
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            lo, hi = spans[e["pid"]]
            assert round((e["ts"] + e["dur"]) * 1000) + origin >= lo and round(e["ts"] * 1000) + origin <= hi
    assert trace["otherData"]["window_ns_by_device"] == {str(d): list(s) for d, s in spans.items()}


def test_task_args_hold_durations(runs):
    wh, nights = runs
    truth = nights[0].truth
    trace = chrome_trace(wh, nights[0].run_id)
    origin = trace["otherData"]["ts_origin_ns"]
    want = {(x.device_id, x.stream_id, x.task_id, x.running_ns): x for x in truth.instances if x.complete_ns is not None}
    tasks = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "task"]
    assert len(tasks) == len(want)
    for e in tasks:
        x = want[(e["pid"], e["args"]["stream_id"], e["args"]["task_id"], round(e["ts"] * 1000) + origin)]
        assert e["args"]["running_dur_ns"] == x.complete_ns - x.running_ns
        if x.pending_ns is not None:
            assert e["args"]["pending_dur_ns"] == x.running_ns - x.pending_ns
        assert not {"waiting_ns", "pending_ns", "running_ns", "complete_ns"} & set(e["args"])


def test_track_ids_follow_the_track_order(runs):
    """Viewers that ignore thread_sort_index (Chrome DevTools) order tracks by tid: APIs,
    then inferences, then per stream its tasks and its states."""
    wh, nights = runs
    trace = chrome_trace(wh, nights[0].run_id)
    for pid in (0, 1):
        names = [n for (p, _), n in sorted(_threads(trace).items()) if p == pid]
        kinds = ["api" if " API " in n else "inf" if n == "Inferences" else n.split(" #")[0] for n in names]
        first_inf = kinds.index("inf")
        assert set(kinds[:first_inf]) == {"api"} and "api" not in kinds[first_inf:]
        streams = [k for k in kinds[first_inf + 1:]]
        order = [k for i, k in enumerate(streams) if i == 0 or streams[i - 1] != k]
        assert order == [f"Stream {s} {what}" for s in sorted({int(k.split()[1]) for k in order})
                         for what in ("tasks", "waiting", "pending", "running")
                         if f"Stream {s} {what}" in order]


def _speedscope() -> Path | None:
    env = os.environ.get("PROFETL_SPEEDSCOPE")
    roots = [Path(env)] if env else []
    npm = shutil.which("npm")
    if npm:
        try:
            roots.append(Path(subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=30).stdout.strip())
                         / "speedscope")
        except (OSError, subprocess.SubprocessError):
            pass
    for root in roots:
        for index in (root / "dist" / "release" / "index.html", root / "index.html"):
            if index.is_file():
                return index.parent
    return None


def test_speedscope_in_chromium_imports_the_trace_without_warnings(runs, tmp_path):
    """The real importer: speedscope's page in headless Chromium loads the trace over a
    loopback HTTP server; its console must report the import and no warning."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    app = _speedscope()
    if not chromium or app is None:
        pytest.skip("needs chromium and speedscope (npm install -g speedscope)")
    wh, nights = runs
    site = tmp_path / "site"
    shutil.copytree(app, site)
    trace_module.write_trace(wh, str(site / "trace.json"), nights[0].run_id)
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with tempfile.TemporaryDirectory() as profile:
            r = subprocess.run(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=8000",
                 f"--screenshot={tmp_path / 'shot.png'}", "--window-size=1200,800",
                 f"{base}/index.html#profileURL={base}/trace.json"],
                capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
    console = [line for line in r.stderr.splitlines() if "CONSOLE" in line]
    assert any("Importing as Trace Event Format" in line for line in console), r.stderr[-2000:]
    assert any("import:" in line for line in console), console
    bad = [line for line in console if "Tried to" in line or "still open" in line or "rror" in line]
    assert bad == []


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass
