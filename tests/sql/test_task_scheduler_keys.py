"""task_scheduler names each instance's API and op: by a hash join on (device, stream, task)
when every launch of the task names one API (every description one op), else by the ASOF joins
(the latest launch / description before the instance). Both paths in one hand-made run; every
expected row is worked out by hand from that rule."""

from __future__ import annotations

import duckdb

from pipeline.jobs.transforms import sql_files

ALWAYS = -(2**63)


def _mart(instances, launches, ops) -> list[tuple]:
    con = duckdb.connect()
    con.execute("""create table stg_task_instances (device_id integer, task_type_name varchar, stream_id integer,
        task_id integer, waiting_ns bigint, pending_ns bigint, running_ns bigint, complete_ns bigint,
        has_states boolean, is_complete boolean)""")
    con.executemany("insert into stg_task_instances values (0, 'AI_CORE', ?, ?, null, null, ?, ?, false, true)", instances)
    con.execute("create table stg_task_launches (device_id integer, stream_id integer, task_id integer, api_name varchar, start_ns bigint)")
    con.executemany("insert into stg_task_launches values (0, ?, ?, ?, ?)", launches)
    con.execute("create table stg_task_ops (device_id integer, stream_id integer, task_id integer, op_name varchar, valid_from_ns bigint)")
    con.executemany("insert into stg_task_ops values (0, ?, ?, ?, ?)", ops)
    text = next(f for f in sql_files("marts") if f.name == "task_scheduler").text
    rows = con.sql(f"select api_name, op_name, stream_id, task_id, task_count, time_ns from ({text})").fetchall()
    return sorted(rows, key=lambda r: tuple((x is None, x) for x in r))


def test_single_named_and_changing_tasks():
    # (stream, task, running, complete)
    instances = [
        (1, 5, 50, 60),    # before task 5's first launch: no API; its only op holds from the start
        (1, 5, 150, 170),  # after the launch at 100
        (1, 6, 150, 180),  # task 6 is launched by rtA at 100, then by rtB at 200
        (1, 6, 250, 290),
        (1, 7, 150, 155),  # task 7's op changes at 200: conv, then relu
        (1, 7, 250, 258),
        (2, 5, 10, 11),    # same task id on stream 2: neither launched nor described
    ]
    launches = [(1, 5, "rtA", 100), (1, 6, "rtA", 100), (1, 6, "rtB", 200), (1, 7, "rtA", 100), (1, 7, "rtA", 120)]
    ops = [(1, 5, "add", ALWAYS), (1, 5, "add", 140), (1, 6, "mul", ALWAYS), (1, 7, "conv", ALWAYS), (1, 7, "relu", 200)]
    assert _mart(instances, launches, ops) == sorted([
        # (api, op, stream, task, count, running time)
        ("rtA", "add", 1, 5, 1, 20),
        (None, "add", 1, 5, 1, 10),
        ("rtA", "mul", 1, 6, 1, 30),
        ("rtB", "mul", 1, 6, 1, 40),
        ("rtA", "conv", 1, 7, 1, 5),
        ("rtA", "relu", 1, 7, 1, 8),
        (None, None, 2, 5, 1, 1),
    ], key=lambda r: tuple((x is None, x) for x in r))


def test_a_task_with_an_unnamed_launch_takes_the_asof_path():
    # task 8's launches: one names no API, so the key is not single-valued; the instance after
    # the unnamed launch gets no API, the one before it rtA
    instances = [(1, 8, 150, 160), (1, 8, 250, 270)]
    launches = [(1, 8, "rtA", 100), (1, 8, None, 200)]
    ops = [(1, 8, "add", ALWAYS)]
    assert _mart(instances, launches, ops) == sorted([
        ("rtA", "add", 1, 8, 1, 10),
        (None, "add", 1, 8, 1, 20),
    ], key=lambda r: tuple((x is None, x) for x in r))
