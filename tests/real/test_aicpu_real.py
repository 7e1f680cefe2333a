"""aicpu_tasks and aicpu_ops of the real MindSpore 0.5 training dump JOB3.

Its ``DATA_PREPROCESS.dev.AICPU.1.slice_0`` holds 323 text records separated by NULs, Thread
records only (no Node record names any of them), such as::

    Thread[ 1] process device[0]:aicpu[ 0] task end, tickDrvTopHalf=38753260078,
    tickDrvBottomHalf=38753261085, tickBeforeRun=38753270138,tickAfterRun=38753416849,
    dispatchTime=100 us, totalTime=1567 us.

What the reference allows comparing (docs/formats.md#aicpu-text, #rule-aicpu):

* the producer's own dispatchTime and totalTime are (before-run - submit) and (after-run -
  submit) in ticks of 100 MHz, truncated to whole us: 10,060 ticks -> 100 us, 156,771 ticks ->
  1567 us. So the ticks count at 100 MHz, the HWTS counter's rate on Ascend910A, and
  profetl's recomputation from the ticks must truncate to the written values, record by record;
* MindInsight's AI CPU table is made of Node + Thread pairs: with no Node record it lists
  nothing for this dump, and msprof reads this file name as 128-byte binary records (it finds
  no magic here); neither names an operator for these records. The HWTS log of the dump holds
  AI Core tasks only (task type 0), so no AI CPU execution holds any record either: every
  record is kept with a NULL op_name and counted (aicpu_without_op).
"""

from __future__ import annotations

import re

import pytest

from tests.real.job3 import JOB3

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

AICPU = "DATA_PREPROCESS.dev.AICPU.1.slice_0"
THREAD = re.compile(
    rb"tickDrvTopHalf=(\d+),tickDrvBottomHalf=(\d+), tickBeforeRun=(\d+),tickAfterRun=(\d+), "
    rb"dispatchTime=(\d+) us, totalTime=(\d+) us\."
)


def test_job3_aicpu_records_and_their_written_times(real_data, job3):
    _, rows = job3
    raw = (real_data / JOB3 / AICPU).read_bytes()
    pieces = [p for p in raw.split(b"\0") if p]
    want = [tuple(int(x) for x in THREAD.search(p).groups()) for p in pieces]
    assert len(want) == 323
    got = sorted(rows("aicpu_ops"), key=lambda r: r["seq"])
    assert len(got) == 323
    for (submit, _sched, before, after, dispatch_us, total_us), r in zip(want, got, strict=True):
        # no dev_start.log: ns = 10 * ticks (100 MHz, device counter from 0)
        assert (r["start_ns"], r["end_ns"]) == (10 * before, 10 * after)
        assert r["dispatch_recomputed_ns"] == 10 * (before - submit)
        assert r["total_recomputed_ns"] == 10 * (after - submit)
        assert (r["dispatch_ns"], r["total_ns"]) == (1000 * dispatch_us, 1000 * total_us)
        # the producer's whole us are the ticks at 100 MHz, truncated
        assert r["dispatch_recomputed_ns"] // 1000 == dispatch_us
        assert r["total_recomputed_ns"] // 1000 == total_us
        assert r["record_format"] == "text" and r["source_file"] == AICPU
        assert r["op_name"] is None and r["stream_id"] is None
    first = got[0]
    assert (first["start_ns"], first["end_ns"], first["task_ns"]) == (
        387_532_701_380,
        387_534_168_490,
        1_467_110,
    )
    assert (first["dispatch_ns"], first["total_ns"]) == (100_000, 1_567_000)
    assert (first["dispatch_recomputed_ns"], first["total_recomputed_ns"]) == (100_600, 1_567_710)
    # the written totals sum to 324,140 us; the ticks to 324,293.07 us
    assert sum(r["total_ns"] for r in got) == 324_140_000
    assert sum(r["total_recomputed_ns"] for r in got) == 324_293_070


def test_job3_aicpu_ticks_are_the_step_traces_counter(job3):
    """The records' ticks and the step trace's are one counter: the first two records run before
    the first iteration, every other one inside an iteration of its own."""
    _, rows = job3
    steps = [(s["iteration_start_ns"], s["iteration_end_ns"]) for s in rows("step_trace_summary")]
    holding = [[i for i, (a, b) in enumerate(steps) if a <= r["start_ns"] <= b] for r in rows("aicpu_ops")]
    assert sum(1 for h in holding if not h) == 2
    inside = [h for h in holding if h]
    assert all(len(h) == 1 for h in inside) and len({h[0] for h in inside}) == len(inside) == 321
    first = min(a for a, _ in steps)
    assert all(r["start_ns"] < first for r, h in zip(rows("aicpu_ops"), holding, strict=True) if not h)


def test_job3_aicpu_records_join_no_op_and_are_counted(job3):
    _, rows = job3
    assert {r["task_type_name"] for r in rows("task_runs")} == {"AI_CORE"}
    issues = {(r["device_id"], r["kind"]): r["count"] for r in rows("build_issues")}
    assert issues[(1, "aicpu_without_op")] == 323
    assert not [r for r in rows("ingest_issues") if r["source_file"] == AICPU]
    assert len(rows("aicpu_tasks")) == 323
