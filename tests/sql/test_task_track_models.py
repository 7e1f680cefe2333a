"""CANN 7+ host data: the model id and, for kernels outside any node launch, the op type of a
compact task_track record, as msprof's call-stack tree gives them.

Hand-made raw rows through the staging layer; every expected value is worked out from the
rule: a track inside a node launch takes the model id (the item) of the model-level record of
its thread that encloses the node, else 4294967295; a kernel task (runtime task type KERNEL_*,
STARS_COMMON or FFTS_PLUS) with a kernel name outside any node is its own op: type = name,
GE task type from its runtime type (KERNEL_AICPU -> AI_CPU, ...), block dim 0, model id
4294967295; any other track outside a node has no type and no model.
"""

from __future__ import annotations

from pipeline.jobs.transforms import run_layer
from tests.helpers.empty_raw import empty_raw_tables

NONE = 4294967295
# (tid, item, start_ns, end_ns): model-level API records
MODELS = [(1, "5", 100, 1000), (3, "8", 100, 1000)]
# (tid, item, start_ns, end_ns): node-level API records
NODES = [
    (1, "opA", 200, 300),  # inside model 5
    (1, "opB", 900, 1100),  # starts in model 5 but outlasts it: not inside it
    (2, "opC", 200, 300),  # a thread without model records
    (3, "opD", 400, 500),  # model 8 of thread 3
]
# (tid, ts_ns, task_id, runtime task type, kernel name) -> expected (op_name, op_type, ge_task_type, block_dim, model_id)
TRACKS = [
    ((1, 250, 1, "KERNEL_AICORE", "kA"), ("opA", None, None, None, 5)),
    ((1, 950, 2, "KERNEL_AICORE", "kB"), ("opB", None, None, None, NONE)),
    ((2, 250, 3, "KERNEL_AICORE", "kC"), ("opC", None, None, None, NONE)),
    ((3, 450, 4, "KERNEL_AICORE", "kD"), ("opD", None, None, None, 8)),
    # outside any node, although inside model 5's interval
    ((1, 500, 5, "KERNEL_AICPU", "DataPrep"), ("DataPrep", "DataPrep", "AI_CPU", 0, NONE)),
    ((1, 510, 6, "KERNEL_AIVEC", "vecK"), ("vecK", "vecK", "AI_VECTOR_CORE", 0, NONE)),
    ((1, 520, 7, "KERNEL_MIX_AIC", "mixK"), ("mixK", "mixK", "MIX_AIC", 0, NONE)),
    ((1, 530, 8, "STARS_COMMON", "dsaK"), ("dsaK", "dsaK", "STARS_COMMON", 0, NONE)),
    ((1, 540, 9, "EVENT_RECORD", None), (None, None, None, None, None)),  # not a kernel
    ((1, 550, 10, "MEMCPY_ASYNC", "copyK"), ("copyK", None, None, None, None)),  # not a kernel
    ((1, 560, 11, "KERNEL_AICORE", None), (None, None, None, None, None)),  # a kernel without a name
]


def _staged():
    con = empty_raw_tables()
    seq = 0
    for level, rows in (("model", MODELS), ("node", NODES)):
        for tid, item, start, end in rows:
            con.execute(
                "insert into api_calls (device_id, seq, level, tid, item, start_ns, end_ns, record_kind) "
                "values (64, ?, ?, ?, ?, ?, ?, 'api')",
                [seq, level, tid, item, start, end],
            )
            seq += 1
    for seq, ((tid, ts, task, ttype, kernel), _) in enumerate(TRACKS):
        con.execute(
            "insert into task_ops (device_id, seq, source, tid, ts_ns, stream_id, task_id, batch_id, op_name, "
            "task_type, task_type_code) values (0, ?, 'task_track', ?, ?, 2, ?, 0, ?, ?, 0)",
            [seq, tid, ts, task, kernel, ttype],
        )
    run_layer(con, "staging")
    return con


def test_model_ids_and_kernels_outside_nodes():
    con = _staged()
    got = {
        r[0]: tuple(r[1:])
        for r in con.execute(
            "select task_id, op_name, op_type, ge_task_type, block_dim, model_id from stg_task_ops "
            "where source = 'task_track'"
        ).fetchall()
    }
    assert got == {track[2]: want for track, want in TRACKS}
