"""msprof's AI CPU summary (``aicpu_*.csv``, docs/formats.md#export-aicpu) read into aicpu_tasks,
and aicpu_ops built from it beside the export's executions; expected rows worked out by hand
from the text written here."""

from __future__ import annotations

import pytest

from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import fetch
from pipeline.warehouse.store import Warehouse
from tests.readers.test_exported_totals import export, read

AICPU = (
    "Timestamp(us),Node,Compute_time(us),Memcpy_time(us),Task_time(us),Dispatch_time(us),"
    "Total_time(us),Stream ID,Task ID\n"
    "1000000000000110.5\t,DropoutGenMask-op1,20.001,3.5,30.25,4,40.125,3,7\n"
    "1000000000000300.000\t,N/A,1,0,2,0.5,3,3,8\n"
)
# by hand: 1000000000000110.5 us -> 1000000000000110500 ns; + 30.25 us -> end ...140750 ns
ROWS = [
    {"device_id": 2, "seq": 0, "record_format": "export", "stream_id": 3, "task_id": 7,
     "node_name": "DropoutGenMask-op1", "start_ns": 1000000000000110500, "end_ns": 1000000000000140750,
     "compute_ns": 20001, "memcpy_ns": 3500, "dispatch_ns": 4000, "total_ns": 40125, "submit_ns": None},
    {"device_id": 2, "seq": 1, "record_format": "export", "stream_id": 3, "task_id": 8, "node_name": None,
     "start_ns": 1000000000000300000, "end_ns": 1000000000000302000, "compute_ns": 1000, "memcpy_ns": 0,
     "dispatch_ns": 500, "total_ns": 3000, "submit_ns": None},
]  # fmt: skip
OP_SUMMARY = (
    "Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us),"
    "Block Dim\n"
    "2,4294967295,7,3,Default/DropoutGenMask-op1,DropoutGenMask,AI_CPU,1000000000000100.000\t,50.0,1\n"
    "2,4294967295,9,3,add_1,Add,AI_CORE,1000000000000200.000\t,5.0,8\n"
)


def test_the_aicpu_summary_fills_aicpu_tasks(tmp_path):
    meta, sink, log = read(export(tmp_path, {"aicpu_20260101.csv": AICPU}))
    got = [{k: r[k] for k in ROWS[0]} for r in sink.rows("aicpu_tasks")]
    assert got == ROWS
    assert "aicpu_tasks: summary CSV ASCEND_PROFILER_OUTPUT/aicpu_20260101.csv" in meta.sources
    assert log.losses() == {}
    assert log.bytes_decoded + log.bytes_skipped() == meta.data_bytes


def test_aicpu_mi_and_an_export_without_the_summary(tmp_path):
    meta, sink, log = read(
        export(tmp_path, {"aicpu_mi_0_1.csv": "Node,Start Time\n", "op_summary.csv": OP_SUMMARY})
    )
    assert sink.rows("aicpu_tasks") == []
    assert "ASCEND_PROFILER_OUTPUT/aicpu_mi_0_1.csv" in {
        i.source_file for i in log.issues if i.kind == "not_read"
    }
    assert any(n.startswith("aicpu_tasks: no AI CPU task summary") for n in meta.notes)


@pytest.mark.slow  # builds a run
def test_aicpu_ops_of_an_export_join_the_exported_ai_cpu_execution(tmp_path):
    d = export(tmp_path, {"aicpu_1.csv": AICPU, "op_summary_1.csv": OP_SUMMARY})
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (o,) = run_roots(wh, [d])
    _, t = fetch(wh, "aicpu_ops", [o.run_id])
    got = [
        (r["seq"], r["stream_id"], r["task_id"], r["op_name"], r["op_source"], r["task_ns"])
        for r in t.to_pylist()
    ]
    # row 0 ends at ...140.75 us, inside the AI_CPU execution of stream 3 task 7 (100 to 150 us)
    assert got == [
        (0, 3, 7, "Default/DropoutGenMask-op1", "execution", 30250),
        (1, 3, 8, None, None, 2000),
    ]
    _, issues = fetch(wh, "build_issues", [o.run_id])
    assert {
        (r["device_id"], r["kind"], r["count"]) for r in issues.to_pylist() if r["kind"] == "aicpu_without_op"
    } == {(2, "aicpu_without_op", 1)}
