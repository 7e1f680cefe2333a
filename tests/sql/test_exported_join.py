"""Exported ops and PMU values meet their execution exactly on (device, stream, task, start):
a hand-made export whose timeline and kernel_details disagree on one task."""

from __future__ import annotations

import json

import pytest

from tests.helpers.built import build_dump

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

HW = 100  # trace pid of the Ascend Hardware process

TRACE = [
    {"ph": "M", "name": "process_name", "pid": HW, "tid": 0, "args": {"name": "Ascend Hardware"}},
    # stream 3: task 7 runs twice (two executions of the same task id), task 8 once
    {
        "ph": "X",
        "name": "MatMul_k",
        "pid": HW,
        "tid": 3,
        "ts": "1000.000",
        "dur": "2.500",
        "args": {"Task Id": 7, "Stream Id": 3, "Task Type": "AI_CORE", "Subtask Id": 4294967295},
    },
    {
        "ph": "X",
        "name": "Gelu_k",
        "pid": HW,
        "tid": 3,
        "ts": "1010.000",
        "dur": "1.250",
        "args": {"Task Id": 8, "Stream Id": 3, "Task Type": "AI_VECTOR_CORE", "Subtask Id": 4294967295},
    },
    {
        "ph": "X",
        "name": "MatMul_k",
        "pid": HW,
        "tid": 3,
        "ts": "1020.000",
        "dur": "3.000",
        "args": {"Task Id": 7, "Stream Id": 3, "Task Type": "AI_CORE", "Subtask Id": 4294967295},
    },
]
# kernel_details describes the first two executions and one the timeline does not have (start 1030)
KERNELS = """Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Block Dim,Context ID,aicore_time(us),aic_total_cycles,aic_mac_ratio,aiv_time(us),aiv_total_cycles,aiv_vec_ratio
7,3,MatMul_k,MatMul,AI_CORE,1000.000\t,2.500,8,N/A,2.0,3600,0.5,0.0,0,0.0
8,3,Gelu_k,Gelu,AI_VECTOR_CORE,1010.000\t,1.250,4,N/A,0.0,0,0.0,1.0,1800,0.25
7,3,MatMul_k,MatMul,AI_CORE,1030.000\t,3.000,8,N/A,2.5,4500,0.6,0.0,0,0.0
"""


def _run(tmp_path):
    dump = tmp_path / "export"
    dump.mkdir()
    (dump / "trace_view.json").write_text(json.dumps(TRACE))
    (dump / "kernel_details.csv").write_text(KERNELS)
    return build_dump(tmp_path / "wh", dump)[1]


def test_ops_and_pmu_values_join_their_own_execution(tmp_path):
    rows = _run(tmp_path)
    ops = [
        (
            r["task_id"],
            r["start_ns"],
            r["dur_ns"],
            r["op_type"],
            r["block_dim"],
            r["aicore_time_us"],
            r["total_cycles"],
            r["mac_ratio"],
            r["vec_ratio"],
        )
        for r in rows("op_summary")
    ]
    assert ops == [
        # AI Core task: the aic_ values (there is no aic_vec_ratio column: NULL, not the aiv_ one)
        (7, 1_000_000, 2_500, "MatMul", 8, 2.0, 3600.0, 0.5, None),
        # vector core task: the aiv_ values (aiv_time(us), aiv_total_cycles, aiv_vec_ratio)
        (8, 1_010_000, 1_250, "Gelu", 4, 1.0, 1800.0, None, 0.25),
        (
            7,
            1_020_000,
            3_000,
            None,
            None,
            None,
            None,
            None,
            None,
        ),  # no description names it: not the other 7's
    ]
    assert [r["wait_ns"] for r in rows("op_summary")] == [0, 7_500, 8_750]
    ai = [(r["task_id"], r["ts_ns"], r["aicore_time_us"]) for r in rows("ai_core_metrics")]
    assert ai == [(7, 1_002_500, 2.0), (8, 1_011_250, 1.0)]


def test_pmu_values_of_an_execution_the_run_lacks_are_counted(tmp_path):
    rows = _run(tmp_path)
    issues = {r["kind"]: r["count"] for r in rows("build_issues")}
    assert issues.get("export_metrics_without_task") == 1
    stats = {(r["op_type"], r["core_type"]): (r["count"], r["total_ns"]) for r in rows("op_statistic")}
    assert stats == {("MatMul", "AI_CORE"): (1, 2_500), ("Gelu", "AI_VECTOR_CORE"): (1, 1_250)}


