"""Communication ops of an export (comm_ops): the HCCL process's hcom_* events of a timeline and
the COMMUNICATION_OP table of a database, each op as a whole, for the recomputed step breakdown
(docs/formats.md#rule-step-breakdown). Expected rows are worked out by hand from the text here."""

from __future__ import annotations

import json
import sqlite3

from tests.readers.test_exported_totals import export, read

T0 = "1000000000000"  # us, wall clock (2001-09-09)
TRACE = [
    {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "HCCL"}},
    {"ph": "M", "name": "thread_name", "pid": 7, "tid": 0, "args": {"name": "Communication"}},
    {"ph": "M", "name": "thread_name", "pid": 7, "tid": 1, "args": {"name": "Plane 0"}},
    # an op as a whole: 1000000000000.5 us -> 1000000000000500 ns, for 3.0004 us -> 3000.4 -> 3000 ns
    {"ph": "X", "name": "hcom_allReduce__1_0_1", "pid": 7, "tid": 0, "ts": f"{T0}.500", "dur": "3.0004"},
    {"ph": "X", "name": "hcom_receive__1_1_1", "pid": 7, "tid": 0, "ts": f"{T0}.000", "dur": 0.25},
    # a task of an op (its Plane thread): not an op, a communication task (comm_tasks)
    {"ph": "X", "name": "Notify_Wait", "pid": 7, "tid": 1, "ts": f"{T0}.600", "dur": 1},
    {"ph": "M", "name": "process_name", "pid": 8, "args": {"name": "Overlap Analysis"}},
    {"ph": "X", "name": "Communication", "pid": 8, "tid": 0, "ts": f"{T0}.500", "dur": 3},
    # msprof 2023: the op named after the framework's, on the thread "Communication Kernel"
    {"ph": "M", "name": "thread_name", "pid": 7, "tid": 70000, "args": {"name": "Communication Kernel"}},
    {
        "ph": "X",
        "name": "Default/AllReduce-op534_0",
        "pid": 7,
        "tid": 70000,
        "ts": f"{T0}.010",
        "dur": "0.0015",
    },
]


def test_timeline_hcom_events_are_comm_ops(tmp_path):
    meta, sink, log = read(export(tmp_path, {"trace_view.json": json.dumps(TRACE)}))
    got = [
        (r["device_id"], r["seq"], r["op_name"], r["start_ns"], r["end_ns"]) for r in sink.rows("comm_ops")
    ]
    assert got == [
        (2, 3, "hcom_allReduce__1_0_1", 1_000_000_000_000_500, 1_000_000_000_000_500 + 3_000),
        (2, 4, "hcom_receive__1_1_1", 1_000_000_000_000_000, 1_000_000_000_000_250),
        # 0.0015 us = 1.5 ns -> 2 ns (half away from zero)
        (2, 9, "Default/AllReduce-op534_0", 1_000_000_000_000_010, 1_000_000_000_000_012),
    ]
    assert "comm_ops: event timeline ASCEND_PROFILER_OUTPUT/trace_view.json" in meta.sources
    [not_read] = [i for i in log.issues if i.kind == "not_read" and i.source_file.endswith("trace_view.json")]
    assert "Overlap Analysis" in not_read.message and "HCCL" not in not_read.message
    assert [(r["seq"], r["task_type"], r["plane_id"]) for r in sink.rows("comm_tasks")] == [
        (5, "Notify_Wait", 0)
    ]


def test_database_communication_op_rows_are_comm_ops(tmp_path):
    db = tmp_path / "x.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE STRING_IDS (id INTEGER, value TEXT)")
    con.executemany(
        "INSERT INTO STRING_IDS VALUES (?, ?)", [(253, "hcom_allReduce__210_0_1"), (7, "hcom_send_")]
    )
    con.execute(
        "CREATE TABLE COMMUNICATION_OP (opName INTEGER, startNs INTEGER, endNs INTEGER, waitNs INTEGER)"
    )
    con.executemany(
        "INSERT INTO COMMUNICATION_OP VALUES (?, ?, ?, 0)",
        [(253, 1736410576431631806, 1736410576520382799), (7, 1736410576520386579, 1736410576522566903)],
    )
    con.commit()
    con.close()
    meta, sink, _log = read(export(tmp_path, {"ascend_pytorch_profiler_2.db": db.read_bytes()}))
    got = [(r["device_id"], r["op_name"], r["start_ns"], r["end_ns"]) for r in sink.rows("comm_ops")]
    assert got == [
        (2, "hcom_allReduce__210_0_1", 1736410576431631806, 1736410576520382799),
        (2, "hcom_send_", 1736410576520386579, 1736410576522566903),
    ]
    assert any(s.startswith("comm_ops: database") for s in meta.sources)


def test_an_export_without_communication_ops_says_so(tmp_path):
    steps = [e for e in TRACE if e.get("pid") != 7]
    meta, sink, _log = read(export(tmp_path, {"trace_view.json": json.dumps(steps)}))
    assert sink.rows("comm_ops") == []
    assert any(n.startswith("comm_ops: no communication ops in this export") for n in meta.notes)
