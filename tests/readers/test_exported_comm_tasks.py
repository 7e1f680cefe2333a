"""Communication tasks of an export (comm_tasks): the HCCL events with a task type of msprof's
per-iteration hccl_<dev>_<model>_<iter>.json (read in place of the same events in
msprof_<dev>_<model>_<iter>.json), of a trace_view.json, and a database's COMMUNICATION_TASK_INFO
(docs/formats.md#rule-comm-tasks). Expected rows are worked out by hand from the text here."""

from __future__ import annotations

import json
import sqlite3

from pipeline.readers.exported.reader import read_export
from pipeline.readers.issues import IssueLog
from tests.readers.test_exported_csv import MemSink
from tests.readers.test_exported_totals import export, read

T0 = "1000000000000"  # us, wall clock (2001-09-09)
PID = 1003611


def _hccl_events() -> list[dict]:
    """msprof 2023's hccl_*.json: the HCCL process, its Plane threads, the op on Communication Kernel."""

    def task(tid, ts, dur, **args):
        base = {
            "notify_id": 160,
            "stream id": 12,
            "task id": 2,
            "src rank": 0,
            "dst rank": 4294967295,
            "transport type": "LOCAL",
            "size(Byte)": 0,
            "data type": "INVALID_TYPE",
            "link type": "INVALID_TYPE",
            "bandwidth(GB/s)": 0.0,
        }
        base.update(args)
        name = base["task type"]
        return {"name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur, "args": base, "ph": "X"}

    return [
        {"name": "process_name", "pid": PID, "tid": 0, "args": {"name": "HCCL"}, "ph": "M"},
        {"name": "thread_name", "pid": PID, "tid": 0, "args": {"name": "Plane 0"}, "ph": "M"},
        {"name": "thread_name", "pid": PID, "tid": 1, "args": {"name": "Plane 1"}, "ph": "M"},
        {
            "name": "thread_name",
            "pid": PID,
            "tid": 70000,
            "args": {"name": "Communication Kernel"},
            "ph": "M",
        },
        # seq 4: 1000000000000.3 us for 3.25 us -> 1000000000000300 ns .. +3250 ns
        task(1, f"{T0}.3", 3.25, **{"task type": "Notify_Wait"}),
        # seq 5: the op as a whole: comm_ops (read from msprof_*.json here), not a task
        {
            "name": "Default/AllReduce-op534_0",
            "pid": PID,
            "tid": 70000,
            "ts": f"{T0}.3",
            "dur": 50,
            "ph": "X",
        },
        # seq 6: a copy over HCCS, its size in hexadecimal text ("0x6b2a00" = 7023104 bytes)
        task(
            0,
            f"{T0}.52",
            308.7,
            **{
                "task type": "Reduce_Inline",
                "stream id": 13,
                "task id": 7,
                "dst rank": 3,
                "transport type": "SDMA",
                "size(Byte)": "0x6b2a00",
                "data type": "FP32",
                "link type": "HCCS",
                "bandwidth(GB/s)": 22.750579850988014,
                "notify_id": 12884902040,
            },
        ),
    ]


def _msprof_events() -> list[dict]:
    """msprof_*.json of the same iteration: the same HCCL events, and a step."""
    return [
        {"name": "process_name", "pid": 3, "tid": 0, "args": {"name": "Ascend Hardware"}, "ph": "M"},
        {
            "name": "Iteration 1",
            "pid": 3,
            "tid": 1,
            "ts": f"{T0}.0",
            "dur": 1000,
            "cat": "Iteration Time",
            "ph": "X",
            "args": {"Iteration ID": 1},
        },
        *_hccl_events(),
    ]


def _prof(tmp_path):
    tl = tmp_path / "PROF_000001_20230818142704322_COJGGGCANRMICFBC" / "device_0" / "timeline"
    tl.mkdir(parents=True)
    (tl / "hccl_0_2_1.json").write_text(json.dumps(_hccl_events()))
    (tl / "msprof_0_2_1.json").write_text(json.dumps(_msprof_events()))
    return tmp_path / "PROF_000001_20230818142704322_COJGGGCANRMICFBC"


COLS = (
    "device_id",
    "seq",
    "task_type",
    "op_name",
    "plane_id",
    "start_ns",
    "end_ns",
    "stream_id",
    "task_id",
    "notify_id",
    "src_rank",
    "dst_rank",
    "transport_type",
    "link_type",
    "data_type",
    "size_bytes",
    "bandwidth_gbps",
    "model_id",
)


def test_hccl_json_tasks_are_comm_tasks_and_msprof_json_copies_are_reported(tmp_path):
    d = _prof(tmp_path)
    sink, log = MemSink(), IssueLog()
    meta = read_export(d, sink, log)
    rows = [tuple(r[c] for c in COLS) for r in sink.rows("comm_tasks")]
    # device 0 and model 2 from the file name hccl_0_2_1.json
    assert rows == [
        (0, 4, "Notify_Wait", None, 1, 1_000_000_000_000_300, 1_000_000_000_003_550, 12, 2, "160",
         0, 4294967295, "LOCAL", "INVALID_TYPE", "INVALID_TYPE", 0, 0.0, 2),
        (0, 6, "Reduce_Inline", None, 0, 1_000_000_000_000_520, 1_000_000_000_309_220, 13, 7, "12884902040",
         0, 3, "SDMA", "HCCS", "FP32", 7_023_104, 22.750579850988014, 2),
    ]  # fmt: skip
    assert {r["source_file"] for r in sink.rows("comm_tasks")} == {"device_0/timeline/hccl_0_2_1.json"}
    # the op comes from msprof_*.json, the tasks from hccl_*.json: neither twice
    assert [r["source_file"] for r in sink.rows("comm_ops")] == ["device_0/timeline/msprof_0_2_1.json"]
    assert "comm_tasks: event timeline device_0/timeline/hccl_0_2_1.json" in meta.sources
    by_file = {i.source_file: i.message for i in log.issues if i.kind == "not_read"}
    assert (
        "HCCL: 2 communication tasks (comm_tasks): filled from another source"
        in by_file["device_0/timeline/msprof_0_2_1.json"]
    )
    assert (
        "HCCL: 1 communication ops (comm_ops): filled from another source"
        in by_file["device_0/timeline/hccl_0_2_1.json"]
    )
    assert log.losses() == {}


def test_msprof_json_gives_the_tasks_where_no_hccl_json_is_there(tmp_path):
    d = _prof(tmp_path)
    (d / "device_0" / "timeline" / "hccl_0_2_1.json").unlink()
    sink, log = MemSink(), IssueLog()
    read_export(d, sink, log)
    # seq 6 and 8: the msprof file's events are two further on (its process and the step first)
    assert [(r["seq"], r["task_type"], r["source_file"]) for r in sink.rows("comm_tasks")] == [
        (6, "Notify_Wait", "device_0/timeline/msprof_0_2_1.json"),
        (8, "Reduce_Inline", "device_0/timeline/msprof_0_2_1.json"),
    ]


def test_trace_view_tasks_without_a_task_type_take_the_event_name_and_no_model(tmp_path):
    ev = [
        {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "HCCL"}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 4, "args": {"name": "Plane 3"}},
        # torch_npu: model id 4294967295 is none; no task type: the name
        {"ph": "X", "name": "Memcpy", "pid": 7, "tid": 4, "ts": f"{T0}.000", "dur": "0.0015",
         "args": {"stream id": 4, "task id": 807, "model id": 4294967295, "size(Byte)": "12x"}},
    ]  # fmt: skip
    meta, sink, log = read(export(tmp_path, {"trace_view.json": json.dumps(ev)}))
    [r] = sink.rows("comm_tasks")
    # 0.0015 us = 1.5 ns -> 2 ns; plane 3 of "Plane 3"; rank 2 from profiler_info; "12x" no size
    assert (r["device_id"], r["task_type"], r["plane_id"], r["start_ns"], r["end_ns"], r["model_id"]) == (
        2,
        "Memcpy",
        3,
        1_000_000_000_000_000,
        1_000_000_000_000_002,
        None,
    )
    assert r["size_bytes"] is None
    [bad] = [i for i in log.issues if i.kind == "bad_value"]
    assert bad.count == 1 and "size(Byte)" in bad.message


