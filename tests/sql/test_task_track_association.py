"""CANN 7+ host data: which operator a compact task_track record runs (docs/formats.md#rule-association).

Hand-made raw rows, run through the staging layer; every expected name below is worked out
from the rule, not from the SQL: a task_track belongs to the node-level API record of its
thread that started last at or before it, if that node has not ended; the node's operator is
the last node_basic_info of the thread that falls in the node by the same rule; else the
node's item (the op-name hash); a track outside any node keeps its kernel name. Of nodes of
a thread that start at one time, the one recorded last counts.
"""

from __future__ import annotations

import duckdb

from pipeline.jobs.transforms import run_layer
from tests.helpers.empty_raw import empty_raw_tables

# (tid, item, start_ns, end_ns): node-level API records
NODES = [
    (1, "hashA", 100, 200),
    (1, "hashB", 120, 140),  # starts inside A: from 120 on, thread 1's records belong to B
    (2, "hashC", 300, 400),
    (3, "hashD", 600, 700),
    (5, "hashE", 800, 900),
    (5, "hashF", 800, 850),  # starts with E: of nodes starting at one time, the one recorded last counts
]
# (tid, ts_ns, op_name): node_basic_info records
BASIC = [
    (1, 110, "OpA"),  # in A (B has not started)
    (1, 130, "OpB"),  # in B
    (1, 150, "OpLate"),  # B started last and has ended: no node's, although inside A's interval
    (3, 610, "OpD1"),
    (3, 650, "OpD2"),  # the last one in D names D
    (5, 810, "OpF"),
]
# op_name -> (op_type, task_type, block_dim) of its node_basic_info record: distinct per record,
# long and not ASCII, so that each reaches the track that takes the record's op, whole
INFO = {
    "OpA": ("Conv2D/卷积/with-a-name-longer-than-twelve-bytes", "AI_CORE", 8),
    "OpB": ("MatMulV2", "AI_VECTOR_CORE", 16),
    "OpLate": ("Late", "AI_CPU", 1),
    "OpD1": ("Relu", "AI_CORE", 2),
    "OpD2": ("TransData", "MIX_AIC", 24),
    "OpF": ("Add", "AI_CORE", 4),
}
# (tid, ts_ns, task_id, kernel name, expected op_name)
TRACKS = [
    (1, 115, 1, "k1", "OpA"),
    (1, 135, 2, "k2", "OpB"),
    (1, 160, 3, "k3", "k3"),  # B started last and has ended: outside any node
    (2, 310, 4, "k4", "hashC"),  # C has no basic info: its item
    (2, 500, 5, "k5", "k5"),  # after C
    (3, 620, 6, "k6", "OpD2"),
    (4, 50, 7, "k7", "k7"),  # a thread without nodes
    (5, 820, 8, "k8", "OpF"),
    (5, 870, 9, "k9", "k9"),  # F has ended; E, which started with F, does not count
]


def _raw_tables() -> duckdb.DuckDBPyConnection:
    con = empty_raw_tables()
    for seq, (tid, item, start, end) in enumerate(NODES):
        con.execute(
            "insert into api_calls (device_id, seq, level, tid, item, start_ns, end_ns, record_kind) "
            "values (64, ?, 'node', ?, ?, ?, ?, 'api_event')",
            [seq, tid, item, start, end],
        )
    for seq, (tid, ts, op) in enumerate(BASIC):
        con.execute(
            "insert into task_ops (device_id, seq, source, tid, ts_ns, op_name, op_type, task_type, block_dim) "
            "values (64, ?, 'node_basic_info', ?, ?, ?, ?, ?, ?)",
            [seq, tid, ts, op, *INFO[op]],
        )
    for seq, (tid, ts, task, kernel, _) in enumerate(TRACKS):
        con.execute(
            "insert into task_ops (device_id, seq, source, tid, ts_ns, stream_id, task_id, batch_id, op_name, "
            "task_type_code) values (0, ?, 'task_track', ?, ?, 2, ?, 0, ?, 0)",
            [seq, tid, ts, task, kernel],
        )
    return con


def test_task_track_takes_the_op_of_the_node_that_started_last():
    con = _raw_tables()
    run_layer(con, "staging")
    got = dict(
        con.execute("select task_id, op_name from stg_task_ops where source = 'task_track'").fetchall()
    )
    assert got == {task: want for _, _, task, _, want in TRACKS}


def test_task_track_takes_type_task_type_and_block_dim_with_the_op():
    con = _raw_tables()
    run_layer(con, "staging")
    got = {
        row[0]: row[1:]
        for row in con.execute(
            "select task_id, op_type, ge_task_type, block_dim from stg_task_ops where source = 'task_track'"
        ).fetchall()
    }
    # a track named by its node's item or its own kernel has no basic info: all NULL
    assert got == {task: INFO.get(want, (None, None, None)) for _, _, task, _, want in TRACKS}
