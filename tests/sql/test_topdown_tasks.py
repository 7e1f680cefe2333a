"""topdown_inference's Task Scheduler rows: on a device with step-trace iterations a task
instance belongs to the iteration whose end is the first at or after its COMPLETE; on a device
without them, to the inference window (here GE's phases) its start lies in. Each device takes
one rule only. Hand-made staging rows; expected values worked out by hand from that rule.
"""

from __future__ import annotations

from pipeline.jobs.transforms import run_layer, sql_files
from tests.helpers.empty_raw import empty_raw_tables

# (start_ns, complete_ns), the same on both devices
INSTANCES = [
    (20, 30),  # in window 1, iteration 1
    (60, 70),  # between the windows; iteration 1 by its end
    (45, 105),  # starts in window 1, ends in iteration 2
]


def test_each_device_assigns_its_task_instances_by_one_rule():
    con = empty_raw_tables()
    run_layer(con, "staging")  # empty staging tables with their real columns
    # device 0 has iterations [0, 100] and [101, 200]; device 1 has none
    con.executemany(
        "insert into stg_iterations (device_id, model_id, iter_id, start_ns, end_ns) values (0, 1, ?, ?, ?)",
        [(1, 0, 100), (2, 101, 200)],
    )
    # both devices: inference windows [10, 50] and [110, 150] (GE infer phases)
    for device in (0, 1):
        con.executemany(
            "insert into stg_model_phases (device_id, infer_id, model_id, phase, start_ns, end_ns, dur_ns) "
            "values (?, ?, 1, 'infer', ?, ?, ?)",
            [(device, 1, 10, 50, 40), (device, 2, 110, 150, 40)],
        )
        con.executemany(
            "insert into stg_task_instances (device_id, record_kind, stream_id, task_id, instance_no, "
            "task_type_name, running_ns, complete_ns, is_complete, has_states, dropped_instances) "
            "values (?, 'task_run', 1, ?, 0, 'AI_CORE', ?, ?, true, false, 0)",
            [(device, n, start, end) for n, (start, end) in enumerate(INSTANCES)],
        )
    text = next(f for f in sql_files("marts") if f.name == "topdown_inference").text
    rows = con.sql(
        f"select device_id, infer_id, start_ns, dur_ns from ({text}) "
        "where module_name = 'Task Scheduler' order by all"
    ).fetchall()
    assert rows == [
        (0, 1, 20, 50),  # (20, 30) and (60, 70) by their ends
        (0, 2, 45, 60),  # (45, 105)
        (1, 1, 20, 85),  # (20, 30) and (45, 105) by their starts; (60, 70) is in no window
    ]
