"""The intermediate models that name an execution's or a PMU record's operator
(int_task_executions, int_pmu_records_ops; read by op_summary, op_statistic, ai_core_metrics,
build_issues) take it by a hash join on (device, stream, task) when every description of the
task says the same and the first is valid from the start, and by the ASOF join (the latest
description valid at or before the execution) for every other task. Both paths in one
hand-made set of staging rows, through the intermediate layer to the marts; every expected
value is worked out by hand from the ASOF rule, not from the SQL.
"""

from __future__ import annotations

import pytest

from pipeline.jobs.transforms import run_layer, sql_files
from tests.helpers.empty_raw import empty_raw_tables

ALWAYS = -(2**63)

# (stream, task, op_name, block_dim, valid_from_ns); op_type is op_name upper-cased
OPS = [
    (1, 5, "add", 2, ALWAYS),
    (1, 5, "add", 2, 140),  # one operator: by key
    (1, 7, "conv", 4, ALWAYS),
    (1, 7, "relu", 4, 200),  # changes at 200: ASOF
    (1, 8, "mul", 2, ALWAYS),
    (1, 8, "mul", 8, 300),  # same name, other block dim at 300: ASOF
    (3, 9, "exp", 1, 100),  # one, but valid only from 100 (exported): ASOF
    (4, 2, "cast", None, ALWAYS),  # one operator, no block dim: by key
]
# (stream, task, running_ns, complete_ns)
INSTANCES = [
    (1, 5, 50, 60),
    (1, 5, 150, 170),
    (1, 7, 150, 155),
    (1, 7, 250, 258),
    (1, 8, 100, 103),
    (1, 8, 350, 357),
    (2, 5, 10, 11),  # no description at all
    (3, 9, 50, 52),
    (3, 9, 150, 156),
    (4, 2, 400, 401),
]
# (seq, stream, task, ts_ns): PMU records without their own block dim (generations 2 and 3)
PMU = [
    (0, 1, 5, 160),
    (1, 1, 5, None),  # a record without a time has no description in force
    (2, 1, 7, 250),
    (3, 1, 8, 120),
    (4, 1, 8, 360),
    (5, 3, 9, 60),
    (6, 3, 9, 160),
    (7, 4, 2, 410),
    (8, 2, 5, 20),
]


@pytest.fixture(scope="module")
def con():
    con = empty_raw_tables()
    run_layer(con, "staging")  # empty staging tables with their real columns
    for seq, (stream, task, name, blocks, valid_from) in enumerate(OPS):
        con.execute(
            "insert into stg_task_ops (device_id, stream_id, task_id, op_name, op_type, ge_task_type, "
            "block_dim, ts_ns, valid_from_ns, seq, source) values (0, ?, ?, ?, ?, 'AI_CORE', ?, 0, ?, ?, 'x')",
            [stream, task, name, name.upper(), blocks, valid_from, seq],
        )
    for stream, task, running, complete in INSTANCES:
        con.execute(
            "insert into stg_task_instances (device_id, record_kind, stream_id, task_id, instance_no, "
            "task_type_name, running_ns, complete_ns, is_complete, has_states, dropped_instances) "
            "values (0, 'task_run', ?, ?, 0, 'AI_CORE', ?, ?, true, false, 0)",
            [stream, task, running, complete],
        )
    for seq, stream, task, ts in PMU:
        con.execute(
            "insert into stg_pmu_records (device_id, seq, stream_id, task_id, total_cycles, ts_ns, "
            "record_kind) values (0, ?, ?, ?, 1000, ?, 'ffts_pmu')",
            [seq, stream, task, ts],
        )
    run_layer(con, "intermediate")  # made from the rows above, as a build makes it
    return con


def _mart(con, name: str, columns: str) -> list[tuple]:
    text = next(f for f in sql_files("marts") if f.name == name).text
    return con.sql(f"select {columns} from ({text})").fetchall()


def test_op_summary_names_each_execution_in_start_order(con):
    assert _mart(con, "op_summary", "stream_id, task_id, start_ns, op_name, block_dim") == [
        (2, 5, 10, None, None),
        (1, 5, 50, "add", 2),
        (3, 9, 50, None, None),  # before its only description
        (1, 8, 100, "mul", 2),
        (1, 5, 150, "add", 2),
        (1, 7, 150, "conv", 4),
        (3, 9, 150, "exp", 1),
        (1, 7, 250, "relu", 4),
        (1, 8, 350, "mul", 8),
        (4, 2, 400, "cast", None),
    ]


def test_op_statistic_counts_executions_per_op_type(con):
    # durations: add 10 + 20, conv 5, relu 8, mul 3 + 7, exp 6, cast 1; unnamed ones left out
    assert sorted(_mart(con, "op_statistic", "op_type, count, total_ns, min_ns, max_ns")) == [
        ("ADD", 2, 30, 10, 20),
        ("CAST", 1, 1, 1, 1),
        ("CONV", 1, 5, 5, 5),
        ("EXP", 1, 6, 6, 6),
        ("MUL", 2, 10, 3, 7),
        ("RELU", 1, 8, 8, 8),
    ]


def test_ai_core_metrics_names_each_record_and_takes_its_block_dim(con):
    # in record time order (ties by record index), records without a time last
    assert _mart(con, "ai_core_metrics", "stream_id, task_id, ts_ns, op_name, block_dim") == [
        (2, 5, 20, None, None),
        (3, 9, 60, None, None),  # before (3, 9)'s only description
        (1, 8, 120, "mul", 2),
        (1, 5, 160, "add", 2),
        (3, 9, 160, "exp", 1),
        (1, 7, 250, "relu", 4),
        (1, 8, 360, "mul", 8),
        (4, 2, 410, "cast", None),
        (1, 5, None, None, None),  # no time: no description in force
    ]


def test_build_issues_counts_records_without_a_block_dim(con):
    # seq 1, 5, 7, 8 above; seq 8 has no description at all (also pmu_without_op)
    rows = dict(_mart(con, "build_issues", "kind, count"))
    assert rows["pmu_without_block_dim"] == 4
    assert rows["pmu_without_op"] == 1
