"""Rows of an exported table that share a key: an exact copy is counted (duplicate_row), a row
with other values under the key of an earlier one is data lost (bad_row); none vanishes
silently. Every exported table: the summary CSVs, the database's TASK, COMPUTE_TASK_INFO and
TASK_PMU_INFO, the totals (api_statistic, step_trace_time).
"""

from __future__ import annotations

import pytest

from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import fetch
from pipeline.warehouse.store import Warehouse
from tests.readers.test_exported_db import ROWS, S, build
from tests.readers.test_exported_totals import API_STATISTIC, STEP_TRACE_TIME, export, read

HEADER = (
    "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Block Dim\n"
)
ROW_A = "1,4294967295,11,2,add_1,Add,AI_VECTOR_CORE,1000000000000000,2.5,8\n"
ROW_B = "1,4294967295,12,2,mm_2,MatMul,AI_CORE,1000000000000010,1,24\n"
# ROW_A's execution (stream 2, task 11, same start) with another operator and duration
ROW_A_OTHER = "1,4294967295,11,2,mul_3,Mul,AI_VECTOR_CORE,1000000000000000,3.5,8\n"


def kinds(log) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for i in log.issues:
        if i.kind in ("duplicate_row", "bad_row"):
            key = (i.kind, i.message.split(" row(s)")[0].split(" ", 1)[1])
            out[key] = out.get(key, 0) + i.count
    return out


def test_an_exact_copy_of_a_kernel_row_is_counted_not_lost(tmp_path):
    d = export(tmp_path, {"kernel_details.csv": HEADER + ROW_A + ROW_B + ROW_A})
    _meta, sink, log = read(d)
    assert kinds(log) == {("duplicate_row", "task_runs"): 1, ("duplicate_row", "task_ops"): 1}
    assert log.losses() == {}
    [issue] = [i for i in log.issues if i.kind == "duplicate_row" and "task_ops" in i.message]
    assert issue.source_file == "ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    assert "seq 2 of" in issue.message and "the first seq 0 of" in issue.message


def test_another_row_under_the_key_of_a_kernel_row_is_data_lost(tmp_path):
    d = export(tmp_path, {"kernel_details.csv": HEADER + ROW_A + ROW_B + ROW_A_OTHER})
    _meta, _sink, log = read(d)
    assert kinds(log) == {("bad_row", "task_runs"): 1, ("bad_row", "task_ops"): 1}
    assert log.losses() == {"bad_row": 2}
    [issue] = [i for i in log.issues if i.kind == "bad_row" and "task_ops" in i.message]
    assert "seq 2 of" in issue.message and "the first seq 0 of" in issue.message
    # the row's byte offset in the file: after the header and rows A and B
    assert issue.byte_offset == len(HEADER + ROW_A + ROW_B)


def test_copies_across_two_files_of_one_kind_are_counted(tmp_path):
    d = export(
        tmp_path, {"kernel_details.csv": HEADER + ROW_A, "kernel_details_1.csv": HEADER + ROW_A + ROW_B}
    )
    _meta, _sink, log = read(d)
    assert kinds(log) == {("duplicate_row", "task_runs"): 1, ("duplicate_row", "task_ops"): 1}


@pytest.mark.parametrize(
    "text,expect",
    [
        (API_STATISTIC + "host,acl,aclnnAddmm,259.56,20,12.978,10.85,21.18,6.402\r\n", "duplicate_row"),
        (API_STATISTIC + "host,acl,aclnnAddmm,300,20,15,10.85,21.18,6.402\r\n", "bad_row"),
    ],
)
def test_api_statistic_rows_sharing_level_and_name(tmp_path, text, expect):
    _meta, _sink, log = read(export(tmp_path, {"api_statistic.csv": text}))
    assert kinds(log) == {(expect, "api_totals"): 1}


@pytest.mark.parametrize(
    "extra,expect",
    [("50,8873.756000000001,101963.203,4028.6750000000175,105991.87800000001,25744.050000000003,"
      "136581.0,0,101963.203,17902.5\n", "duplicate_row"),
     ("50,1,1,1,1,1,1,1,1,1\n", "bad_row")],
)  # fmt: skip
def test_step_trace_time_rows_sharing_a_step(tmp_path, extra, expect):
    _meta, _sink, log = read(export(tmp_path, {"step_trace_time.csv": STEP_TRACE_TIME + extra}))
    assert kinds(log) == {(expect, "step_times"): 1}


def test_database_tables_sharing_a_key(tmp_path):
    # TASK: the first execution twice (a copy), and the third once more with another end
    first, third = ROWS["TASK"][0], ROWS["TASK"][2]
    task = [*ROWS["TASK"], first, (third[0], third[1] + 5, *third[2:])]
    # TASK_PMU_INFO: one value of execution 0 twice (a copy) and another value of another metric
    pmu = [*ROWS["TASK_PMU_INFO"], (0, S["aic_mac_ratio"], 0.5), (0, S["aic_l2_read_bw"], 99.0)]
    db = build(tmp_path / "ascend_pytorch_profiler_0.db", rows={"TASK": task, "TASK_PMU_INFO": pmu})
    _meta, _sink, log = read(export(tmp_path, {"ascend_pytorch_profiler_0.db": db.read_bytes()}, rank=3))
    got = kinds(log)
    assert got[("duplicate_row", "task_runs")] == 1 and got[("bad_row", "task_runs")] == 1
    # both repeated executions bring their description again, the same as before (the
    # description is joined on globalTaskId, which both copies share)
    assert got[("duplicate_row", "task_ops")] == 2
    assert got[("bad_row", "task_metrics")] >= 1
    assert log.losses()["bad_row"] == sum(n for (k, _t), n in got.items() if k == "bad_row")


@pytest.mark.slow
def test_a_run_with_rows_sharing_a_key_reports_them_and_keeps_one(tmp_path):
    d = export(tmp_path, {"kernel_details.csv": HEADER + ROW_A + ROW_B + ROW_A + ROW_A_OTHER})
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        [o] = run_roots(wh, [d])
    assert o.status == "built" and o.losses == {"bad_row": 2}
    issues = fetch(wh, "ingest_issues", [o.run_id])[1].to_pylist()
    assert sum(i["count"] for i in issues if i["kind"] == "duplicate_row") == 2
    assert {i["kind"] for i in issues} == {"duplicate_row", "bad_row"}
    ops = fetch(wh, "op_summary", [o.run_id])[1].to_pylist()
    assert sorted(r["op_name"] for r in ops) == ["add_1", "mm_2"]


def test_a_copied_step_is_counted_and_a_step_at_other_times_is_kept(tmp_path):
    # STEP_TIME: step 1 twice exactly (the step-trace rule passes over the copy's keypoints),
    # step 2 twice at other times (two iterations: nothing lost, nothing reported)
    t0 = ROWS["STEP_TIME"][0][1]
    steps = [(1, t0, t0 + 600), (1, t0, t0 + 600), (2, t0 + 700, t0 + 800), (2, t0 + 900, t0 + 950)]
    db = build(tmp_path / "ascend_pytorch_profiler_0.db", rows={"STEP_TIME": steps})
    _meta, sink, log = read(export(tmp_path, {"ascend_pytorch_profiler_0.db": db.read_bytes()}, rank=3))
    assert len(sink.rows("step_trace")) == 8
    assert {k: n for k, n in kinds(log).items() if k[1] == "step_trace"} == {
        ("duplicate_row", "step_trace"): 2
    }
    assert log.losses() == {}
