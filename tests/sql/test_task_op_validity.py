"""stg_task_ops.valid_from_ns: from when a description names its (stream, task).

Marts pick a task's operator with an ASOF join on valid_from_ns, so the first description of
each (device, stream, task), by time then record index, is valid from the start of time (a task
seen before any description takes it) and every later one from its own time. Exported runs
carry one description per execution, valid from that execution's start. Hand-made raw rows;
every expected value below is worked out from that rule, not from the SQL.
"""

from __future__ import annotations

from pipeline.jobs.transforms import run_layer
from tests.helpers.empty_raw import empty_raw_tables

ALWAYS = -(2**63)

# (device, stream, task, ts_ns, seq, expected valid_from_ns): GE task descriptions
GE = [
    (0, 1, 5, 300, 0, 300),
    (0, 1, 5, 100, 1, ALWAYS),  # earliest of (0, 1, 5), although written after the one at 300
    (0, 1, 5, 100, 2, 100),  # same time, later record
    (0, 1, 6, 50, 3, 50),  # a track of (0, 1, 6) comes first (below)
    (0, 2, 5, 200, 4, ALWAYS),  # same task id on another stream
    (1, 1, 5, 400, 5, ALWAYS),  # same stream and task on another device
]
# (device, stream, task, ts_ns, seq, expected): compact task_track records outside any node
TRACKS = [
    (0, 1, 6, 40, 0, ALWAYS),
    (0, 1, 6, 60, 1, 60),
]
# (device, stream, task, start_ns, seq): exported executions (valid from their own start)
EXPORTED = [
    (0, 3, 9, 10, 0),
    (0, 3, 9, 5, 1),
]


def test_first_description_of_a_task_is_valid_from_the_start():
    con = empty_raw_tables()
    for device, stream, task, ts, seq, _ in GE:
        con.execute(
            "insert into task_ops (device_id, seq, source, stream_id, task_id, ts_ns, op_name) "
            "values (?, ?, 'ge_task_desc', ?, ?, ?, 'op')",
            [device, seq, stream, task, ts],
        )
    for device, stream, task, ts, seq, _ in TRACKS:
        con.execute(
            "insert into task_ops (device_id, seq, source, tid, stream_id, task_id, ts_ns, op_name, "
            "task_type_code) values (?, ?, 'task_track', 7, ?, ?, ?, 'kernel', 0)",
            [device, seq, stream, task, ts],
        )
    for device, stream, task, start, seq in EXPORTED:
        con.execute(
            "insert into task_runs (device_id, seq, source, source_file, stream_id, task_id, start_ns, "
            "end_ns) values (?, ?, 'db_task', 'msprof.db', ?, ?, ?, ?)",
            [device, seq, stream, task, start, start + 1],
        )
    run_layer(con, "staging")
    got = sorted(
        con.execute(
            "select source, device_id, stream_id, task_id, ts_ns, seq, valid_from_ns from stg_task_ops"
        ).fetchall()
    )
    want = sorted(
        [("ge_task_desc", *row) for row in GE]
        + [("task_track", *row) for row in TRACKS]
        + [("export", d, s, t, start, seq, start) for d, s, t, start, seq in EXPORTED]
    )
    assert got == want
