"""Chrome-trace timelines of exports (trace_view.json, msprof_*.json, timeline/*.json) into canonical rows."""

from __future__ import annotations

import collections
import csv
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.readers.exported import timeline_json
from pipeline.readers.exported.context import ExportContext
from pipeline.readers.exported.files import classify
from pipeline.readers.exported.timeline_json import read_timeline
from pipeline.readers.issues import IssueLog
from pipeline.warehouse.contracts import contract
from pipeline.warehouse.sink import to_table

ALL = ("api_calls", "task_runs", "task_ops", "step_trace")


class ListSink:
    """Rows per table, typed by the contracts as the Parquet sink would."""

    def __init__(self):
        self.parts = collections.defaultdict(list)

    def write(self, table, columns):
        self.parts[table].append(to_table(contract("raw", table), columns))

    def rows(self, table):
        return pa.concat_tables(self.parts[table]).to_pylist() if self.parts[table] else []


def read(path: Path, tables=ALL, device=None):
    sink, log = ListSink(), IssueLog()
    ctx = ExportContext(path.parent, sink, log, frozenset(tables), device)
    res = read_timeline(path, classify(path.name)[1], ctx)
    return sink, log, res


# msprof's trace pids: process id << 10 | sort index << 5 | device (31 = host). Process 4242:
# 4242 << 10 = 4343808; CANN: + 7 << 5 (224) + 31 = 4344063; Ascend Hardware on device 1:
# + 13 << 5 (416) + 1 = 4344225; AI Core Freq on device 1: + 14 << 5 (448) + 1 = 4344257.
CANN_PID, HW_PID, FREQ_PID, PY_PID = 4344063, 4344225, 4344257, 4242

HAND_TRACE = [
    {"ph": "M", "name": "process_name", "pid": CANN_PID, "tid": 0, "args": {"name": "CANN"}},
    {"ph": "M", "name": "process_name", "pid": HW_PID, "tid": 0, "args": {"name": "Ascend Hardware"}},
    {"ph": "M", "name": "process_name", "pid": PY_PID, "tid": 0, "args": {"name": "Python"}},
    {"ph": "M", "name": "process_name", "pid": FREQ_PID, "tid": 0, "args": {"name": "AI Core Freq"}},
    # 4
    {
        "ph": "X",
        "name": "AscendCL@aclnnAddmm",
        "pid": CANN_PID,
        "tid": 59239,
        "ts": "1780295077844841.970",
        "dur": "13.39",
        "args": {
            "Thread Id": 59239,
            "Mode": "ACL_NN",
            "level": "acl",
            "id": "aclnnAddmm",
            "item_id": "0",
            "connection_id": 303,
        },
    },
    # 5: half a nanosecond rounds away from zero; dur 8311.4 ns -> 8311
    {
        "ph": "X",
        "name": "Node@launch",
        "pid": CANN_PID,
        "tid": 59239,
        "ts": "1780295077844844.6705",
        "dur": "8.3114",
        "args": {
            "Thread Id": 59239,
            "Mode": "launch",
            "level": "node",
            "id": "0",
            "item_id": "aclnnAddmm_MatMulCommon_MatMulV2",
            "connection_id": 304,
        },
    },
    # 6
    {
        "ph": "X",
        "name": "aclnnAddmm_MatMulCommon_MatMulV2",
        "pid": HW_PID,
        "tid": 46,
        "ts": "1780295077844859.030",
        "dur": "6.7",
        "args": {
            "Model Id": 4294967295,
            "Task Type": "AI_CORE",
            "Physic Stream Id": 46,
            "Task Id": 23,
            "Batch Id": 0,
            "Subtask Id": 4294967295,
            "connection_id": 304,
        },
    },
    # 7: times as JSON numbers, a real subtask
    {
        "ph": "X",
        "name": "MixOp",
        "pid": HW_PID,
        "tid": 46,
        "ts": 1780295077844870.5,
        "dur": 3,
        "args": {
            "Model Id": 4294967295,
            "Task Type": "MIX_AIC",
            "Physic Stream Id": 46,
            "Task Id": 24,
            "Batch Id": 1,
            "Subtask Id": 2,
            "connection_id": 305,
        },
    },
    # 8: a flow arrow: not read
    {
        "ph": "f",
        "name": "HostToDevice1",
        "id": "1",
        "pid": HW_PID,
        "tid": 46,
        "ts": "1780295077844859.030",
        "cat": "HostToDevice",
        "bp": "e",
    },
    # 9
    {
        "ph": "X",
        "name": "ProfilerStep#7",
        "pid": PY_PID,
        "tid": PY_PID,
        "ts": "1780295077844000.000",
        "dur": "1000.5",
        "cat": "cpu_op",
        "args": {},
    },
    # 10: a torch op: not read
    {
        "ph": "X",
        "name": "aten::addmm",
        "pid": PY_PID,
        "tid": PY_PID,
        "ts": "1780295077844100.000",
        "dur": "50",
        "cat": "cpu_op",
    },
    # 11: a counter: not read; the earliest event
    {
        "ph": "C",
        "name": "AI Core Freq",
        "pid": FREQ_PID,
        "tid": 0,
        "ts": "1780295077843422.000",
        "args": {"MHz": 1800},
    },
    # 12: a time that is no number
    {
        "ph": "X",
        "name": "AscendCL@aclrtMemcpy",
        "pid": CANN_PID,
        "tid": 59239,
        "ts": "soon",
        "dur": "1.0",
        "args": {"level": "acl"},
    },
    # 13
    "not an event",
]


