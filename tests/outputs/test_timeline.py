"""timeline: a Chrome trace with one event per API call and task instance, checked against synth's truth."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest
from typer.testing import CliRunner

from pipeline.cli.main import app
from pipeline.errors import UsageError
from pipeline.outputs import trace as trace_module
from pipeline.outputs.trace import parse_duration
from tests.helpers.trace import chrome_trace
from tests.helpers.warehouse_checks import own_part_file

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

runner = CliRunner()


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    from tests.helpers.history import build_history

    return build_history(
        tmp_path_factory.mktemp("tl"),
        [
            {"seed": 3, "devices": 2, "inferences": 4},
            {"seed": 3, "devices": 2, "inferences": 4, "drop_complete": 3},
            {
                "seed": 3,
                "devices": 1,
                "inferences": 1,
                "drop_complete": 2,
            },  # every instance is its task's last
        ],
    )


def _events(trace, ph=None, cat=None):
    return [
        e
        for e in trace["traceEvents"]
        if (ph is None or e["ph"] == ph) and (cat is None or e.get("cat") == cat)
    ]


def _ns(us: float, trace: dict | None = None) -> int:
    """ns from a trace's us: on the run timeline when the trace is given (ts counts from its origin)."""
    return round(us * 1000) + (trace["otherData"]["ts_origin_ns"] if trace else 0)


def test_trace_event_format(two):
    wh, nights = two
    trace = json.loads(json.dumps(chrome_trace(wh, nights[0].run_id)))  # survives a JSON round trip
    assert trace["displayTimeUnit"] == "ns" and trace["otherData"]["run_id"] == nights[0].run_id
    names = {(e["pid"], e["tid"]) for e in _events(trace, "M") if e["name"] == "thread_name"}
    for e in trace["traceEvents"]:
        assert e["ph"] in ("X", "i", "M", "s", "f")
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] != "M":
            assert isinstance(e["ts"], (int, float)) and (e["pid"], e["tid"]) in names
        if e["ph"] == "X":
            assert e["dur"] >= 0 and isinstance(e["name"], str)
    # two slices of one track are apart or one holds the other
    by_track = defaultdict(list)
    for e in _events(trace, "X"):
        by_track[(e["pid"], e["tid"])].append((_ns(e["ts"]), _ns(e["ts"] + e["dur"])))
    for spans in by_track.values():
        for a in spans:
            for b in spans:
                assert (
                    a[1] <= b[0]
                    or b[1] <= a[0]
                    or a[0] <= b[0] <= b[1] <= a[1]
                    or b[0] <= a[0] <= a[1] <= b[1]
                )
    # every flow start has its end
    starts = {e["id"] for e in _events(trace, "s")}
    assert starts and starts == {e["id"] for e in _events(trace, "f")}


def test_one_event_per_api_call_and_task(two):
    wh, nights = two
    truth = nights[0].truth
    trace = chrome_trace(wh, nights[0].run_id)
    api = _events(trace, "X", "api")
    assert sorted(
        (e["pid"], e["name"], _ns(e["ts"], trace), _ns(e["ts"] + e["dur"], trace)) for e in api
    ) == sorted((c.device_id, c.name, c.start_ns, c.end_ns) for c in truth.api_calls)
    tasks = _events(trace, "X", "task")
    assert sorted(
        (
            e["pid"],
            e["args"]["stream_id"],
            e["args"]["task_id"],
            _ns(e["ts"], trace),
            _ns(e["ts"] + e["dur"], trace),
        )
        for e in tasks
    ) == sorted((x.device_id, x.stream_id, x.task_id, x.running_ns, x.complete_ns) for x in truth.instances)
    assert {e["args"].get("op_name") for e in tasks} >= {o.op_name for o in truth.ops}
    phases = _events(trace, "X", "inference")
    assert len(phases) == 2 * (1 + 3 * 4)  # per device: the load, and input / infer / output of 4 inferences
    # task states: running lasts from RUNNING to COMPLETE for every instance
    running = sorted(_ns(e["dur"]) for e in _events(trace, "X", "task_state") if e["name"] == "running")
    assert running == sorted(x.complete_ns - x.running_ns for x in truth.instances)


