"""The step breakdown profetl recomputes from an export's events (int_step_breakdown, shown in
step_trace_summary's *_recomputed_ns columns; docs/formats.md#rule-step-breakdown), beside the
exporter's own (step_trace_time.csv), and build_issues' export_step_breakdown_differs.

A torch_npu export written here: two ProfilerStep spans, compute kernels (Ascend Hardware tasks
that kernel_details.csv names), a task no operator names, and HCCL ops. Every expected value is
worked out by hand below from the intervals, in us from T0, then in ns.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers.built import build_dump
from tests.readers.test_exported_totals import export

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

T0 = 1_000_000_000_000  # us, wall clock
US = 1_000  # ns

STEPS = [(1, 0, 100), (2, 100, 200)]  # ProfilerStep#N: [start, end) in us from T0
# compute kernels (stream 2): (task id, start, end) in us from T0
KERNELS = [(1, 10, 30), (2, 20, 40), (3, 60, 70), (4, 95, 120), (5, 150, 160)]
EVENT_TASK = (9, 45, 55)  # an EVENT_RECORD task (stream 3) no operator names: not computing
# HCCL ops as a whole: (name, start, end)
COMM = [
    ("hcom_allReduce__1_0_1", 35, 50),
    ("hcom_receive__1_1_1", 130, 140),
    ("hcom_allReduce__1_2_1", 155, 170),
]

# By hand, with communication ops:
#   compute merged        [10,40) (kernels 1 and 2 overlap), [60,70), [95,120), [150,160)
#   communication merged  [35,50), [130,140), [155,170)
#   busy (either)         [10,50), [60,70), [95,120), [130,140), [150,170)
#   free (gaps of busy)   [50,60), [70,95), [120,130), [140,150)
#   not overlapped        [35,50) - [10,40) = [40,50); [130,140); [155,170) - [150,160) = [160,170)
# A piece belongs to the step whose [start, end) holds its start: [95,120) stays whole in step 1.
#   step 1 [0,100):  computing 30 + 10 + 25 = 65; communication 15; not overlapped 10;
#                    overlapped 15 - 10 = 5; free 10 + 25 = 35; no receive: bubble 0;
#                    span 10 .. 120 = 110, stage 110 - 0 = 110; excluding receive 10 - 0 = 10;
#                    preparing: first compute / communication piece 10 - step start 0 = 10
#   step 2 [100,200): computing 10; communication 10 + 15 = 25; not overlapped 10 + 10 = 20;
#                    overlapped 25 - 20 = 5; free [120,130) + [140,150) = 20 (the gap [120,130)
#                    after kernel 4 starts in step 2); bubble: the receive [130,140) = 10;
#                    span 120 .. 170 = 50, stage 50 - 10 = 40; excluding receive 20 - 10 = 10;
#                    preparing 130 - 100 = 30
COLUMNS = (
    "computing",
    "communication",
    "communication_not_overlapped",
    "overlapped",
    "free",
    "stage",
    "bubble",
    "communication_not_overlapped_exclude_receive",
    "preparing",
)
WITH_COMM = {
    1: (65, 15, 10, 5, 35, 110, 0, 10, 10),
    2: (10, 25, 20, 5, 20, 40, 10, 10, 30),
}
# Without communication ops the communication columns are NULL, and the time the ops took is free:
#   busy = compute merged; free [40,60), [70,95), [120,150)
#   step 1: computing 65; free 20 + 25 = 45; span 10 .. 120 = 110 = stage; preparing 10
#   step 2: computing 10; free 30 (the gap [120,150) starts in step 2); span 120 .. 160 = 40 = stage;
#           preparing 150 - 100 = 50
N = None
WITHOUT_COMM = {
    1: (65, N, N, N, 45, 110, N, N, 10),
    2: (10, N, N, N, 30, 40, N, N, 50),
}


def _trace(with_comm: bool) -> list[dict]:
    ev = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Python"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "Ascend Hardware"}},
    ]
    ev += [
        {"ph": "X", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1, "ts": f"{T0 + a}.000", "dur": b - a}
        for n, a, b in STEPS
    ]
    tasks = [(t, a, b, 2, "AI_CORE", f"k{t}") for t, a, b in KERNELS]
    tasks.append((*EVENT_TASK, 3, "EVENT_RECORD_SQE", "event"))
    ev += [
        {
            "ph": "X",
            "name": name,
            "pid": 2,
            "tid": stream,
            "ts": f"{T0 + a}.000",
            "dur": b - a,
            "args": {"Task Id": t, "Stream Id": stream, "Task Type": kind},
        }
        for t, a, b, stream, kind, name in tasks
    ]
    if with_comm:
        ev.append({"ph": "M", "name": "process_name", "pid": 3, "args": {"name": "HCCL"}})
        ev += [
            {"ph": "X", "name": name, "pid": 3, "tid": 0, "ts": f"{T0 + a}.000", "dur": b - a}
            for name, a, b in COMM
        ]
    return ev


KERNEL_DETAILS = "Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n" + "".join(
    f"{t},2,k{t},MatMul,AI_CORE,{T0 + a}.000\t,{b - a}\n" for t, a, b in KERNELS
)
# the exporter's own file: step 1 as worked out above but Preparing 10.0005 us (0.5 ns off:
# within the bound); step 2 with a Stage of 42 us (2 us off: beyond 1 us + 1 ns per piece)
STEP_TRACE_TIME = (
    "Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
    "Communication(Not Overlapped and Exclude Receive),Preparing\n"
    "2,1,65,10,5,15,35,110,0,10,10.0005\n"
    "2,2,10,20,5,25,20,42,10,10,30\n"
)


def _build(tmp_path, with_comm: bool, step_trace_time: bool = False):
    files = {"trace_view.json": json.dumps(_trace(with_comm)), "kernel_details.csv": KERNEL_DETAILS}
    if step_trace_time:
        files["step_trace_time.csv"] = STEP_TRACE_TIME
    _run, rows = build_dump(tmp_path / "wh", export(tmp_path, files))
    return rows


def _recomputed(rows) -> dict[int, tuple]:
    return {
        r["step_id"]: tuple(r[f"{c}_recomputed_ns"] for c in COLUMNS)
        for r in rows("step_trace_summary")
        if r["device_id"] == 2
    }


def _ns(values: tuple) -> tuple:
    return tuple(None if v is None else v * US for v in values)


def test_breakdown_with_communication_ops_worked_out_by_hand(tmp_path):
    rows = _build(tmp_path, with_comm=True)
    assert _recomputed(rows) == {step: _ns(v) for step, v in WITH_COMM.items()}
    # no exported breakdown in this export: its columns are NULL, and nothing is compared
    assert all(r["computing_ns"] is None for r in rows("step_trace_summary"))
    assert "export_step_breakdown_differs" not in {i["kind"] for i in rows("build_issues")}


def test_without_communication_ops_the_communication_columns_are_null(tmp_path):
    rows = _build(tmp_path, with_comm=False)
    assert _recomputed(rows) == {step: _ns(v) for step, v in WITHOUT_COMM.items()}


def test_the_exporters_breakdown_is_kept_beside_and_a_difference_beyond_the_bound_is_counted(tmp_path):
    rows = _build(tmp_path, with_comm=True, step_trace_time=True)
    summary = {r["step_id"]: r for r in rows("step_trace_summary")}
    assert sorted(summary) == [1, 2]  # the iterations of the events; no extra row for the file's steps
    exported = {step: tuple(summary[step][f"{c}_ns"] for c in COLUMNS) for step in summary}
    # 10.0005 us = 10000.5 ns -> 10001 ns (half away from zero)
    assert exported == {
        1: (65_000, 15_000, 10_000, 5_000, 35_000, 110_000, 0, 10_000, 10_001),
        2: (10_000, 25_000, 20_000, 5_000, 20_000, 42_000, 10_000, 10_000, 30_000),
    }
    assert _recomputed(rows) == {step: _ns(v) for step, v in WITH_COMM.items()}
    # step 1 is 1 ns off (within 1 us + 1 ns per piece), step 2's stage 2 us: one step differs
    issues = {(i["device_id"], i["kind"]): i["count"] for i in rows("build_issues")}
    assert issues[(2, "export_step_breakdown_differs")] == 1


@pytest.mark.parametrize(("computing_us", "differs"), [("66.007", 0), ("66.008", 1)])
def test_the_bound_is_1_us_and_1_ns_per_piece(tmp_path, computing_us, differs):
    """Step 1 has 7 pieces by hand (compute [10,40) [60,70) [95,120); communication [35,50); not
    overlapped [40,50); free [50,60) [70,95)), so its bound is 1,000 + 7 ns: Computing 1,007 ns
    off is within it, 1,008 ns beyond. Step 2 is exported as worked out (Stage 40)."""
    d = export(
        tmp_path,
        {
            "trace_view.json": json.dumps(_trace(True)),
            "kernel_details.csv": KERNEL_DETAILS,
            "step_trace_time.csv": STEP_TRACE_TIME.replace("2,1,65,", f"2,1,{computing_us},").replace(
                ",20,42,", ",20,40,"
            ),
        },
    )
    _run, rows = build_dump(tmp_path / "wh", d)
    issues = {(i["device_id"], i["kind"]): i["count"] for i in rows("build_issues")}
    assert issues.get((2, "export_step_breakdown_differs"), 0) == differs