def assert_hand_rows(p: Path, sink, log, res, shift: int = 0) -> None:
    """The rows HAND_TRACE must give, worked out by hand; ``shift`` moves every seq (event index)."""
    api = sink.rows("api_calls")
    assert [
        (r["seq"], r["level"], r["api_name"], r["api_type"], r["item"], r["connection_id"]) for r in api
    ] == [
        (4 + shift, "acl", "aclnnAddmm", 5, None, 303),
        (5 + shift, "node", "launch", None, "aclnnAddmm_MatMulCommon_MatMulV2", 304),
    ]
    assert [(r["start_ns"], r["end_ns"]) for r in api] == [
        (1780295077844841970, 1780295077844855360),
        (1780295077844844671, 1780295077844852982),
    ]
    assert {(r["device_id"], r["pid"], r["tid"], r["record_kind"], r["source_file"]) for r in api} == {
        (64, 4242, 59239, "timeline_cann", p.name)
    }

    runs = sink.rows("task_runs")
    assert [
        (
            r["seq"],
            r["device_id"],
            r["stream_id"],
            r["task_id"],
            r["batch_id"],
            r["context_id"],
            r["model_id"],
            r["connection_id"],
            r["task_type"],
            r["task_type_name"],
            r["source"],
        )
        for r in runs
    ] == [
        (6 + shift, 1, 46, 23, 0, None, 4294967295, 304, None, "AI_CORE", "timeline"),
        (7 + shift, 1, 46, 24, 1, 2, 4294967295, 305, None, "MIX_AIC", "timeline"),
    ]
    assert [(r["start_ns"], r["end_ns"]) for r in runs] == [
        (1780295077844859030, 1780295077844865730),
        (1780295077844870500, 1780295077844873500),
    ]

    ops = sink.rows("task_ops")
    assert [
        (
            r["seq"],
            r["device_id"],
            r["stream_id"],
            r["task_id"],
            r["context_id"],
            r["start_ns"],
            r["op_name"],
            r["task_type"],
            r["source"],
        )
        for r in ops
    ] == [
        (
            6 + shift,
            1,
            46,
            23,
            None,
            1780295077844859030,
            "aclnnAddmm_MatMulCommon_MatMulV2",
            "AI_CORE",
            "export",
        ),
        (7 + shift, 1, 46, 24, 2, 1780295077844870500, "MixOp", "MIX_AIC", "export"),
    ]

    steps = sink.rows("step_trace")
    assert [
        (r["seq"], r["device_id"], r["model_id"], r["index_id"], r["tag_id"], r["ts_ns"]) for r in steps
    ] == [(9 + shift, 1, None, 7, 0, 1780295077844000000), (9 + shift, 1, None, 7, 1, 1780295077845000500)]

    assert res.rows == {"api_calls": 2, "task_runs": 2, "task_ops": 2, "step_trace": 2}
    assert res.devices == {64, 1}
    assert res.start_ns == 1780295077843422000
    kinds = collections.Counter(i.kind for i in log.issues)
    assert kinds == {"not_read": 1, "bad_value": 2}
    nr = next(i for i in log.issues if i.kind == "not_read")
    assert nr.count == 3 and "AI Core Freq: 1 events" in nr.message and "Python" in nr.message
    bad = sorted(i.count for i in log.issues if i.kind == "bad_value")
    assert bad == [1, 1]
    assert log.bytes_decoded == p.stat().st_size and log.bytes_skipped() == 0


