"""timeline as trace viewers read it: tracks that nest, flows that bind, speedscope's import
(replayed in Python, and the real one in headless Chromium where the machine has both),
each device's own inference, durations in args, and the clock the times are on."""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from pipeline.outputs import trace as trace_module
from tests.helpers.chromium import CHROMIUM, console_lines, dump_dom
from tests.helpers.trace import chrome_trace
from tests.helpers.trace_check import (
    ancestors,
    flow_errors,
    frame_key,
    nesting_errors,
    slice_parents,
    speedscope_warnings,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from tests.helpers.history import build_history

    # two hiprof runs: two devices whose inferences do not line up; one with COMPLETEs dropped
    # (the PROF_* run is prof_run below)
    return build_history(
        tmp_path_factory.mktemp("tv"),
        [
            {"seed": 11, "devices": 2, "inferences": 7},
            {"seed": 4, "devices": 2, "inferences": 3, "drop_complete": 2},
        ],
    )


def _threads(trace: dict) -> dict[tuple[int, int], str]:
    return {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }


def test_tracks_nest_flows_bind_and_speedscope_imports_without_complaint(runs, prof_run):
    wh, nights = runs
    pwh, prun, _ = prof_run
    for where, run_id in [(wh, night.run_id) for night in nights] + [(pwh, prun)]:
        for kw in ({}, {"inference": 2}, {"start": "100us", "end": "300us"}):
            events = chrome_trace(where, run_id, **kw)["traceEvents"]
            assert [e for e in events if e["ph"] == "X"]
            assert nesting_errors(events) == []
            assert flow_errors(events) == []
            assert speedscope_warnings(events) == []


def test_ts_counts_exact_ns_from_the_origin(runs):
    wh, nights = runs
    trace = chrome_trace(wh, nights[0].run_id)
    origin = trace["otherData"]["ts_origin_ns"]
    truth = nights[0].truth
    assert origin == min(min(c.start_ns for c in truth.api_calls), min(x.input[0] for x in truth.inferences))
    # the JSON text of ts is the exact decimal of (start_ns - origin) / 1000
    texts = {json.dumps(e["ts"]) for e in trace["traceEvents"] if e.get("cat") == "api"}
    want = {
        f"{(c.start_ns - origin) // 1000}.{(c.start_ns - origin) % 1000:03d}".rstrip("0").rstrip(".")
        for c in truth.api_calls
    }
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
    want = {
        (x.device_id, x.stream_id, x.task_id, x.running_ns): x
        for x in truth.instances
        if x.complete_ns is not None
    }
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
        streams = [k for k in kinds[first_inf + 1 :]]
        order = [k for i, k in enumerate(streams) if i == 0 or streams[i - 1] != k]
        assert order == [
            f"Stream {s} {what}"
            for s in sorted({int(k.split()[1]) for k in order})
            for what in ("tasks", "waiting", "pending", "running")
            if f"Stream {s} {what}" in order
        ]


@pytest.fixture(scope="module")
def prof_run(tmp_path_factory):
    """A PROF_* dump: its host thread calls aclmdlExecute > ModelExecute > node launch > KernelLaunch."""
    from pipeline.synth.prof import ProfConfig, generate
    from pipeline.warehouse.store import Warehouse
    from tests.helpers.built import build_dump

    root = tmp_path_factory.mktemp("tvp")
    truth = generate(root / "d", ProfConfig(chip="ascend910b", devices=2, inferences=3, tasks=6))
    run, _ = build_dump(root / "wh", root / "d" / truth.root if truth.root else root / "d")
    return Warehouse(root / "wh"), run["run_id"], truth


def _ns_span(e: dict, origin: int) -> tuple[int, int]:
    return round(e["ts"] * 1000) + origin, round((e["ts"] + e["dur"]) * 1000) + origin


def _api_events(trace: dict) -> dict[tuple, list[int]]:
    """The trace's API slices by (device, name, start ns, end ns): their indexes."""
    origin = trace["otherData"]["ts_origin_ns"]
    out: dict[tuple, list[int]] = {}
    for i, e in enumerate(trace["traceEvents"]):
        if e["ph"] == "X" and e["cat"] == "api":
            out.setdefault((e["pid"], e["name"], *_ns_span(e, origin)), []).append(i)
    return out


def test_a_prof_run_draws_its_inferences_and_keeps_one_by_number(prof_run):
    """A PROF_* run's inferences are its model-level API records (the k-th InputCopy,
    ModelExecute and OutputCopy of a device are its inference k, as in topdown_inference): each
    is a slice on the device's Inferences track from the first phase's start to the last one's
    end, and --inference 2 keeps the second. The trace read only GE's records, which these
    dumps do not have: no inference was drawn, and --inference N said the run had none."""
    pwh, prun, truth = prof_run
    want = {}
    for d in {c.device_id for c in truth.api_calls}:
        phases = [
            sorted((c.start_ns, c.end_ns) for c in truth.api_calls if c.device_id == d and c.name == name)
            for name in ("InputCopy", "ModelExecute", "OutputCopy")
        ]
        for k, parts in enumerate(zip(*phases, strict=True), 1):
            want[(d, k)] = (min(s for s, _ in parts), max(e for _, e in parts))
    assert len(want) == 2 * 3  # two devices, three inferences each

    def spans(trace):
        origin = trace["otherData"]["ts_origin_ns"]
        return {
            (e["pid"], e["args"]["infer_id"]): _ns_span(e, origin)
            for e in trace["traceEvents"]
            if e.get("cat") == "inference_span"
        }

    assert spans(chrome_trace(pwh, prun)) == want
    assert spans(chrome_trace(pwh, prun, inference=2)) == {k: v for k, v in want.items() if k[1] == 2}


def test_runtime_calls_nest_in_their_aclmdlExecute_on_its_thread(runs, prof_run):
    """Every call that lies inside another call of its host thread (by the generator's
    events) is drawn inside it, on the same track: an aclmdlExecute holds its runtime calls,
    and every call's enclosing slices are the calls that enclose it."""
    wh, nights = runs
    cases = [(chrome_trace(wh, n.run_id), n.truth.api_calls) for n in nights]
    pwh, prun, ptruth = prof_run
    cases.append((chrome_trace(pwh, prun), [c for c in ptruth.api_calls if c.kind == "api"]))
    for trace, calls in cases:
        events = trace["traceEvents"]
        assert nesting_errors(events) == []
        at = _api_events(trace)
        parents = slice_parents(events)
        checked = 0
        for c in calls:
            [*mine] = at[(c.device_id, c.name, c.start_ns, c.end_ns)]
            holders = {
                (h.name, h.start_ns, h.end_ns)
                for h in calls
                if h.device_id == c.device_id
                and h.tid == c.tid
                and h.start_ns <= c.start_ns
                and c.end_ns <= h.end_ns
                and h is not c
            }
            strict = {h for h in holders if (h[1], h[2]) != (c.start_ns, c.end_ns)}
            origin = trace["otherData"]["ts_origin_ns"]
            for i in mine:
                up = {(a["name"], *_ns_span(a, origin)) for a in ancestors(events, i, parents)}
                assert strict <= up <= holders, (c, up)
                assert all(a["tid"] == events[i]["tid"] for a in ancestors(events, i, parents))
            if c.level == "runtime" and any(h[0] == "aclmdlExecute" for h in strict):
                checked += 1
        assert checked >= 10  # runtime calls inside an aclmdlExecute were there to check


def test_an_inferences_tasks_nest_under_its_slice(runs):
    """On each stream's task track the device's inferences are slices (input start to output
    end, the generator's times) and every task instance of an inference lies inside its own."""
    wh, nights = runs
    for night in nights:
        trace = chrome_trace(wh, night.run_id)
        events = trace["traceEvents"]
        assert nesting_errors(events) == []
        origin = trace["otherData"]["ts_origin_ns"]
        span = {(x.device_id, x.infer_id): (x.input[0], x.output[1]) for x in night.truth.inferences}
        of = {
            (x.device_id, x.stream_id, x.task_id, x.running_ns): x.infer_id
            for x in night.truth.instances
            if x.complete_ns is not None
        }
        parents = slice_parents(events)
        tasks = [i for i, e in enumerate(events) if e["ph"] == "X" and e["cat"] == "task"]
        assert len(tasks) == len(of)
        for i in tasks:
            e = events[i]
            k = of[(e["pid"], e["args"]["stream_id"], e["args"]["task_id"], _ns_span(e, origin)[0])]
            up = ancestors(events, i, parents)
            assert [a["args"]["infer_id"] for a in up] == [k]
            assert _ns_span(up[0], origin) == span[(e["pid"], k)] and up[0]["tid"] == e["tid"]
            assert up[0]["name"] == "resnet50 inference"


def _names_by(events: list[dict], key, name=lambda e: e["name"]) -> dict:
    out: dict = {}
    for e in events:
        k = key(e)
        if k is not None:
            out.setdefault(k, set()).add(name(e))
    return out


@pytest.mark.parametrize("instance_args", [True, False])
def test_one_name_per_api_op_and_phase(runs, instance_args):
    """All calls of one API share one name, all instances of one op one name, each inference
    phase one name, across the whole trace; per-instance values are in args (or, for
    speedscope, nowhere: it takes name and args for the function, so then the whole key is one
    per API, op and phase)."""
    wh, nights = runs
    night = nights[0]
    trace = chrome_trace(wh, night.run_id, **({} if instance_args else {"instance_args": False}))
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    origin = trace["otherData"]["ts_origin_ns"]
    api = {}
    for c in night.truth.api_calls:
        api.setdefault((c.device_id, c.start_ns, c.end_ns), set()).add(c.name)
    op = {
        (x.device_id, x.running_ns, x.complete_ns): x.op_name or "MEMCPY"
        for x in night.truth.instances
        if x.complete_ns is not None
    }
    phase = {}  # the model load is no phase of an inference: left out
    for x in night.truth.inferences:
        for kind in ("input", "infer", "output"):
            phase[(x.device_id, *getattr(x, kind))] = kind
        phase[(x.device_id, x.input[0], x.output[1])] = "inference"

    def where(table, cat):
        def key(e):
            if e["cat"] != cat:
                return None
            found = (
                table[(e["pid"], *_ns_span(e, origin))]
                if table is not phase
                else phase.get((e["pid"], *_ns_span(e, origin)))
            )
            return next(iter(found)) if isinstance(found, set) and len(found) == 1 else found

        return key

    for table, cat, n in (
        (api, "api", 5),
        (op, "task", 5),
        (phase, "inference", 3),
        (phase, "inference_span", 1),
    ):
        names = _names_by(events, where(table, cat))
        keys = _names_by(events, where(table, cat), frame_key)
        assert len(names) >= n and all(len(v) == 1 for v in names.values()), names
        if cat == "api":
            assert all(v == {k} for k, v in names.items())  # the API's own name
        if cat == "inference":
            assert all(v == {k} for k, v in names.items())  # input, infer, output
        if instance_args:
            assert any(len(v) > 1 for v in keys.values())  # seq, ids and times differ in args
        else:
            assert all(len(v) == 1 for v in keys.values()), keys
    if instance_args:
        assert len({e["args"]["instance_no"] for e in events if e["cat"] == "task"}) > 1
    else:
        assert not any("args" in e for e in trace["traceEvents"] if e["ph"] != "M")


def _speedscope() -> Path | None:
    env = os.environ.get("PROFETL_SPEEDSCOPE")
    roots = [Path(env)] if env else []
    npm = shutil.which("npm")
    if npm:
        try:
            roots.append(
                Path(
                    subprocess.run(
                        [npm, "root", "-g"], capture_output=True, text=True, timeout=30
                    ).stdout.strip()
                )
                / "speedscope"
            )
        except (OSError, subprocess.SubprocessError):
            pass
    for root in roots:
        for index in (root / "dist" / "release" / "index.html", root / "index.html"):
            if index.is_file():
                return index.parent
    return None


def _open_in_speedscope(tmp_path: Path, write, view: str | None = None) -> tuple[list[str], str]:
    """speedscope's page in headless Chromium, loading the trace that ``write(path)`` writes over a
    loopback HTTP server (in ``view``: time-ordered, left-heavy or sandwich): (its console
    lines, the page's DOM once loaded). Skips unless both are installed."""
    app = _speedscope()
    if CHROMIUM is None or app is None:
        pytest.skip("needs chromium and speedscope (npm install -g speedscope)")
    site = tmp_path / "site"
    shutil.copytree(app, site)
    write(site / "trace.json")
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with tempfile.TemporaryDirectory() as profile:
            url = f"{base}/index.html#profileURL={base}/trace.json" + (f"&view={view}" if view else "")
            r = dump_dom(url, Path(profile), window="1200,2000", offline=False, budget_ms=8000)
    finally:
        server.shutdown()
    return console_lines(r), r.stdout


def test_speedscope_in_chromium_imports_the_trace_without_warnings(runs, tmp_path):
    """The real importer: speedscope's page in headless Chromium loads the trace; its console
    must report the import and no warning."""
    wh, nights = runs
    console, _ = _open_in_speedscope(
        tmp_path, lambda p: trace_module.write_trace(wh, str(p), nights[0].run_id)
    )
    assert any("Importing as Trace Event Format" in line for line in console), console
    assert any("import:" in line for line in console), console
    bad = [line for line in console if "Tried to" in line or "still open" in line or "rror" in line]
    assert bad == []


def test_speedscope_sandwich_merges_the_calls_of_each_api(runs, tmp_path):
    """speedscope's Sandwich view (a table of functions, the same functions Left Heavy merges)
    of a trace written without args: device 0's host thread, its first profile, lists each API
    the generator called on that device once, by its name."""
    wh, nights = runs
    console, dom = _open_in_speedscope(
        tmp_path,
        lambda p: trace_module.write_trace(wh, str(p), nights[0].run_id, instance_args=False),
        "sandwich",
    )
    assert not [line for line in console if "Tried to" in line or "still open" in line or "rror" in line]
    table = dom[dom.index("Symbol Name") :]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table)]
    names = [html.unescape(re.sub(r"<[^>]+>", "", cells[-1])) for cells in rows if len(cells) == 3]
    assert sorted(names) == sorted({c.name for c in nights[0].truth.api_calls if c.device_id == 0})


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.mark.parametrize("instance_args", [True, False])
def test_a_call_that_ends_with_its_caller_nests_in_speedscopes_arithmetic_too(instance_args):
    """aclmdlExecute [a, e] and a runtime call [c, e] of its thread: the call ends with it, but
    in speedscope's doubles ((c - a) / 1000-ish plus dur) it would end 2e-11 us later, and be
    left open (these three times were searched for that). The call is drawn inside on the same
    track, its dur still the ns it lasted, and speedscope's replay has nothing to say."""
    from pipeline.jobs.transforms import run_layer
    from tests.helpers.empty_raw import empty_raw_tables

    a, c, e = 144_272_509, 144_869_363, 145_757_962
    assert (c / 1000 - a / 1000) + (e - c) / 1000 > (e - a) / 1000  # the doubles disagree
    con = empty_raw_tables()
    run_layer(con, "staging")
    con.execute(f"""drop view stg_api_calls; create table stg_api_calls as select * from (values
        (0, 'acl', 'aclmdlExecute', 'ACL_MODEL', 1, 7, null::int, {a}, {e}, {e - a}, 1),
        (0, 'runtime', 'rtKernelLaunch', null::varchar, 1, 7, 3, {c}, {e}, {e - c}, 2))
        as t(device_id, level, api_name, api_type, pid, tid, stream_id, start_ns, end_ns, dur_ns, seq)""")
    run_layer(con, "intermediate")
    events = list(trace_module._events(con, "true", None, [], trace_module._Window(), 0, instance_args))
    calls = {ev["name"]: ev for ev in events if ev["ph"] == "X"}
    assert calls["rtKernelLaunch"]["tid"] == calls["aclmdlExecute"]["tid"]
    assert [round(ev["dur"] * 1000) for ev in calls.values()] == [e - a, e - c]
    assert nesting_errors(events) == [] and speedscope_warnings(events) == []
    assert [ev["name"] for ev in ancestors(events, events.index(calls["rtKernelLaunch"]))] == [
        "aclmdlExecute"
    ]
