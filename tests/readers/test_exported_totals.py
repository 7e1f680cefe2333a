"""An export without events, with the exporter's totals: api_statistic.csv, step_trace_time.csv
and analysis.db's StepTraceTime fill api_totals and step_times, the marts api_statistic and
step_trace_summary read them, and the run's sources name them; a summary that cannot be used is
data lost, never a silent empty table.

Expected rows are worked out by hand from the text written here.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import fetch
from pipeline.readers.exported.reader import read_export
from pipeline.readers.issues import LOSS_KINDS, IssueLog
from pipeline.warehouse.store import Warehouse
from tests.readers.test_exported_csv import MemSink

API_STATISTIC = (
    "Device_id,Level,API Name,Time(us),Count,Avg(us),Min(us),Max(us),Variance\r\n"
    "host,acl,aclnnAddmm,259.56,20,12.978,10.85,21.18,6.402\r\n"
    "host,node,launch,0.5,1,0.5,0.5,0.5,0\r\n"
    "1,runtime,rtKernelLaunch,3.0005,2,1.50025,1,2.0005,0.25\r\n"
)
# by hand: 259.56 us = 259560 ns, 12.978 us = 12978 ns; 3.0005 us = 3000.5 ns -> 3001 (half away
# from zero), 1.50025 us = 1500.25 ns -> 1500, 2.0005 us -> 2001
API_TOTALS = [
    {"device_id": 64, "seq": 0, "level": "acl", "api_name": "aclnnAddmm", "time_ns": 259560, "count": 20,
     "avg_ns": 12978, "min_ns": 10850, "max_ns": 21180, "variance_us2": 6.402},
    {"device_id": 64, "seq": 1, "level": "node", "api_name": "launch", "time_ns": 500, "count": 1,
     "avg_ns": 500, "min_ns": 500, "max_ns": 500, "variance_us2": 0.0},
    {"device_id": 1, "seq": 2, "level": "runtime", "api_name": "rtKernelLaunch", "time_ns": 3001, "count": 2,
     "avg_ns": 1500, "min_ns": 1000, "max_ns": 2001, "variance_us2": 0.25},
]  # fmt: skip
STEP_TRACE_TIME = (
    "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
    "Communication(Not Overlapped and Exclude Receive),Preparing\n"
    "50,8873.756000000001,101963.203,4028.6750000000175,105991.87800000001,25744.050000000003,"
    "136581.0,0,101963.203,17902.5\n"
    "51,1.0005,2,0,2,3,6.0005,0,2,N/A\n"
)
# by hand: 8873.756000000001 us -> 8873756 ns; 4028.6750000000175 -> 4028675; 1.0005 us -> 1001 ns
STEP_TIMES = [
    {"device_id": 2, "seq": 0, "step_id": 50, "computing_ns": 8873756,
     "communication_not_overlapped_ns": 101963203, "overlapped_ns": 4028675, "communication_ns": 105991878,
     "free_ns": 25744050, "stage_ns": 136581000, "bubble_ns": 0,
     "communication_not_overlapped_exclude_receive_ns": 101963203, "preparing_ns": 17902500},
    {"device_id": 2, "seq": 1, "step_id": 51, "computing_ns": 1001, "communication_not_overlapped_ns": 2000,
     "overlapped_ns": 0, "communication_ns": 2000, "free_ns": 3000, "stage_ns": 6001, "bubble_ns": 0,
     "communication_not_overlapped_exclude_receive_ns": 2000, "preparing_ns": None},
]  # fmt: skip
KERNEL = (
    "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Block Dim\n"
    "50,4294967295,11,2,add_1,Add,AI_VECTOR_CORE,1000000000000000,2.5,8\n"
)
CANN_TRACE = [
    {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "CANN"}},
    {"ph": "X", "name": "AscendCL@aclnnAddmm", "pid": 1, "tid": 5, "ts": "1000000000000000.000", "dur": 2,
     "args": {"level": "acl"}},
    {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "Python"}},
    {"ph": "X", "name": "ProfilerStep#50", "pid": 2, "tid": 6, "ts": "1000000000000000.000", "dur": 10},
]  # fmt: skip


def export(tmp_path: Path, files: dict[str, str | bytes], rank: int = 2) -> Path:
    d = tmp_path / f"host_{rank}_ascend_pt"
    out = d / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (d / f"profiler_info_{rank}.json").write_text(json.dumps({"rank_id": rank}))
    for name, text in files.items():
        (out / name).write_bytes(text.encode() if isinstance(text, str) else text)
    return d


def read(d: Path):
    sink, log = MemSink(), IssueLog()
    meta = read_export(d, sink, log)
    return meta, sink, log


def pick(rows: list[dict], like: list[dict]) -> list[dict]:
    return [{k: r[k] for k in like[0]} for r in rows]


def test_api_statistic_and_step_trace_time_fill_the_totals_tables_when_no_events(tmp_path):
    d = export(tmp_path, {"api_statistic.csv": API_STATISTIC, "step_trace_time.csv": STEP_TRACE_TIME,
                          "kernel_details.csv": KERNEL})  # fmt: skip
    meta, sink, log = read(d)
    assert pick(sink.rows("api_totals"), API_TOTALS) == API_TOTALS
    assert pick(sink.rows("step_times"), STEP_TIMES) == STEP_TIMES
    assert "api_totals: summary CSV ASCEND_PROFILER_OUTPUT/api_statistic.csv" in meta.sources
    assert "step_times: summary CSV ASCEND_PROFILER_OUTPUT/step_trace_time.csv" in meta.sources
    assert not [i for i in log.issues if i.kind == "not_read"]
    assert log.losses() == {}
    assert log.bytes_decoded + log.bytes_skipped() == meta.data_bytes


def test_api_totals_are_not_read_where_the_events_are_and_the_step_breakdown_is_read_beside_them(tmp_path):
    """api_statistic is not read beside API events; step_trace_time is, as the reference the
    recomputed step breakdown is compared with (docs/formats.md#export-step-breakdown), without
    the note that says the mart is built from the exporter's totals."""
    d = export(tmp_path, {"api_statistic.csv": API_STATISTIC, "step_trace_time.csv": STEP_TRACE_TIME,
                          "trace_view.json": json.dumps(CANN_TRACE)})  # fmt: skip
    meta, sink, log = read(d)
    assert sink.rows("api_totals") == []
    assert pick(sink.rows("step_times"), STEP_TIMES) == STEP_TIMES
    assert len(sink.rows("api_calls")) == 1 and sink.rows("step_trace")
    not_read = {i.source_file for i in log.issues if i.kind == "not_read"}
    assert "ASCEND_PROFILER_OUTPUT/api_statistic.csv" in not_read
    assert "ASCEND_PROFILER_OUTPUT/step_trace_time.csv" not in not_read
    assert not any(s.startswith("api_totals") for s in meta.sources)
    assert "step_times: summary CSV ASCEND_PROFILER_OUTPUT/step_trace_time.csv" in meta.sources
    assert not any("built from the exporter's totals" in n for n in meta.notes)


def test_a_timeline_without_api_events_leaves_the_api_totals_to_the_summary(tmp_path):
    steps_only = [e for e in CANN_TRACE if e.get("pid") == 2]
    d = export(tmp_path, {"api_statistic.csv": API_STATISTIC, "trace_view.json": json.dumps(steps_only)})
    meta, sink, log = read(d)
    assert pick(sink.rows("api_totals"), API_TOTALS) == API_TOTALS
    assert "api_totals: summary CSV ASCEND_PROFILER_OUTPUT/api_statistic.csv" in meta.sources


def test_analysis_db_step_trace_time_fills_step_times(tmp_path):
    db = tmp_path / "analysis.db"
    con = sqlite3.connect(db)
    con.execute(
        "CREATE TABLE StepTraceTime (step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, "
        "overlapped NUMERIC, communication NUMERIC, free NUMERIC, stage NUMERIC, bubble NUMERIC, "
        "communication_not_overlapped_and_exclude_receive NUMERIC, preparing NUMERIC)"
    )
    con.execute("INSERT INTO StepTraceTime VALUES ('50', 8843.91, 85881.122, 3999.454, 89880.576, "
                "25900.158, 120625.19, 0, 85881.122, 16681.808)")  # fmt: skip
    con.execute("INSERT INTO StepTraceTime VALUES ('x', 1, 1, 1, 1, 1, 1, 1, 1, 1)")
    con.commit()
    con.close()
    d = export(tmp_path, {"analysis.db": db.read_bytes(), "kernel_details.csv": KERNEL})
    meta, sink, log = read(d)
    # by hand: 8843.91 us = 8843910 ns, 120625.19 us = 120625190 ns, 16681.808 us = 16681808 ns
    assert pick(sink.rows("step_times"), [dict.fromkeys(("device_id", "step_id", "computing_ns", "stage_ns",
                                                          "preparing_ns", "bubble_ns"))]) == [
        {"device_id": 2, "step_id": 50, "computing_ns": 8843910, "stage_ns": 120625190,
         "preparing_ns": 16681808, "bubble_ns": 0}
    ]  # fmt: skip
    assert "step_times: database ASCEND_PROFILER_OUTPUT/analysis.db" in meta.sources
    # the step that is no integer is a row lost, and said so
    assert log.losses() == {"bad_row": 1}


@pytest.mark.parametrize(
    "name,text,kind",
    [
        ("api_statistic.csv", "Level,Count\nacl,1\n", "unreadable_file"),
        ("api_statistic.csv", "Level,API Name,Time(us),Count\nacl,a,1,x\n", "bad_row"),
        ("step_trace_time.csv", "Step,Computing\n1,2\n", "unreadable_file"),
        ("step_trace_time.csv", b"\x00\xff\xfe garbage", "unreadable_file"),
    ],
)
def test_a_summary_that_cannot_be_used_is_data_lost(tmp_path, name, text, kind):
    d = export(tmp_path, {name: text, "kernel_details.csv": KERNEL})
    _meta, sink, log = read(d)
    [issue] = [i for i in log.issues if i.kind in LOSS_KINDS]
    assert issue.kind == kind and issue.source_file == f"ASCEND_PROFILER_OUTPUT/{name}"
    assert issue.byte_offset is not None
    assert sink.rows("api_totals") == [] and sink.rows("step_times") == []


@pytest.mark.slow
def test_the_marts_are_built_from_the_totals(tmp_path):
    d = export(tmp_path, {"api_statistic.csv": API_STATISTIC, "step_trace_time.csv": STEP_TRACE_TIME,
                          "kernel_details.csv": KERNEL})  # fmt: skip
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        [o] = run_roots(wh, [d])
    assert o.status == "built" and o.losses == {}
    api = fetch(wh, "api_statistic", [o.run_id])[1].to_pylist()
    assert [(r["device_id"], r["level"], r["api_name"], r["time_ns"], r["count"], r["avg_ns"], r["min_ns"],
             r["max_ns"], r["variance_us2"]) for r in api] == [
        (1, "runtime", "rtKernelLaunch", 3001, 2, 1500.5, 1000, 2001, 0.25),
        (64, "acl", "aclnnAddmm", 259560, 20, 12978.0, 10850, 21180, 6.402),
        (64, "node", "launch", 500, 1, 500.0, 500, 500, 0.0),
    ]  # fmt: skip
    steps = fetch(wh, "step_trace_summary", [o.run_id])[1].to_pylist()
    assert [(r["device_id"], r["iteration_id"], r["iter_id"], r["computing_ns"], r["stage_ns"],
             r["preparing_ns"], r["iteration_ns"]) for r in steps] == [
        (2, 50, 1, 8873756, 136581000, 17902500, None),
        (2, 51, 2, 1001, 6001, None, None),
    ]  # fmt: skip
    assert any(
        s.startswith("api_totals: summary CSV") for s in wh.run_index().run_record(o.run_id)["sources"]
    )


@pytest.mark.slow
def test_an_unusable_summary_is_a_run_with_data_lost(tmp_path):
    d = export(tmp_path, {"api_statistic.csv": "Level,Count\nacl,1\n", "kernel_details.csv": KERNEL})
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        [o] = run_roots(wh, [d])
    assert o.status == "built" and o.losses == {"unreadable_file": 1}


def test_analysis_db_is_preferred_to_step_trace_time_csv_also_beside_step_events(tmp_path):
    db = tmp_path / "analysis.db"
    con = sqlite3.connect(db)
    con.execute(
        "CREATE TABLE StepTraceTime (step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, "
        "overlapped NUMERIC, communication NUMERIC, free NUMERIC, stage NUMERIC, bubble NUMERIC, "
        "communication_not_overlapped_and_exclude_receive NUMERIC, preparing NUMERIC)"
    )
    con.execute("INSERT INTO StepTraceTime VALUES ('7', 1, 0, 0, 0, 2, 3, 0, 0, 0)")
    con.commit()
    con.close()
    files = {"analysis.db": db.read_bytes(), "step_trace_time.csv": STEP_TRACE_TIME}
    _meta, sink, log = read(export(tmp_path / "a", files))
    assert [r["step_id"] for r in sink.rows("step_times")] == [7]
    [why] = [i.message for i in log.issues if i.source_file.endswith("step_trace_time.csv")]
    assert "more detailed source of the same totals" in why
    steps = [e for e in CANN_TRACE if e.get("pid") == 2]
    _meta, sink, log = read(export(tmp_path / "b", {**files, "trace_view.json": json.dumps(steps)}))
    assert [r["step_id"] for r in sink.rows("step_times")] == [7] and sink.rows("step_trace")
    not_read = {i.source_file for i in log.issues if i.kind == "not_read"}
    assert "ASCEND_PROFILER_OUTPUT/step_trace_time.csv" in not_read
    assert "ASCEND_PROFILER_OUTPUT/analysis.db" not in not_read
