"""task_scheduler names each instance's API and op as int_task_executions gives them: the
latest launch / description before the instance (by a hash join on (device, stream, task)
where every description of the task says the same, else by the ASOF join). Hand-made staging
rows through the intermediate layer to the mart; every expected row is worked out by hand
from that rule."""

from __future__ import annotations

from pipeline.jobs.transforms import run_layer, sql_files
from tests.helpers.empty_raw import empty_raw_tables

ALWAYS = -(2**63)


def _mart(instances, launches, ops) -> list[tuple]:
    con = empty_raw_tables()
    run_layer(con, "staging")  # empty staging tables with their real columns
    con.executemany(
        "insert into stg_task_instances (device_id, record_kind, task_type_name, stream_id, task_id, "
        "instance_no, running_ns, complete_ns, has_states, is_complete, dropped_instances) "
        "values (0, 'task_run', 'AI_CORE', ?, ?, ?, ?, ?, false, true, 0)",
        [(s, t, n, r, c) for n, (s, t, r, c) in enumerate(instances)],
    )
    con.executemany(
        "insert into stg_task_launches (device_id, stream_id, task_id, api_name, start_ns) "
        "values (0, ?, ?, ?, ?)",
        launches,
    )
    con.executemany(
        "insert into stg_task_ops (device_id, stream_id, task_id, op_name, valid_from_ns) "
        "values (0, ?, ?, ?, ?)",
        ops,
    )
    run_layer(con, "intermediate")
    text = next(f for f in sql_files("marts") if f.name == "task_scheduler").text
    rows = con.sql(
        f"select api_name, op_name, stream_id, task_id, task_count, time_ns from ({text})"
    ).fetchall()
    return sorted(rows, key=lambda r: tuple((x is None, x) for x in r))


def test_single_named_and_changing_tasks():
    # (stream, task, running, complete)
    instances = [
        (1, 5, 50, 60),  # before task 5's first launch: no API; its only op holds from the start
        (1, 5, 150, 170),  # after the launch at 100
        (1, 6, 150, 180),  # task 6 is launched by rtA at 100, then by rtB at 200
        (1, 6, 250, 290),
        (1, 7, 150, 155),  # task 7's op changes at 200: conv, then relu
        (1, 7, 250, 258),
        (2, 5, 10, 11),  # same task id on stream 2: neither launched nor described
    ]
    launches = [
        (1, 5, "rtA", 100),
        (1, 6, "rtA", 100),
        (1, 6, "rtB", 200),
        (1, 7, "rtA", 100),
        (1, 7, "rtA", 120),
    ]
    ops = [
        (1, 5, "add", ALWAYS),
        (1, 5, "add", 140),
        (1, 6, "mul", ALWAYS),
        (1, 7, "conv", ALWAYS),
        (1, 7, "relu", 200),
    ]
    assert _mart(instances, launches, ops) == sorted(
        [
            # (api, op, stream, task, count, running time)
            ("rtA", "add", 1, 5, 1, 20),
            (None, "add", 1, 5, 1, 10),
            ("rtA", "mul", 1, 6, 1, 30),
            ("rtB", "mul", 1, 6, 1, 40),
            ("rtA", "conv", 1, 7, 1, 5),
            ("rtA", "relu", 1, 7, 1, 8),
            (None, None, 2, 5, 1, 1),
        ],
        key=lambda r: tuple((x is None, x) for x in r),
    )


def test_a_task_with_an_unnamed_launch_takes_the_asof_path():
    # task 8's launches: one names no API, so the key is not single-valued; the instance after
    # the unnamed launch gets no API, the one before it rtA
    instances = [(1, 8, 150, 160), (1, 8, 250, 270)]
    launches = [(1, 8, "rtA", 100), (1, 8, None, 200)]
    ops = [(1, 8, "add", ALWAYS)]
    assert _mart(instances, launches, ops) == sorted(
        [
            ("rtA", "add", 1, 8, 1, 10),
            (None, "add", 1, 8, 1, 20),
        ],
        key=lambda r: tuple((x is None, x) for x in r),
    )