def test_hand_written_trace(tmp_path):
    p = tmp_path / "trace_view.json"
    p.write_text(json.dumps(HAND_TRACE))
    assert_hand_rows(p, *read(p))


@pytest.mark.parametrize("batch", [1, 2, 3])
def test_batches_give_the_hand_checked_rows(tmp_path, monkeypatch, batch):
    """Events are turned into columns a batch at a time: any batch size gives the hand-checked rows
    and issues, even with the M events after the events they name (those are read in a first pass)."""
    p = tmp_path / "trace_view.json"
    p.write_text(json.dumps(HAND_TRACE[4:] + HAND_TRACE[:4]))  # names last: every event 4 places earlier
    monkeypatch.setattr(timeline_json, "BATCH_EVENTS", batch)
    sink, log, res = read(p)
    assert_hand_rows(p, sink, log, res, shift=-4)
    # each write holds the events of one batch (step_trace: up to 4 keypoints per event)
    assert all(
        t.num_rows <= batch * (4 if table == "step_trace" else 1)
        for table, ts in sink.parts.items()
        for t in ts
    )


def test_a_failure_in_the_second_pass_keeps_and_reports_what_was_written(tmp_path, monkeypatch):
    p = tmp_path / "msprof_20260601142439.json"
    p.write_text(json.dumps(HAND_TRACE))
    real, calls = timeline_json.trace_events, []

    def failing(path, **kw):
        calls.append(path)
        for n, e in enumerate(real(path, **kw)):
            if len(calls) == 2 and n == 7:
                raise OSError(5, "Input/output error")
            yield e

    monkeypatch.setattr(timeline_json, "trace_events", failing)
    monkeypatch.setattr(timeline_json, "BATCH_EVENTS", 1)
    sink, log, res = read(p)
    written = sum(len(sink.rows(t)) for t in ALL)
    assert res is not None and 0 < sum(res.rows.values()) == written
    [issue] = [i for i in log.issues if i.kind == "unreadable_file"]
    assert "part way" in issue.message and f"after {written} rows" in issue.message
    assert log.bytes_decoded == 0


def test_only_the_tables_asked_for(tmp_path):
    p = tmp_path / "trace_view.json"
    p.write_text(json.dumps({"traceEvents": HAND_TRACE, "displayTimeUnit": "ns"}))  # the object form
    sink, log, res = read(p, tables=("task_runs",), device=5)
    assert set(sink.parts) == {"task_runs"}
    assert res.rows == {"task_runs": 2}
    # the exporter's process id names device 1, the context 5: the exporter wins, the difference is noted
    assert {r["device_id"] for r in sink.rows("task_runs")} == {1}
    assert any("device 1" in n and "5" in n for n in res.notes)
    nr = next(i for i in log.issues if i.kind == "not_read")
    assert (
        "CANN: 3 API calls (api_calls), 1 steps (step_trace)" in nr.message and "another source" in nr.message
    )


