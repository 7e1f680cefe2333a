"""A build's transforms work within DuckDB's memory limit whatever the number of distinct tasks:
a run whose every execution is a (stream, task) of its own, each described by one of 1,000
operators (task ids that do not repeat, as on a real device between two wrap-arounds), made
at a memory limit far below what its rows take held at once. The mart that sorted the
executions while their operators and APIs were being joined to them (op_summary) ran out of
that limit; every value is checked against the rows as they were made.
"""

from __future__ import annotations

import re

import pyarrow.parquet as pq
import pytest

from pipeline.jobs.build import _write_mart, connect
from pipeline.jobs.transforms import run_layer, sql_files
from pipeline.warehouse.contracts import RAW_TABLES, contracts

pytestmark = pytest.mark.slow  # about 10-30 s: 200,000 executions through a spilling build

DEVICES, STREAMS, PER_STREAM = 2, 8, 12_500  # 200,000 executions, each its own (stream, task)
OPS = 1_000
LIMIT = "100MB"
PERIOD, DURATION, API_LEAD = 100, 60, 50  # ns: a device runs one execution every PERIOD ns


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """op_summary of the run made at LIMIT, one DuckDB thread (so the limit does not depend on
    the machine's cores), as a list of rows in the file's order."""
    folder = tmp_path_factory.mktemp("limit")
    con = connect(folder, LIMIT, threads=1)
    for name in RAW_TABLES:
        cols = ", ".join(f"{c.name} {c.sql_type}" for c in contracts("raw")[name].columns)
        con.execute(f"create table {name} ({cols})")
    run_layer(con, "staging")  # empty staging tables with their real columns, filled below
    # execution i of a device: stream i % STREAMS, task i // STREAMS, running at i * PERIOD,
    # operator op_<i % OPS>, launched by KernelLaunch API_LEAD ns before it starts
    rows = (
        f"select d as device_id, i, (i % {STREAMS})::bigint as stream_id, (i // {STREAMS})::bigint as task_id "
        f"from range({DEVICES}) r(d), range({STREAMS * PER_STREAM}) t(i)"
    )
    con.execute(f"""insert into stg_task_ops by name
        select device_id, stream_id, task_id, 0 as batch_id, 4294967295 as model_id, 'op_' || (i % {OPS}) as op_name,
               'Type' || (i % 7) as op_type, 'AI_CORE' as ge_task_type, 1 + i % 48 as block_dim, 0 as ts_ns,
               -9223372036854775808 as valid_from_ns, i as seq, 'ge_task_desc' as source
        from ({rows})""")
    con.execute(f"""insert into stg_task_instances by name
        select device_id, 'task_run' as record_kind, stream_id, task_id, 0 as instance_no, 0 as batch_id,
               0 as task_type, 'AI_CORE' as task_type_name, i * {PERIOD} as running_ns,
               i * {PERIOD} + {DURATION} as complete_ns, true as is_complete, false as has_states,
               0 as dropped_instances
        from ({rows})""")
    con.execute(f"""insert into stg_task_launches by name
        select device_id, stream_id, task_id, 0 as batch_id, 'KernelLaunch' as api_name,
               i * {PERIOD} - {API_LEAD} as start_ns, i * {PERIOD} - {API_LEAD} + 10 as end_ns, i as seq,
               device_id as call_device_id, 1 as call_tid
        from ({rows})""")
    run_layer(con, "intermediate")
    mart = next(f for f in sql_files("marts") if f.name == "op_summary")
    out = folder / "op_summary.parquet"
    _write_mart(con, mart, out, "run")
    con.close()
    return pq.read_table(
        out,
        columns=[
            "device_id",
            "stream_id",
            "task_id",
            "op_name",
            "block_dim",
            "start_ns",
            "dur_ns",
            "wait_ns",
        ],
    ).to_pylist()


def test_every_execution_in_start_order_with_its_operator(built):
    n = STREAMS * PER_STREAM
    assert len(built) == DEVICES * n
    for k, row in enumerate(built):
        d, i = divmod(k, n)  # rows in the mart's order: by device, then start
        assert row == {
            "device_id": d,
            "stream_id": i % STREAMS,
            "task_id": i // STREAMS,
            "op_name": f"op_{i % OPS}",
            "block_dim": 1 + i % 48,
            "start_ns": i * PERIOD,
            "dur_ns": DURATION,
            "wait_ns": 0 if i == 0 else PERIOD - DURATION,
        }, k
    assert len({r["op_name"] for r in built}) == OPS


# Aggregates that keep every value of their group in memory (DuckDB does not spill their
# states): median and the other quantiles, mode, and any aggregate with an ORDER BY of its own.
# Over the rows of a run (tasks, PMU records) one of them alone outgrows the memory limit on a
# dump of a few GB; a file may use one only over rows that stay few however big the dump.
HOLDS_ITS_GROUP = re.compile(
    r"\b(?:median|quantile\w*|mode)\s*\(|\b\w+\s*\((?:[^()]|\([^()]*\))*?\border\s+by\b",
    re.IGNORECASE,
)
SMALL_INPUTS = {
    # the names of a finding's three worst instances: the filter keeps three values per group
    ("advice", "string_agg(scope_name, ', ' order by"),
    # the index ids of unpaired step marks: one per step of a training run, at most
    ("build_issues", "list(index_id order by"),
}


def _code(text: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


def _calls(f) -> set[tuple[str, str]]:
    """(file, the call up to its ORDER BY or its opening parenthesis) of each such aggregate;
    a window's OVER (... ORDER BY ...) and a WINDOW clause's definition are not aggregates."""
    found = set()
    for m in HOLDS_ITS_GROUP.finditer(_code(f.path.read_text())):
        call = " ".join(m.group(0).split())
        if re.match(r"(?:over|as)\s*\(", call, re.IGNORECASE):
            continue
        found.add((f.name, call))
    return found


def test_no_transform_holds_a_group_of_a_runs_rows_in_memory():
    """Every transform works within the memory limit on any size of dump (docs/architecture.md
    #build): no file uses an aggregate that holds all its group's values, except over inputs
    that stay small (SMALL_INPUTS, each with why)."""
    found = set()
    for f in sql_files("staging") + sql_files("intermediate") + sql_files("marts"):
        found |= _calls(f)
    allowed = {(name, call.split(" order by")[0]) for name, call in SMALL_INPUTS}
    assert {(name, call.split(" order by")[0]) for name, call in found} - allowed == set()