def test_op_summary_order_and_wait_per_device(tmp_path):
    """Rows in (device, start) order whatever the file order; the wait restarts at each device
    (device 1 starts after device 0's last end: its first wait is still 0)."""

    def kernel(task, ts, dur, stream=3):
        return {
            "ph": "X",
            "name": "k",
            "pid": HW,
            "tid": stream,
            "ts": ts,
            "dur": dur,
            "args": {"Task Id": task, "Stream Id": stream, "Task Type": "AI_CORE", "Subtask Id": 4294967295},
        }

    root = tmp_path / "PROF_000001_20260101000000000_ABCDEFGHIJKLMNOP"
    by_device = {
        0: [kernel(2, "1020.000", "1.000"), kernel(1, "1000.000", "2.500")],  # written last-first
        1: [kernel(5, "1030.000", "1.000"), kernel(6, "1033.000", "1.000", stream=4)],
    }
    for device, events in by_device.items():
        d = root / f"device_{device}" / "timeline"
        d.mkdir(parents=True)
        (d / "task_time.json").write_text(json.dumps([TRACE[0]] + events))
    rows = build_dump(tmp_path / "wh", root)[1]
    assert [(r["device_id"], r["task_id"], r["start_ns"], r["wait_ns"]) for r in rows("op_summary")] == [
        (0, 1, 1_000_000, 0),
        (0, 2, 1_020_000, 17_500),  # 1020 - (1000 + 2.5) us
        (1, 5, 1_030_000, 0),  # not 1030 - 1021 us: device 0's rows are not its predecessors
        (1, 6, 1_033_000, 2_000),  # 1033 - 1031 us, across streams
    ]


def test_rows_in_time_order_whatever_the_file_order(tmp_path):
    """Forty executions written in a shuffled order: op_summary and ai_core_metrics list them by
    time, and each wait is the gap to the previous execution's end (worked out here from the
    list of executions)."""
    # task t: starts at 1000 + 10 t us, runs 1 + t % 3 us; every start 10 us after the previous one
    tasks = list(range(40))
    order = sorted(tasks, key=lambda t: (t * 17) % 40)  # a fixed shuffle
    trace = TRACE[:1] + [
        {
            "ph": "X",
            "name": f"k{t}",
            "pid": HW,
            "tid": 3,
            "ts": f"{1000 + 10 * t}.000",
            "dur": f"{1 + t % 3}.000",
            "args": {"Task Id": t, "Stream Id": 3, "Task Type": "AI_CORE", "Subtask Id": 4294967295},
        }
        for t in order
    ]
    header = KERNELS.splitlines()[0]
    kernels = [
        f"{t},3,k{t},Add,AI_CORE,{1000 + 10 * t}.000\t,{1 + t % 3}.000,1,N/A,{t}.0,100,0.5,0.0,0,0.0"
        for t in order
    ]
    dump = tmp_path / "export"
    dump.mkdir()
    (dump / "trace_view.json").write_text(json.dumps(trace))
    (dump / "kernel_details.csv").write_text("\n".join([header, *kernels]) + "\n")
    rows = build_dump(tmp_path / "wh", dump)[1]
    starts = [1_000_000 + 10_000 * t for t in tasks]
    ends = [s + 1_000 * (1 + t % 3) for t, s in zip(tasks, starts)]
    waits = [0] + [starts[t] - ends[t - 1] for t in tasks[1:]]
    assert [(r["task_id"], r["start_ns"], r["wait_ns"]) for r in rows("op_summary")] == list(
        zip(tasks, starts, waits)
    )
    assert [(r["task_id"], r["ts_ns"], r["aicore_time_us"]) for r in rows("ai_core_metrics")] == [
        (t, e, float(t)) for t, e in zip(tasks, ends)
    ]


def test_a_description_and_pmu_values_of_no_execution_are_one_row(tmp_path):
    """kernel_details' row at 1030 us gives an operator description and PMU values, and the
    timeline has no execution there: stg_export_ops keeps them as one row (its grain, without an
    execution's seq), not as two rows of one key, and build_issues counts each kind once."""
    from pipeline.jobs.build import connect
    from pipeline.jobs.raw_reads import create_raw_views
    from pipeline.jobs.transforms import run_table_layers
    from pipeline.warehouse.store import Warehouse

    rows = _run(tmp_path)
    wh = Warehouse(tmp_path / "wh")
    (run,) = wh.run_index().run_records()
    (tmp_path / "work").mkdir()
    con = connect(tmp_path / "work")
    try:
        create_raw_views(con, wh, run)
        run_table_layers(con, only={"stg_export_ops"})
        got = con.execute(
            "select task_id, start_ns, has_run, has_op, has_metrics, op_type, total_cycles "
            "from stg_export_ops where not has_run"
        ).fetchall()
    finally:
        con.close()
    # the row of kernel_details' third line: task 7 at 1030 us, MatMul, 4500 cycles (aic side)
    assert got == [(7, 1_030_000, False, True, True, "MatMul", 4500.0)]
    issues = {r["kind"]: r["count"] for r in rows("build_issues")}
    assert issues.get("export_ops_without_task") == 1 and issues.get("export_metrics_without_task") == 1
