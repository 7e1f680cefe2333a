"""Communication per iteration and op (comm_iteration_ops) and per link (comm_iteration_links),
from a torch_npu export written here: two ProfilerStep spans, HCCL ops as a whole and their tasks
on Plane threads (docs/formats.md#rule-comm-tasks). Every expected value is worked out by hand
below from the events, in us from T0 (bytes as written), then in ns.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers.built import build_dump
from tests.readers.test_exported_totals import export

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

T0 = 1_000_000_000_000  # us, wall clock
US = 1_000  # ns
NONE = 4294967295  # the exporter's "no rank"

STEPS = [(1, 0, 100), (2, 100, 200)]  # ProfilerStep#N: [start, end) in us from T0
A, B, C = "hcom_allReduce__1_0_1", "hcom_allReduce__1_1_1", "hcom_broadcast__1_2_1"
# ops as a whole: (name, start, end); A runs twice in step 1; B starts in step 1 and ends in step 2
OPS = [(A, 10, 40), (A, 50, 60), (B, 90, 130), (C, 150, 170)]
# tasks: (plane, task type, start, end, transport, link type, src rank, dst rank, size bytes)
TASKS = [
    (0, "Notify_Wait", 10, 15, "LOCAL", "INVALID_TYPE", 0, NONE, 0),  # t1  A
    (0, "Memcpy", 15, 20, "SDMA", "HCCS", 0, 1, 5000),  # t2  A: transit
    (1, "Reduce_Inline", 16, 24, "SDMA", "PCIE", 0, 2, 8000),  # t3  A: transit
    (1, "Memcpy", 25, 26, "SDMA", "ON_CHIP", 0, NONE, 1000),  # t4  A: a local copy, no transit
    (0, "Notify_Record", 30, 31, "SDMA", "INVALID_TYPE", 0, 1, 0),  # t5  A
    (0, "Notify_Wait", 50, 58, "LOCAL", "INVALID_TYPE", 0, 1, 0),  # t6  A again: LOCAL, link 1 -> 0
    (0, "Memcpy", 58, 60, "SDMA", "HCCS", 0, 1, 2000),  # t7  A again: transit
    (0, "Notify_Wait", 90, 110, "LOCAL", "INVALID_TYPE", 0, NONE, 0),  # t8  B
    (0, "Reduce Inline", 110, 120, "SDMA", "HCCS", 0, 1, 25000),  # t9  B (older spelling), in step 2's time
    (0, "RDMASend", 150, 155, "RDMA", "ROCE", 0, 8, 3000),  # t10 C: transit over RDMA
    (0, "Notify_Wait", 155, 165, "LOCAL", "INVALID_TYPE", 0, 8, 0),  # t11 C: link 8 -> 0
    (1, "Notify_Record", 180, 181, "SDMA", "INVALID_TYPE", 0, 1, 0),  # t12 after C ended: no op
]

# By hand. A task belongs to the op whose span holds its start; the op's tasks count in the step
# whose [start, end) holds the op's start (B's t9 at 110 counts in step 1); t12 (no op) counts by
# its own start, in step 2. communication = durations of every task but Notify_Wait, wait = the
# Notify_Wait durations, transit = Memcpy / Reduce_Inline over SDMA off the chip and RDMASend.
#   step 1, A: ops [10,40) + [50,60): 2, 30 + 10 = 40; tasks t1..t7 = 7;
#              communication t2 5 + t3 8 + t4 1 + t5 1 + t7 2 = 17; wait t1 5 + t6 8 = 13;
#              transit t2 5 + t3 8 + t7 2 = 15 us, 5000 + 8000 + 2000 = 15000 bytes: 15000 / 15000 ns = 1 GB/s
#   step 1, B: 1 op, 40; tasks t8, t9; communication 10; wait 20; transit 10 us, 25000 bytes: 2.5 GB/s
#   step 2, C: 1 op, 20; tasks t10, t11; communication 5; wait 10; transit 5 us, 3000 bytes: 0.6 GB/s
#   step 2, no op: t12; communication 1; no op time, no transit: bandwidth NULL
OPS_EXPECTED = {
    # (step, op): (op_count, op_ns, task_count, communication, wait, transit, transit_bytes, bandwidth)
    (1, A): (2, 40, 7, 17, 13, 15, 15000, 1.0),
    (1, B): (1, 40, 2, 10, 20, 10, 25000, 2.5),
    (2, C): (1, 20, 2, 5, 10, 5, 3000, 3000 / 5000),
    (2, None): (0, None, 1, 1, 0, 0, 0, None),
}
# Links: src -> dst, the none rank taken from the other side, swapped for LOCAL; data-moving tasks
# (Memcpy, Reduce_Inline, RDMASend) give the transfer, Notify_Wait the wait.
LINKS_EXPECTED = {
    # (step, op, src, dst, transport, link type): (tasks, transfers, transfer us, bytes, GB/s, wait us)
    (1, A, 0, 0, "LOCAL", "INVALID_TYPE"): (1, 0, 0, 0, None, 5),  # t1
    (1, A, 0, 1, "SDMA", "HCCS"): (2, 2, 7, 7000, 1.0, 0),  # t2, t7
    (1, A, 0, 2, "SDMA", "PCIE"): (1, 1, 8, 8000, 1.0, 0),  # t3
    (1, A, 0, 0, "SDMA", "ON_CHIP"): (1, 1, 1, 1000, 1.0, 0),  # t4: MindInsight counts it, msprof not
    (1, A, 0, 1, "SDMA", "INVALID_TYPE"): (1, 0, 0, 0, None, 0),  # t5
    (1, A, 1, 0, "LOCAL", "INVALID_TYPE"): (1, 0, 0, 0, None, 8),  # t6
    (1, B, 0, 0, "LOCAL", "INVALID_TYPE"): (1, 0, 0, 0, None, 20),  # t8
    (1, B, 0, 1, "SDMA", "HCCS"): (1, 1, 10, 25000, 2.5, 0),  # t9
    (2, C, 0, 8, "RDMA", "ROCE"): (1, 1, 5, 3000, 0.6, 0),  # t10
    (2, C, 8, 0, "LOCAL", "INVALID_TYPE"): (1, 0, 0, 0, None, 10),  # t11
    (2, None, 0, 1, "SDMA", "INVALID_TYPE"): (1, 0, 0, 0, None, 0),  # t12
}


def _trace() -> list[dict]:
    ev = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Python"}},
        {"ph": "M", "name": "process_name", "pid": 3, "args": {"name": "HCCL"}},
        {"ph": "M", "name": "thread_name", "pid": 3, "tid": 0, "args": {"name": "Group 0 Communication"}},
        {"ph": "M", "name": "thread_name", "pid": 3, "tid": 10, "args": {"name": "Plane 0"}},
        {"ph": "M", "name": "thread_name", "pid": 3, "tid": 11, "args": {"name": "Plane 1"}},
    ]
    ev += [
        {"ph": "X", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1, "ts": f"{T0 + a}.000", "dur": b - a}
        for n, a, b in STEPS
    ]
    ev += [{"ph": "X", "name": n, "pid": 3, "tid": 0, "ts": f"{T0 + a}.000", "dur": b - a} for n, a, b in OPS]
    ev += [
        {
            "ph": "X",
            "name": kind,
            "pid": 3,
            "tid": 10 + plane,
            "ts": f"{T0 + a}.000",
            "dur": b - a,
            "args": {
                "task type": kind,
                "stream id": 4,
                "task id": i,
                "src rank": src,
                "dst rank": dst,
                "transport type": transport,
                "link type": link,
                "size(Byte)": size,
                "model id": NONE,
            },
        }
        for i, (plane, kind, a, b, transport, link, src, dst, size) in enumerate(TASKS)
    ]
    return ev


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("comm")
    _run, rows = build_dump(tmp / "wh", export(tmp, {"trace_view.json": json.dumps(_trace())}))
    return rows


def _us(v):
    return None if v is None else v * US


def test_communication_per_iteration_and_op_worked_out_by_hand(rows):
    got = {
        (r["step_id"], r["op_name"]): (
            r["op_count"],
            r["op_ns"],
            r["task_count"],
            r["communication_ns"],
            r["wait_ns"],
            r["transit_ns"],
            r["transit_bytes"],
            r["transit_bandwidth_gbps"],
        )
        for r in rows("comm_iteration_ops")
    }
    want = {
        k: (n, _us(op), t, _us(c), _us(w), _us(tr), b, bw)
        for k, (n, op, t, c, w, tr, b, bw) in OPS_EXPECTED.items()
    }
    assert got == want
    # the iteration numbers are step_trace_summary's, device 2 (the export's rank)
    summary = {r["step_id"]: r["iteration_id"] for r in rows("step_trace_summary")}
    assert {(r["device_id"], r["iteration_id"]) for r in rows("comm_iteration_ops")} == {
        (2, summary[1]),
        (2, summary[2]),
    }


def test_communication_per_link_worked_out_by_hand(rows):
    got = {
        (
            r["step_id"],
            r["op_name"],
            r["link_src_rank"],
            r["link_dst_rank"],
            r["transport_type"],
            r["link_type"],
        ): (
            r["task_count"],
            r["transfer_count"],
            r["transfer_ns"],
            r["transfer_bytes"],
            r["bandwidth_gbps"],
            r["wait_ns"],
        )
        for r in rows("comm_iteration_links")
    }
    want = {k: (t, n, _us(us), b, bw, _us(w)) for k, (t, n, us, b, bw, w) in LINKS_EXPECTED.items()}
    assert got == want


def test_the_step_breakdown_counts_the_same_ops_in_the_same_steps(rows):
    """The ops' Communication of the step breakdown and the tasks here are placed by one rule
    (int_step_windows): B, which starts in step 1, is step 1's in both."""
    by_step = {r["step_id"]: r["communication_recomputed_ns"] for r in rows("step_trace_summary")}
    # merged op spans starting in the step: step 1 [10,40) + [50,60) + [90,130) = 30 + 10 + 40;
    # step 2 [150,170) = 20
    assert by_step == {1: 80 * US, 2: 20 * US}