def test_every_mart_names_an_instance_by_the_same_time():
    """An Ascend310 instance without RUNNING: its op is the one in force at PENDING (the
    instance's start, int_task_executions.start_ns) in task_scheduler, op_summary and
    op_statistic alike, not at COMPLETE in some of them. Task 9's op changes from conv to relu
    at 120, between the instance's PENDING (110) and its COMPLETE (130)."""
    con = empty_raw_tables()
    run_layer(con, "staging")
    con.execute(
        "insert into stg_task_instances (device_id, record_kind, task_type_name, stream_id, task_id, "
        "instance_no, waiting_ns, pending_ns, running_ns, complete_ns, has_states, is_complete, "
        "dropped_instances) values (0, 'time_line', 'kernel AI core task', 1, 9, 0, 100, 110, null, 130, "
        "true, true, 0)"
    )
    con.executemany(
        "insert into stg_task_ops (device_id, stream_id, task_id, op_name, op_type, valid_from_ns) "
        "values (0, 1, 9, ?, ?, ?)",
        [("conv", "Conv2D", ALWAYS), ("relu", "Relu", 120)],
    )
    run_layer(con, "intermediate")

    def mart(name: str, columns: str) -> list[tuple]:
        text = next(f for f in sql_files("marts") if f.name == name).text
        return con.sql(f"select {columns} from ({text})").fetchall()

    assert mart("task_scheduler", "op_name") == [("conv",)]
    # op_summary times the execution from RUNNING, else COMPLETE: it starts at 130, lasts 0
    assert mart("op_summary", "op_name, op_type, start_ns, dur_ns") == [("conv", "Conv2D", 130, 0)]
    assert mart("op_statistic", "op_type, count") == [("Conv2D", 1)]


def test_the_timeline_path_names_the_same_api_as_the_build_path():
    """With the variable task_calls (the timeline) every instance goes through the launches'
    ASOF join and gets its own call; without it (a build) the API name comes by key where it
    can. Both give every instance the same API name; the call is the launch hand-picked here."""
    instances = [(1, 5, 50, 60), (1, 5, 150, 170), (1, 6, 150, 180), (1, 6, 250, 290), (1, 8, 250, 270)]
    launches = [
        (1, 5, "rtA", 100),
        (1, 6, "rtA", 100),
        (1, 6, "rtB", 200),
        (1, 8, "rtA", 100),
        (1, 8, None, 200),
    ]
    got = {}
    for calls in (False, True):
        con = empty_raw_tables()
        run_layer(con, "staging")
        con.executemany(
            "insert into stg_task_instances (device_id, record_kind, task_type_name, stream_id, "
            "task_id, instance_no, running_ns, complete_ns, has_states, is_complete, dropped_instances) "
            "values (0, 'task_run', 'AI_CORE', ?, ?, ?, ?, ?, false, true, 0)",
            [(s, t, n, r, c) for n, (s, t, r, c) in enumerate(instances)],
        )
        con.executemany(
            "insert into stg_task_launches (device_id, stream_id, task_id, api_name, start_ns, "
            "call_device_id, call_tid) values (0, ?, ?, ?, ?, 0, ?)",
            [(s, t, a, ns, ns // 100) for s, t, a, ns in launches],
        )
        con.execute(f"set variable task_calls = {str(calls).lower()}")
        run_layer(con, "intermediate")
        got[calls] = con.sql(
            "select task_id, start_ns, api_name, call_tid from int_task_executions order by task_id, start_ns"
        ).fetchall()
    # (task, start, API, thread of the call: its start / 100 here)
    assert got[True] == [
        (5, 50, None, None),
        (5, 150, "rtA", 1),
        (6, 150, "rtA", 1),
        (6, 250, "rtB", 2),
        (8, 250, None, 2),
    ]
    assert got[False] == [(t, s, a, None) for t, s, a, _ in got[True]]