def test_instances_without_complete(two):
    """A lost COMPLETE in the middle merges into the task's next instance (as msprof does); a
    lost last COMPLETE leaves an instance that never completed: an instant event."""
    wh, nights = two
    for night, instants in ((nights[1], 0), (nights[2], 2)):
        trace = chrome_trace(wh, night.run_id)
        complete = [x for x in night.truth.instances if x.complete_ns is not None]
        assert len(_events(trace, "X", "task")) == len(complete)
        marks = _events(trace, "i", "task")
        assert len(marks) == instants and all("no COMPLETE" in e["name"] for e in marks)
        lost = sorted(x.running_ns for x in night.truth.instances if x.complete_ns is None)
        if instants:
            assert sorted(_ns(e["ts"], trace) for e in marks) == lost


def test_window(two):
    wh, nights = two
    full = chrome_trace(wh, nights[0].run_id)
    inf = [x for x in nights[0].truth.inferences if x.infer_id == 2]
    lo, hi = min(x.input[0] for x in inf), max(x.output[1] for x in inf)
    part = chrome_trace(wh, nights[0].run_id, inference=2)
    xs = _events(part, "X")
    assert 0 < len(xs) < len(_events(full, "X"))
    for e in xs:
        assert _ns(e["ts"] + e["dur"], part) >= lo and _ns(e["ts"], part) <= hi
    assert part["otherData"]["window_ns"] == [lo, hi]
    offset = chrome_trace(wh, nights[0].run_id, start="0ns", end="1us")
    assert len(_events(offset, "X")) < len(xs)
    with pytest.raises(UsageError):
        chrome_trace(wh, nights[0].run_id, inference=99)
    assert parse_duration("1.5us") == 1500 and parse_duration("3ms") == 3_000_000 and parse_duration("7") == 7
    with pytest.raises(UsageError):
        parse_duration("soon")


# the run spans ~450 us: windows that cut through API calls, inferences and tasks, and open-ended ones
@pytest.mark.parametrize(
    "start_end",
    [("130us", "140us"), ("100us", "200us"), ("262us", "300us"), (None, "125us"), ("300us", None)],
)
def test_rows_chosen_in_sql_change_nothing_in_a_window(two, monkeypatch, start_end):
    """The window's rows are chosen in SQL before events are made, so that a short window of a
    big run reads little; the trace must be the one made from every row, each event tested
    against the window in Python (an API call or task kept whole when it overlaps, a task's
    state intervals with it)."""
    wh, nights = two
    start, end = start_end
    part = chrome_trace(wh, nights[0].run_id, start=start, end=end)
    every = "($lo is null or $hi is null or true)"  # every row (the parameters are still bound)
    monkeypatch.setattr(trace_module, "_WINDOW", every)
    monkeypatch.setattr(trace_module, "_TASK_WINDOW", every)
    every_row = chrome_trace(wh, nights[0].run_id, start=start, end=end)
    assert part == every_row
    kept = [e for e in part["traceEvents"] if e["ph"] in ("X", "i")]
    assert (
        0
        < len(kept)
        < len([e for e in chrome_trace(wh, nights[0].run_id)["traceEvents"] if e["ph"] in ("X", "i")])
    )


@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_written_trace_is_the_one_made_in_memory_across_batches(two, tmp_path, monkeypatch, name):
    """write_trace streams events as rows arrive a batch at a time; the file must hold the
    same trace whatever the batch size."""
    wh, nights = two
    whole = chrome_trace(wh, nights[0].run_id)
    monkeypatch.setattr(trace_module, "BATCH_ROWS", 3)
    out = tmp_path / name
    run_id, n = trace_module.write_trace(wh, str(out), nights[0].run_id)
    data = gzip.decompress(out.read_bytes()) if name.endswith(".gz") else out.read_bytes()
    assert json.loads(data) == whole
    assert run_id == nights[0].run_id and n == len([e for e in whole["traceEvents"] if e["ph"] != "M"])
    assert [p.name for p in tmp_path.iterdir()] == [name]  # written whole, no temporary file left