def test_per_iteration_file_takes_its_iteration(tmp_path):
    """msprof's timeline/<kind>_<dev>_<model>_<iter>.json: device and model from the name; a
    step_trace_* file repeats every iteration, only its own is taken."""

    def iteration(n, ts, dur, fp, bp):
        return {
            "ph": "X",
            "name": f"Iteration {n}",
            "pid": 10044,
            "tid": 10044,
            "ts": ts,
            "dur": dur,
            "cat": "Iteration Time",
            "args": {"Iteration ID": n, "FP Start": fp, "BP End": bp},
        }

    events = [
        {"ph": "M", "name": "process_name", "pid": 10044, "tid": 0, "args": {"name": "Step Trace"}},
        {"ph": "M", "name": "thread_name", "pid": 10044, "tid": 10044, "args": {"name": "Model ID:0"}},
        iteration(1, "56635864652.49", "47587.81", "56635864658.62", "56635868894.72"),
        iteration(2, 56635944110.33, 16329.380000000001, 56635944116.0, "56635948000.5"),
        {
            "ph": "X",
            "name": "FP_BP Time 2",
            "pid": 10044,
            "tid": 10044,
            "ts": "56635944116.0",
            "dur": "1.0",
            "cat": "FP_BP Time",
            "args": {},
        },
    ]
    p = tmp_path / "step_trace_3_5_2.json"
    p.write_text(json.dumps(events))
    sink, log, res = read(p)
    steps = sink.rows("step_trace")
    # 56635944110.33 us + 16329.380000000001 us = 56635960439.71 us (the extra digits round away)
    assert [
        (r["seq"], r["device_id"], r["model_id"], r["index_id"], r["tag_id"], r["ts_ns"]) for r in steps
    ] == [
        (3, 3, 5, 2, 0, 56635944110330),
        (3, 3, 5, 2, 2, 56635944116000),
        (3, 3, 5, 2, 3, 56635948000500),
        (3, 3, 5, 2, 1, 56635960439710),
    ]
    # the file's first event (iteration 1's start) on a monotonic clock: no collection start
    assert res.start_ns is None and res.monotonic_first_ns == 56635864652490
    nr = next(i for i in log.issues if i.kind == "not_read")
    assert nr.count == 2 and "only iteration 2" in nr.message


@pytest.mark.parametrize("cut", [1, 200, 700])
def test_truncated_json_is_reported(tmp_path, cut):
    whole = json.dumps(HAND_TRACE).encode()
    p = tmp_path / "msprof_20260601142439.json"
    p.write_bytes(whole[:cut])
    sink, log, res = read(p)
    assert res is None and not sink.parts
    [issue] = log.issues
    assert issue.kind == "unreadable_file" and "not valid JSON" in issue.message
    assert issue.byte_length == cut and 0 <= issue.byte_offset <= cut
    assert log.bytes_decoded == 0


def test_json_that_is_no_trace(tmp_path):
    p = tmp_path / "trace_view.json"
    p.write_text('{"schema": 1}')
    _, log, res = read(p)
    assert res is None and [i.kind for i in log.issues] == ["unreadable_file"]
    p.write_bytes(b'[{"ph": "X", "name": "\xff"}]')
    _, log, res = read(p)
    assert res is None and log.issues[0].byte_offset == 22


# --- real exports (the real_data fixture) ----------------------------------------------------

LEVEL1 = "Ascend+msinsight/test/data/pytorch/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
IMAGINATION = "hicann+oam-tools/experiment/task-book/msprof_tool_experience_imaginationhh/perf-data"
WEIXIN = (
    "hicann+oam-tools/experiment/task-book/msprof_experience_weixin_63089733/perf-data/"
    "20260624_matmul_basic_api_board/mindstudio_profiler_output"
)
ANALYZE = "Ascend+msprof-analyze/test/ut/advisor/advisor_backend/timeline_advice/trace_view.json"
MINDINSIGHT = "mindspore-ai+mindinsight/tests/utils/resource/profiler"