def test_database_communication_task_info_rows_are_comm_tasks(tmp_path):
    db = tmp_path / "x.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE STRING_IDS (id INTEGER, value TEXT)")
    con.executemany(
        "INSERT INTO STRING_IDS VALUES (?, ?)",
        [(253, "hcom_allReduce__210_0_1"), (254, "Reduce_Inline"), (261, "Notify_Wait")],
    )
    con.execute(
        "CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER,"
        " globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER,"
        " streamId INTEGER, taskId INTEGER, modelId INTEGER)"
    )
    con.executemany(
        "INSERT INTO TASK VALUES (?, ?, 2, 0, ?, 0, 0, 0, 4, ?, 4294967295)",
        [
            (1736410576431631806, 1736410576431632406, 112, 807),
            (1736410576431633686, 1736410576431637106, 116, 808),
        ],
    )
    con.execute(
        "CREATE TABLE COMMUNICATION_TASK_INFO (name INTEGER, globalTaskId INTEGER, taskType INTEGER,"
        " planeId INTEGER, groupName INTEGER, notifyId INTEGER, rdmaType INTEGER, srcRank INTEGER,"
        " dstRank INTEGER, transportType INTEGER, size INTEGER, dataType INTEGER, linkType INTEGER, opId INTEGER)"
    )
    con.executemany(
        "INSERT INTO COMMUNICATION_TASK_INFO VALUES (253, ?, ?, ?, 255, ?, 65535, 0, ?, ?, ?, ?, ?, 1)",
        [(112, 254, 0, 0, 4294967295, 0, 4, 2, 1), (116, 261, 1, 4294967380, 1, 2, 0, 65535, 65535)],
    )
    con.execute("CREATE TABLE ENUM_HCCL_TRANSPORT_TYPE (id INTEGER, name TEXT)")
    con.executemany("INSERT INTO ENUM_HCCL_TRANSPORT_TYPE VALUES (?, ?)", [(0, "SDMA"), (2, "LOCAL")])
    con.commit()
    con.close()
    meta, sink, _log = read(export(tmp_path, {"ascend_pytorch_profiler_2.db": db.read_bytes()}))
    got = [tuple(r[c] for c in COLS) for r in sink.rows("comm_tasks")]
    # seq: the TASK rowid; no ENUM_HCCL_LINK_TYPE / DATA_TYPE table: msprof's numbering (1 HCCS,
    # 2 INT32), an unknown id as its number; no bandwidth in a database
    assert got == [
        (2, 1, "Reduce_Inline", "hcom_allReduce__210_0_1", 0, 1736410576431631806, 1736410576431632406, 4, 807,
         "0", 0, 4294967295, "SDMA", "HCCS", "INT32", 4, None, None),
        (2, 2, "Notify_Wait", "hcom_allReduce__210_0_1", 1, 1736410576431633686, 1736410576431637106, 4, 808,
         "4294967380", 0, 1, "LOCAL", "65535", "65535", 0, None, None),
    ]  # fmt: skip
    assert any(s.startswith("comm_tasks: database") for s in meta.sources)


def test_a_truncated_hccl_json_is_reported_with_its_offset_and_the_others_are_read(tmp_path):
    d = _prof(tmp_path)
    (d / "device_0" / "timeline" / "hccl_0_2_2.json").write_text(json.dumps(_hccl_events())[:200])
    sink, log = MemSink(), IssueLog()
    read_export(d, sink, log)
    [bad] = [i for i in log.issues if i.kind == "unreadable_file"]
    assert bad.source_file == "device_0/timeline/hccl_0_2_2.json" and bad.byte_offset is not None
    assert bad.byte_length == 200
    # the whole file of iteration 1 is read all the same
    assert [r["source_file"] for r in sink.rows("comm_tasks")] == ["device_0/timeline/hccl_0_2_1.json"] * 2
