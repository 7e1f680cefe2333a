"""Task instance numbers counted while reading equal the numbers of msprof's sort, or are left
to the build (NULL) for a whole device whose states did not arrive in order; the same for the
executions of generations 2 and 3 (task_runs), numbered in (end, seq) order."""

from __future__ import annotations

import warnings
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.jobs.runner import ingest_dump
from pipeline.jobs.transforms import run_layer
from pipeline.readers.instance_numbers import InstanceNumbers, RunNumbers
from pipeline.synth.prof import ProfConfig, generate
from pipeline.warehouse.store import Warehouse
from tests.helpers.empty_raw import empty_raw_tables
from tests.helpers.warehouse_checks import own_part_file

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

KINDS = ("time_line", "ts_memcpy", "task_flip")


def by_sort(rows: list[dict]) -> dict[int, int]:
    """msprof's numbering, worked out independently: per (device, kind, stream, task), the
    states 1-4 sorted by (time, state, seq); a state's number is the COMPLETEs before it."""
    keyed = defaultdict(list)
    for i, r in enumerate(rows):
        if r["kind"] in ("time_line", "ts_memcpy") and r["state"] in (1, 2, 3, 4):
            keyed[(r["device"], r["kind"], r["stream"], r["task"])].append(i)
    numbers = {}
    for idx in keyed.values():
        done = 0
        for i in sorted(idx, key=lambda i: (rows[i]["ts"], rows[i]["state"], rows[i]["seq"])):
            numbers[i] = done
            done += rows[i]["state"] == 3
    return numbers


def in_order(rows: list[dict], key, order) -> bool:
    """Whether the rows of every key arrive in ``order`` (later rows never sort before earlier)."""
    last = {}
    for r in rows:
        k, o = key(r), order(r)
        if k in last and o < last[k]:
            return False
        last[k] = o
    return True


def arrived_in_order(rows: list[dict], device: int) -> bool:
    machine = [
        r for r in rows if r["device"] == device and r["kind"] != "task_flip" and r["state"] in (1, 2, 3, 4)
    ]
    return in_order(
        machine, lambda r: (r["kind"], r["stream"], r["task"]), lambda r: (r["ts"], r["state"], r["seq"])
    )


# the ids of a state or an execution: few values, at the ends of their ranges
IDS = {
    "device": st.sampled_from([0, 1]),
    "stream": st.sampled_from([0, 2047]),
    "task": st.sampled_from([0, 1, 65535]),
}


def arrays(rows: list[dict], spec: dict[str, tuple[str, type]]) -> dict:
    """Reader-style columns: column name -> array of each row's ``spec[name]`` field."""
    cols = {
        "device_id": ("device", np.int32),
        "stream_id": ("stream", np.int32),
        "task_id": ("task", np.int32),
        "seq": ("seq", np.int64),
        **spec,
    }
    return {name: np.array([r[field] for r in rows], dtype) for name, (field, dtype) in cols.items()}


def columns(rows: list[dict], kind_as_one_string: bool) -> dict:
    kinds = [r["kind"] for r in rows]
    return {
        **arrays(rows, {"task_state": ("state", np.int32), "ts_ns": ("ts", np.int64)}),
        "record_kind": kinds[0] if kind_as_one_string else np.array(kinds, dtype=object),
    }


row = st.fixed_dictionaries(
    {
        **IDS,
        "kind": st.sampled_from(KINDS),
        "state": st.sampled_from([1, 2, 3, 4, 7]),
        "ts": st.integers(0, 6),  # few values: ties in time are common
    }
)


@st.composite
def dumps(draw):
    rows = draw(st.lists(row, min_size=1, max_size=60))
    if draw(st.booleans()):  # as the Task Scheduler writes them: in time order
        rows.sort(key=lambda r: (r["ts"], r["state"]))
    restart = draw(st.integers(1, 60))  # seq counts records per stream of slices: two streams restart it
    for i, r in enumerate(rows):
        r["seq"] = i % restart
    cuts = sorted(draw(st.sets(st.integers(1, max(len(rows) - 1, 1)), max_size=6)))
    batches = [b for b in np.split(np.arange(len(rows)), cuts) if len(b)]
    return rows, batches


@settings(max_examples=300)
@given(dumps())
def test_numbers_equal_the_sort_or_leave_the_device_to_the_build(case):
    rows, batches = case
    numbering = InstanceNumbers()
    got = {}
    for b in batches:
        part = [rows[i] for i in b]
        one_kind = len({r["kind"] for r in part}) == 1  # readers pass a kind as one string
        out = numbering.add(columns(part, one_kind))["instance_no"].to_pylist()
        got.update({int(i): v for i, v in zip(b, out)})
    want = by_sort(rows)
    for i in range(len(rows)):
        if i not in want:
            assert got[i] is None, "only TIME_LINE / memcpy states 1-4 are numbered"
    for device in (0, 1):
        mine = [i for i in want if rows[i]["device"] == device]
        if arrived_in_order(rows, device):
            assert {i: got[i] for i in mine} == {i: want[i] for i in mine}
            assert device not in numbering.given_up
        else:
            assert any(got[i] is None for i in mine), "an out-of-order device must be left to the build"
            assert device in numbering.given_up