def test_cli_writes_json_and_gzip(two, tmp_path):
    wh, nights = two
    out = tmp_path / "t.json"
    r = runner.invoke(app, ["timeline", nights[0].run_id, "--out", str(out), "--warehouse", str(wh.path)])
    assert r.exit_code == 0, r.output
    trace = json.loads(out.read_text())
    assert len(_events(trace, "X", "api")) == len(nights[0].truth.api_calls)
    gz = tmp_path / "t.json.gz"
    r = runner.invoke(
        app, ["timeline", nights[0].run_id, "--device", "1", "--out", str(gz), "--warehouse", str(wh.path)]
    )
    assert r.exit_code == 0, r.output
    trace = json.loads(gzip.decompress(gz.read_bytes()))
    assert {e["pid"] for e in _events(trace, "X")} == {1}
    bare = tmp_path / "s.json"
    r = runner.invoke(
        app, ["timeline", nights[0].run_id, "--speedscope", "--out", str(bare), "--warehouse", str(wh.path)]
    )
    assert r.exit_code == 0, r.output
    trace = json.loads(bare.read_text())
    assert len(_events(trace, "X", "api")) == len(nights[0].truth.api_calls)
    assert not [
        e for e in trace["traceEvents"] if e["ph"] != "M" and "args" in e
    ]  # speedscope would name by them
    r = runner.invoke(
        app, ["timeline", nights[0].run_id, "--start", "2ms", "--end", "1ms", "--warehouse", str(wh.path)]
    )
    assert r.exit_code == 2 and "ends before it starts" in r.stderr


def test_run_ingested_before_instance_no(synth_run, tmp_path):
    """A run ingested before task_states had instance_no: the column reads as NULL (as the build
    reads it), the staging SQL numbers the instances itself, and the trace is the same."""
    import pyarrow.parquet as pq

    run = synth_run(seed=5, devices=2, inferences=3, drop_complete=2)
    before = chrome_trace(run.wh, run.run_id)
    part = own_part_file(
        run.wh, "raw", "task_states", run.run_id, run.wh.run_index().run_record(run.run_id)["ingest_id"]
    )
    states = pq.read_table(part)
    assert states.column("instance_no").null_count < len(states)  # numbered while ingesting
    pq.write_table(states.drop(["instance_no"]), part)
    assert "instance_no" not in pq.read_schema(part).names

    out = tmp_path / "old.json"
    r = runner.invoke(app, ["timeline", run.run_id, "--out", str(out), "--warehouse", str(run.wh.path)])
    assert r.exit_code == 0, r.output
    after = json.loads(out.read_text())
    assert after == json.loads(json.dumps(before))
    tasks = _events(after, "X", "task")
    assert len(tasks) == len([x for x in run.truth.instances if x.complete_ns is not None])
    # a lost COMPLETE merges into the task's next instance; only a lost last one is an instant
    last = {}
    for x in run.truth.instances:
        key = (x.device_id, x.stream_id, x.task_id)
        if key not in last or x.running_ns > last[key].running_ns:
            last[key] = x
    assert len(_events(after, "i", "task")) == sum(x.complete_ns is None for x in last.values()) > 0
    # the instances of each task are numbered 0, 1, ... in time order, as the ingest numbered them
    numbers = defaultdict(list)
    for e in sorted(tasks + _events(after, "i", "task"), key=lambda e: e["ts"]):
        numbers[(e["pid"], e["args"]["stream_id"], e["args"]["task_id"])].append(e["args"]["instance_no"])
    assert all(n == list(range(len(n))) for n in numbers.values())
