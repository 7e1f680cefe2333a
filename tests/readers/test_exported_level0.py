"""A torch_npu level0 export: kernel_details.csv without Stream ID and Task ID beside an event
timeline that names every task. Each kernel row joins the one execution of its device starting
at its start (docs/formats.md#export-level0); only what cannot be joined is counted.

Expected rows are worked out by hand from the text written here.
"""

from __future__ import annotations

import json

import pytest

from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import fetch
from pipeline.warehouse.store import Warehouse
from tests.readers.test_exported_totals import export, read

# torch_npu level0 header (no Stream ID, Task ID or Context ID, no metric columns)
LEVEL0 = (
    "Step Id,Device_id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim,"
    "Mix Block Dim,HF32 Eligible,Input Shapes,Input Data Types,Input Formats,Output Shapes,"
    "Output Data Types,Output Formats\n"
    '1,2,add_1,Add,AI_VECTOR_CORE,1000000000000000.125\t,2.5,0,8,0,NO,"""4,4""",FLOAT,ND,"""4,4""",FLOAT,ND\n'
    '1,2,mm_2,MatMul,AI_CORE,1000000000000010\t,1,0,24,0,NO,"""4,8;8,4""",FLOAT,ND,"""4,4""",FLOAT,ND\n'
    # no task starts here: it cannot be joined
    '1,2,cast_3,Cast,AI_CORE,1000000000000020\t,1,0,4,0,NO,"""4""",FLOAT,ND,"""4""",INT32,ND\n'
    # two tasks start here: it cannot be told which
    '1,2,mul_4,Mul,AI_CORE,1000000000000030\t,1,0,2,0,NO,"""4""",FLOAT,ND,"""4""",FLOAT,ND\n'
)


def hw(name, ts, dur, stream, task):
    return {"ph": "X", "name": name, "pid": 9, "tid": stream, "ts": ts, "dur": dur,
            "args": {"Task Id": task, "Stream Id": stream, "Task Type": "AI_CORE"}}  # fmt: skip


TRACE = [
    {"ph": "M", "name": "process_name", "pid": 9, "args": {"name": "Ascend Hardware"}},
    hw("add_1", "1000000000000000.125", "2.5", 3, 101),
    hw("mm_2", "1000000000000010.000", "1", 3, 102),
    hw("notify_wait", "1000000000000025.000", "1", 4, 103),
    hw("mul_4", "1000000000000030.000", "1", 3, 104),
    hw("memcpy", "1000000000000030.000", "1", 5, 105),
]


def test_level0_kernel_rows_are_read_keyed_by_start(tmp_path):
    d = export(tmp_path, {"kernel_details.csv": LEVEL0, "trace_view.json": json.dumps(TRACE)})
    meta, sink, log = read(d)
    assert not [i for i in log.issues if i.kind == "unreadable_file"]
    ops = sink.rows("task_ops")
    # 1000000000000000.125 us = ...000125 ns
    assert [(r["device_id"], r["stream_id"], r["task_id"], r["start_ns"], r["op_name"], r["block_dim"])
            for r in ops] == [
        (2, None, None, 1000000000000000125, "add_1", 8),
        (2, None, None, 1000000000000010000, "mm_2", 24),
        (2, None, None, 1000000000000020000, "cast_3", 4),
        (2, None, None, 1000000000000030000, "mul_4", 2),
    ]  # fmt: skip
    assert len(sink.rows("task_runs")) == 5  # every execution from the timeline
    assert "task_ops: summary CSV ASCEND_PROFILER_OUTPUT/kernel_details.csv" in meta.sources
    assert log.losses() == {}


@pytest.mark.slow
def test_level0_ops_join_the_timelines_executions_and_the_rest_is_counted(tmp_path):
    d = export(tmp_path, {"kernel_details.csv": LEVEL0, "trace_view.json": json.dumps(TRACE)})
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        [o] = run_roots(wh, [d])
    assert o.status == "built", o.error
    rows = fetch(wh, "op_summary", [o.run_id])[1].to_pylist()
    got = {(r["stream_id"], r["task_id"]): (r["op_name"], r["block_dim"]) for r in rows}
    assert got == {
        (3, 101): ("add_1", 8),
        (3, 102): ("mm_2", 24),
        (4, 103): (None, None),  # a task no kernel row names
        (3, 104): (None, None),  # two tasks start with mul_4: which one ran it is not known
        (5, 105): (None, None),
    }
    issues = {r["kind"]: r["count"] for r in fetch(wh, "build_issues", [o.run_id])[1].to_pylist()}
    assert issues.get("export_ops_without_task") == 2  # cast_3 and mul_4