def test_hand_worked_batches():
    """One task, states in order over three batches: W R C | W P | R C C (ts 1..8)."""
    n = InstanceNumbers()

    def add(states, ts, seq0):
        cols = {
            "device_id": np.zeros(len(states), np.int32),
            "record_kind": "time_line",
            "stream_id": np.full(len(states), 5, np.int32),
            "task_id": np.full(len(states), 9, np.int32),
            "task_state": np.array(states, np.int32),
            "ts_ns": np.array(ts, np.int64),
            "seq": np.arange(seq0, seq0 + len(states), dtype=np.int64),
        }
        return n.add(cols)["instance_no"].to_pylist()

    assert add([1, 2, 3], [1, 2, 3], 0) == [0, 0, 0]
    assert add([1, 4], [4, 5], 3) == [1, 1]
    assert add([2, 3, 3], [6, 7, 8], 5) == [1, 1, 2]
    # a state older than the task's last one: the device is given up from here on
    assert add([1], [2], 8) == [None]
    assert add([3], [9], 9) == [None]
    assert n.given_up == {0}


def test_no_clock_leaves_the_device_to_the_build():
    cols = {
        "device_id": np.zeros(2, np.int32),
        "record_kind": "time_line",
        "stream_id": np.zeros(2, np.int32),
        "task_id": np.zeros(2, np.int32),
        "task_state": np.array([2, 3], np.int32),
        "ts_ns": pa.nulls(2, pa.int64()),
        "seq": np.arange(2, dtype=np.int64),
    }
    n = InstanceNumbers()
    assert n.add(cols)["instance_no"].to_pylist() == [None, None]
    assert n.given_up == {0}


def test_other_record_kinds_are_not_numbered():
    cols = {
        "device_id": np.zeros(2, np.int32),
        "record_kind": "task_flip",
        "stream_id": np.zeros(2, np.int32),
        "task_id": np.zeros(2, np.int32),
        "task_state": np.array([3, 3], np.int32),
        "ts_ns": np.array([1, 2], np.int64),
        "seq": np.arange(2, dtype=np.int64),
    }
    assert InstanceNumbers().add(cols)["instance_no"].to_pylist() == [None, None]


def runs_by_sort(runs: list[dict]) -> dict[int, int]:
    """The build's numbering of executions, worked out independently: per (device, stream,
    task), the executions sorted by (end, seq); a run's number is its place in that order."""
    keyed = defaultdict(list)
    for i, r in enumerate(runs):
        keyed[(r["device"], r["stream"], r["task"])].append(i)
    return {
        i: n
        for idx in keyed.values()
        for n, i in enumerate(sorted(idx, key=lambda i: (runs[i]["end"], runs[i]["seq"])))
    }


def runs_in_order(runs: list[dict], device: int) -> bool:
    return in_order(
        [r for r in runs if r["device"] == device],
        lambda r: (r["stream"], r["task"]),
        lambda r: (r["end"], r["seq"]),
    )


def run_columns(runs: list[dict]) -> dict:
    return arrays(runs, {"end_ns": ("end", np.int64)})


run = st.fixed_dictionaries(
    {
        **IDS,
        "end": st.integers(0, 6),  # few values: ties in time are common
    }
)


@settings(max_examples=300)
@given(st.lists(run, min_size=1, max_size=60), st.booleans(), st.data())
def test_run_numbers_equal_the_sort_or_leave_the_device_to_the_build(runs, by_end, data):
    for r, seq in zip(runs, data.draw(st.permutations(range(len(runs))))):
        r["seq"] = seq  # the end log's record index: not always the order the runs arrive in
    if by_end:  # as the readers write them: paired and written by end time
        runs.sort(key=lambda r: (r["end"], r["seq"]))
    cuts = sorted(data.draw(st.sets(st.integers(1, max(len(runs) - 1, 1)), max_size=6)))
    numbering = RunNumbers()
    got = {}
    for b in (b for b in np.split(np.arange(len(runs)), cuts) if len(b)):
        out = numbering.add(run_columns([runs[i] for i in b]))["instance_no"].to_pylist()
        got.update({int(i): v for i, v in zip(b, out)})
    want = runs_by_sort(runs)
    for device in (0, 1):
        mine = [i for i, r in enumerate(runs) if r["device"] == device]
        if runs_in_order(runs, device):
            assert {i: got[i] for i in mine} == {i: want[i] for i in mine}
            assert device not in numbering.given_up
        else:
            assert any(got[i] is None for i in mine), "an out-of-order device must be left to the build"
            assert device in numbering.given_up