def _scan(path: Path) -> dict[str, int]:
    """Independent count of what each table should get: X events by process and shape."""
    doc = json.loads(path.read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    names = {
        e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    n = collections.Counter()
    for e in events:
        if e.get("ph") != "X":
            continue
        proc = names.get(e.get("pid"))
        if proc == "CANN":
            n["api_calls"] += 1
        elif proc == "Ascend Hardware" and "Task Id" in e.get("args", {}):
            n["task_runs"] += 1
        elif e["name"].startswith("ProfilerStep#") or e.get("cat") == "Iteration Time":
            n["steps"] += 1
    return n


def _real_timelines(real_data: Path) -> list[Path]:
    files = [
        real_data / LEVEL1 / "trace_view.json",
        real_data / ANALYZE,
        *sorted((real_data / WEIXIN).glob("msprof_*.json")),
        *sorted((real_data / IMAGINATION).glob("*_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json")),
        *sorted(
            (real_data / IMAGINATION).glob("*_ascend_pt/PROF_*/mindstudio_profiler_output/msprof_*.json")
        ),
        *sorted((real_data / MINDINSIGHT).glob("PROF_*/device_*/timeline/msprof_*_1.json")),
    ]
    assert len(files) == 7
    return files


def test_real_counts_per_process(real_data):
    for path in _real_timelines(real_data):
        sink, log, res = read(path)
        want = _scan(path)
        got = res.rows
        assert got.get("api_calls", 0) == want["api_calls"], path.name
        assert got.get("task_runs", 0) == got.get("task_ops", 0) == want["task_runs"], path.name
        assert got.get("step_trace", 0) >= 2 * want["steps"], path.name
        assert len({r["seq"] for r in sink.rows("step_trace")}) == want["steps"], path.name
        assert not [i for i in log.issues if i.kind in ("bad_value", "unreadable_file")], path.name
        assert log.bytes_decoded == path.stat().st_size


def test_real_level1_hand_checked(real_data):
    path = real_data / LEVEL1 / "trace_view.json"
    sink, log, res = read(path, tables=(*ALL, "comm_ops", "comm_tasks"))
    # {"name": "AscendCL@aclrtMemcpyAsync", "pid": 3170820320, "tid": 3099702, "ts": "1736408883694795.840",
    #  "dur": "31.84", "args": {"Thread Id": 3099702, "Mode": "ACL_RTS", "level": "acl", ..., "connection_id": 936}}
    row = next(r for r in sink.rows("api_calls") if r["start_ns"] == 1736408883694795840)
    assert (
        row["level"],
        row["api_name"],
        row["api_type"],
        row["tid"],
        row["end_ns"],
        row["connection_id"],
    ) == ("acl", "aclrtMemcpyAsync", 3, 3099702, 1736408883694827680, 936)
    assert row["pid"] == 3096504  # 3170820320 >> 10: the Python process
    # {"name": "PROFILING_ENABLE", "pid": 3170820512, "tid": 0, "ts": "1736408883674584.732", "dur": "0.02",
    #  "args": {"Model Id": 4294967295, "Task Type": "PLACE_HOLDER_SQE", "Physic Stream Id": 0, "Task Id": 8, ...}}
    run = next(r for r in sink.rows("task_runs") if r["start_ns"] == 1736408883674584732)
    assert (
        run["device_id"],
        run["stream_id"],
        run["task_id"],
        run["end_ns"],
        run["task_type_name"],
        run["context_id"],
        run["connection_id"],
    ) == (0, 0, 8, 1736408883674584752, "PLACE_HOLDER_SQE", None, 1644)
    # ProfilerStep#50: ts "1736408883686740.710", dur 155985.8 (a JSON number)
    assert [(r["index_id"], r["tag_id"], r["ts_ns"]) for r in sink.rows("step_trace")] == [
        (50, 0, 1736408883686740710),
        (50, 1, 1736408883842726510),
    ]
    assert res.start_ns == 1736408883573887920  # the first AI Core Freq sample
    # the 4 HCCL ops as a whole (thread "Group 0 Communication") are comm_ops; 296 HCCL events are
    # their tasks on the Plane threads (comm_tasks); the other 8 are flow arrows, not read
    # the first: ts "1736408883732241.564", dur 79089.52 us
    ops = sink.rows("comm_ops")
    assert [r["op_name"] for r in ops] == [f"hcom_allReduce__586_{i}_1" for i in range(4)]
    assert (ops[0]["device_id"], ops[0]["start_ns"], ops[0]["end_ns"]) == (
        0,
        1736408883732241564,
        1736408883811331084,
    )
    [nr] = [i for i in log.issues if i.kind == "not_read"]
    assert "HCCL: 8 events" in nr.message and "Acc PMU: 2752 events" in nr.message
    # the first task: {"name": "Reduce_Inline", "pid": 3170820576, "tid": 1 ("Plane 0"),
    #  "ts": "1736408883732241.564", "dur": 0.60003125, "args": {"notify_id": "0", "stream id": 4,
    #  "task id": 807, "task type": "Reduce_Inline", "src rank": 0, "dst rank": 4294967295,
    #  "transport type": "SDMA", "size(Byte)": 4, "data type": "INT32", "link type": "ON_CHIP",
    #  "bandwidth(GB/s)": 0.006666319462527994, "model id": 4294967295, ...}}
    tasks = sink.rows("comm_tasks")
    assert len(tasks) == 296
    t = min(tasks, key=lambda r: (r["start_ns"], r["seq"]))
    assert tuple(
        t[k]
        for k in (
            "device_id", "task_type", "plane_id", "start_ns", "end_ns", "stream_id", "task_id", "notify_id",
            "src_rank", "dst_rank", "transport_type", "link_type", "data_type", "size_bytes", "bandwidth_gbps",
            "model_id",
        )
    ) == (
        0, "Reduce_Inline", 0, 1736408883732241564, 1736408883732242164, 4, 807, "0",
        0, 4294967295, "SDMA", "ON_CHIP", "INT32", 4, 0.006666319462527994, None,
    )  # fmt: skip


def _api_statistic_check(path: Path, statistic: Path) -> int:
    """api_calls aggregated as msprof's api_statistic does equal that CSV, group by group."""
    sink, _, _ = read(path)
    groups = collections.defaultdict(list)
    for r in sink.rows("api_calls"):
        groups[(r["level"], r["api_name"])].append(r["end_ns"] - r["start_ns"])
    rows = list(csv.DictReader(statistic.open()))
    assert {(r["Level"], r["API Name"]) for r in rows} == set(groups)
    for r in rows:
        d = groups[(r["Level"], r["API Name"])]
        total = Decimal(sum(d)) / 1000
        assert int(r["Count"]) == len(d)
        assert Decimal(r["Time(us)"]) == total
        assert (
            Decimal(r["Min(us)"]) == Decimal(min(d)) / 1000
            and Decimal(r["Max(us)"]) == Decimal(max(d)) / 1000
        )
        # Avg: msprof rounds the float quotient to 3 decimals (Python round, half even on the double)
        assert float(r["Avg(us)"]) == round(float(total) / len(d), 3)
    return len(rows)


def test_real_api_statistic_equals_aggregated_calls(real_data):
    assert (
        _api_statistic_check(real_data / LEVEL1 / "trace_view.json", real_data / LEVEL1 / "api_statistic.csv")
        == 57
    )
    [rank] = (real_data / IMAGINATION).glob("*_ascend_pt")
    assert (
        _api_statistic_check(
            rank / "ASCEND_PROFILER_OUTPUT/trace_view.json", rank / "ASCEND_PROFILER_OUTPUT/api_statistic.csv"
        )
        == 6
    )
    [out] = rank.glob("PROF_*/mindstudio_profiler_output")
    assert _api_statistic_check(next(out.glob("msprof_*.json")), next(out.glob("api_statistic_*.csv"))) == 6
    assert (
        _api_statistic_check(
            next((real_data / WEIXIN).glob("msprof_*.json")),
            next((real_data / WEIXIN).glob("api_statistic_*.csv")),
        )
        == 10
    )


def test_real_both_exporters_agree(real_data):
    """torch_npu's trace_view.json and msprof's msprof_*.json of one run: the same calls and tasks."""
    [rank] = (real_data / IMAGINATION).glob("*_ascend_pt")
    a, _, ra = read(rank / "ASCEND_PROFILER_OUTPUT/trace_view.json")
    b, _, rb = read(next(rank.glob("PROF_*/mindstudio_profiler_output/msprof_*.json")))

    def key(rows, cols):
        return sorted(tuple(r[c] for c in cols) for r in rows)

    api = ("level", "api_name", "pid", "tid", "start_ns", "end_ns", "connection_id")
    task = (
        "device_id",
        "stream_id",
        "task_id",
        "batch_id",
        "context_id",
        "start_ns",
        "end_ns",
        "task_type_name",
    )
    assert key(a.rows("api_calls"), api) == key(b.rows("api_calls"), api)
    assert key(a.rows("task_runs"), task) == key(b.rows("task_runs"), task)
    assert ra.start_ns == rb.start_ns


def test_real_per_iteration_files(real_data):
    """mindinsight's msprof_<dev>_<model>_<iter>.json holds the tasks of task_time_* and the
    iteration of step_trace_* (which repeats all ten): reading the merged file alone loses nothing."""
    folders = sorted((real_data / MINDINSIGHT).glob("PROF_*/device_*/timeline"))
    merged_files = {d: sorted(d.glob("msprof_*.json")) for d in folders}
    # two devices of ten iterations each: a loop over nothing would check nothing
    assert [len(fs) for fs in merged_files.values()] == [10, 10], real_data / MINDINSIGHT
    for d, files in merged_files.items():
        dev = int(d.parent.name.split("_")[1])
        for merged in files:
            suffix = merged.name[len("msprof_") :]
            m, _, mres = read(merged)
            t, _, _ = read(d / f"task_time_{suffix}")
            s, _, _ = read(d / f"step_trace_{suffix}")
            cols = ("device_id", "stream_id", "task_id", "start_ns", "end_ns", "task_type_name")
            assert sorted(tuple(r[c] for c in cols) for r in m.rows("task_runs")) == sorted(
                tuple(r[c] for c in cols) for r in t.rows("task_runs")
            )
            keypoints = [
                (r["device_id"], r["model_id"], r["index_id"], r["tag_id"], r["ts_ns"])
                for r in m.rows("step_trace")
            ]
            assert keypoints == [
                (r["device_id"], r["model_id"], r["index_id"], r["tag_id"], r["ts_ns"])
                for r in s.rows("step_trace")
            ]
            iteration = int(suffix.split("_")[2].split(".")[0])
            assert {k[0] for k in keypoints} == {dev} and {k[2] for k in keypoints} == {iteration}
            assert [k[3] for k in keypoints] == [0, 2, 3, 1]
            assert mres.start_ns is None  # a monotonic clock, not wall clock


def test_timelines_on_a_monotonic_clock_are_one_note_of_the_run(tmp_path):
    """Three devices' timelines whose times are not wall clock: the run says so in one note
    naming the files (a real export of 40 such files printed 40 notes before every table)."""
    from pipeline.jobs.runner import ingest_dump
    from pipeline.warehouse.store import Warehouse

    root = tmp_path / "PROF_000001_20260101000000000_ABCDEFGHIJKLMNOP"
    for device in range(3):
        d = root / f"device_{device}" / "timeline"
        d.mkdir(parents=True)
        events = [
            {"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "Ascend Hardware"}},
            {"ph": "X", "name": "k", "pid": 100, "tid": 3, "ts": f"{1000 + device}.000", "dur": "1.000",
             "args": {"Task Id": 1, "Stream Id": 3, "Task Type": "AI_CORE"}},
        ]  # fmt: skip
        (d / "task_time.json").write_text(json.dumps(events))
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        o = ingest_dump(wh, root)
    assert o.status == "built", o.error
    notes = [n for n in wh.run_index().run_record(o.run_id)["notes"] if "not wall clock" in n]
    assert notes == [
        "event times are not wall clock in 3 timeline file(s) (a monotonic clock: "
        "device_0/timeline/task_time.json starts at 1000000 ns): the collection start is not taken "
        "from them: device_0/timeline/task_time.json, device_1/timeline/task_time.json, "
        "device_2/timeline/task_time.json"
    ]