def test_run_numbers_without_end_times_leave_the_device_to_the_build():
    cols = {
        "device_id": np.zeros(2, np.int32),
        "stream_id": np.zeros(2, np.int32),
        "task_id": np.zeros(2, np.int32),
        "end_ns": pa.nulls(2, pa.int64()),
        "seq": np.arange(2, dtype=np.int64),
    }
    n = RunNumbers()
    assert n.add(cols)["instance_no"].to_pylist() == [None, None]
    assert n.given_up == {0}


def test_run_numbers_leave_a_device_with_a_null_id_to_the_build():
    """Exported executions may lack a stream id (an Arrow NULL): that device is not counted."""
    cols = {
        "device_id": pa.array([0, 0, 1], pa.int32()),
        "stream_id": pa.array([2, None, 2], pa.int32()),
        "task_id": pa.array([7, 7, 7], pa.int32()),
        "end_ns": pa.array([10, 20, 30], pa.int64()),
        "seq": np.arange(3, dtype=np.int64),
    }
    n = RunNumbers()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NaN cast on the way
        assert n.add(cols)["instance_no"].to_pylist() == [None, None, 0]
    assert n.given_up == {0}


def test_stg_task_instances_keeps_the_readers_numbers_and_sorts_the_devices_left_to_it():
    """Device 0 numbered by the reader; device 1 left to the build (NULL): numbered by
    (end, seq) per (stream, task), here worked out by hand."""
    con = empty_raw_tables()
    rows = [  # device, stream, task, end, seq, instance_no as the reader wrote it
        (0, 3, 7, 100, 0, 0),
        (0, 3, 7, 200, 1, 1),
        (0, 3, 8, 150, 2, 0),
        (1, 3, 7, 300, 10, None),
        (1, 3, 7, 100, 11, None),
        (1, 3, 7, 100, 9, None),
        (1, 4, 7, 50, 12, None),
        (None, 3, 7, 80, 14, None),
        (None, 3, 7, 60, 13, None),  # no device id (an export): sorted too
    ]
    for dev, stream, task, end, seq, no in rows:
        con.execute(
            "insert into task_runs (device_id, source, stream_id, task_id, task_type, start_ns, end_ns, seq, "
            "instance_no) values (?, 'stars_soc', ?, ?, 0, ?, ?, ?, ?)",
            [dev, stream, task, end - 10, end, seq, no],
        )
    run_layer(con, "staging", only={"stg_task_instances"})
    got = con.execute(
        "select device_id, stream_id, task_id, complete_ns, instance_no from stg_task_instances order by all"
    ).fetchall()
    assert got == [
        (0, 3, 7, 100, 0),
        (0, 3, 7, 200, 1),
        (0, 3, 8, 150, 0),
        # device 1, (3, 7): ends 100 (seq 9), 100 (seq 11), 300
        (1, 3, 7, 100, 0),
        (1, 3, 7, 100, 1),
        (1, 3, 7, 300, 2),
        (1, 4, 7, 50, 0),
        (None, 3, 7, 60, 0),
        (None, 3, 7, 80, 1),
    ]


def test_a_stars_run_is_numbered_while_reading(tmp_path):
    """A generated STARS dump's executions all get their number from the reader, and it is the
    (end, seq) order that DuckDB's row_number gives over the raw table."""
    truth = generate(tmp_path / "d", ProfConfig(chip="ascend910b", tasks=30, inferences=3))
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        outcome = ingest_dump(wh, tmp_path / "d" / truth.root if truth.root else tmp_path / "d")
    assert outcome.status == "built", outcome.error
    part = own_part_file(
        wh, "raw", "task_runs", outcome.run_id, wh.run_index().run_record(outcome.run_id)["ingest_id"]
    )
    con = empty_raw_tables()
    n, numbered, differ = con.execute(f"""
        select count(*), count(instance_no), count(*) filter (where instance_no <> expected)
        from (
            select instance_no, row_number() over (
                partition by device_id, stream_id, task_id order by end_ns, seq) - 1 as expected
            from read_parquet('{part}')
        )""").fetchone()
    assert n > 90 and numbered == n and differ == 0


def test_a_device_the_reader_numbered_is_not_sorted_again():
    """The build takes task_runs.instance_no as the reader wrote it (that is what saves the
    sort): numbers that are not the sort's come out unchanged."""
    con = empty_raw_tables()
    for seq, (end, no) in enumerate([(200, 5), (100, 6)]):
        con.execute(
            "insert into task_runs (device_id, source, stream_id, task_id, task_type, start_ns, end_ns, seq, "
            "instance_no) values (0, 'stars_soc', 3, 7, 0, 0, ?, ?, ?)",
            [end, seq, no],
        )
    run_layer(con, "staging", only={"stg_task_instances"})
    assert con.execute("select complete_ns, instance_no from stg_task_instances order by all").fetchall() == [
        (100, 6),
        (200, 5),
    ]
