"""ai_core_metrics per chip: the bandwidth rule of each chip, and PMU cycles that fit the tasks.

Expected values are worked out here from the counters synth wrote (its truth), not from the
SQL: Ascend310 (every hiprof dump) divides by aicore_time in seconds and counts 256*8 bytes
per main-memory request; the later chips (Ascend910A, Ascend310P, Ascend910B) divide by
total_cycles / f_aic (info.json's f) and count 8*8. Both metric sets run on every chip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.jobs.runner import ingest_dump
from pipeline.outputs.export import fetch
from pipeline.synth import hiprof, prof
from pipeline.warehouse.store import Warehouse

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

GB = 2**33
# bytes per request by event: (Ascend310, later chips)
BYTES = {
    0x15: (256 * 4, 256 * 4),
    0x16: (256 * 4, 256 * 4),
    0x31: (256 * 16, 256 * 16),
    0x32: (128 * 8, 128 * 8),
    0xF: (256 * 8, 256 * 8),
    0x10: (256 * 8, 256 * 8),
    0x12: (256 * 8, 8 * 8),
    0x13: (256 * 8, 8 * 8),
}
COLUMN = {
    0x15: "ub_read_bw_gbps",
    0x16: "ub_write_bw_gbps",
    0x31: "l1_read_bw_gbps",
    0x32: "l1_write_bw_gbps",
    0xF: "l2_read_bw_gbps",
    0x10: "l2_write_bw_gbps",
    0x12: "main_mem_read_bw_gbps",
    0x13: "main_mem_write_bw_gbps",
}

CASES = {
    "ascend310_pipeline": ("hiprof", {"metric_set": "aicorePipeline", "devices": 2, "seed": 21}),
    "ascend310_memory": ("hiprof", {"metric_set": "aicoreMemoryBandwidth", "devices": 2, "seed": 22}),
    "ascend910a_pipe": ("prof", {"chip": "ascend910a", "metric_set": "PipeUtilization", "seed": 23}),
    "ascend910a_memory": ("prof", {"chip": "ascend910a", "metric_set": "Memory", "seed": 24}),
    "ascend310p_pipe": ("prof", {"chip": "ascend310p", "metric_set": "PipeUtilization", "seed": 25}),
    "ascend310p_memory": ("prof", {"chip": "ascend310p", "metric_set": "Memory", "seed": 26}),
    "ascend910b_pipe": ("prof", {"chip": "ascend910b", "metric_set": "PipeUtilization", "seed": 27}),
    "ascend910b_memory": ("prof", {"chip": "ascend910b", "metric_set": "Memory", "seed": 28}),
}


@dataclass
class Task:
    """One PMU record as synth wrote it, with the task it measures."""

    device_id: int
    stream_id: int
    task_id: int
    ts_ns: int
    cycles: int
    counters: dict[int, int]
    block_dim: int
    duration_ns: int
    f_nominal: float  # info.json aic_frequency
    f_time: float  # the frequency in force (STARS samples), else f_nominal
    ai_core_num: int


@dataclass
class Built:
    chip: str
    tasks: list[Task]
    rows: list[dict]


def _hiprof_tasks(truth) -> list[Task]:
    devs = {d.device_id: d for d in truth.devices}
    end = {
        (x.device_id, x.stream_id, x.task_id, x.complete_ns): x
        for x in truth.instances
        if x.kind == "time_line"
    }
    out = []
    for p in truth.pmu:
        d = devs[p.device_id]
        x = end[
            (p.device_id, p.stream_id, p.task_id, p.ts_ns + 100)
        ]  # the record is written 100 ns before COMPLETE
        out.append(
            Task(
                p.device_id,
                p.stream_id,
                p.task_id,
                p.ts_ns,
                p.total_cycles,
                dict(zip(truth.event_ids, p.counters)),
                p.block_dim,
                x.complete_ns - x.running_ns,
                d.aic_mhz,
                d.aic_mhz,
                d.ai_core_num,
            )
        )
    return out


def _prof_tasks(truth) -> list[Task]:
    devs = {d.device_id: d for d in truth.devices}
    by_end = {(x.device_id, x.stream_id, x.task_id, x.end_ns): x for x in truth.launches}
    out = []
    for p in truth.pmu:
        d = devs[p.device_id]
        x = by_end[(p.device_id, p.stream_id, p.task_id, p.ts_ns)]
        out.append(
            Task(
                p.device_id,
                p.stream_id,
                p.task_id,
                p.ts_ns,
                p.total_cycles,
                dict(zip(truth.event_ids, p.counters)),
                x.block_dim,
                x.end_ns - x.start_ns,
                d.aic_mhz,
                p.time_freq_mhz,
                d.ai_core_num,
            )
        )
    return out


@pytest.fixture(scope="module", params=list(CASES))
def built(request, tmp_path_factory) -> Built:
    layout, kwargs = CASES[request.param]
    tmp = tmp_path_factory.mktemp(request.param)
    if layout == "hiprof":
        truth = hiprof.generate(tmp / "dump", hiprof.HiprofConfig(**kwargs))
        dump, chip, tasks = tmp / "dump", "Ascend310", _hiprof_tasks(truth)
    else:
        truth = prof.generate(tmp / "dump", prof.ProfConfig(**kwargs))
        dump, chip, tasks = tmp / "dump" / truth.root, truth.chip, _prof_tasks(truth)
    # the chip the case's name claims ("ascend910a_pipe": Ascend910A), not only synth's word for it
    claimed = request.param.split("_")[0]
    assert chip.lower() == claimed, (request.param, chip)
    wh = Warehouse(tmp / "wh")
    with wh.writer():
        o = ingest_dump(wh, Path(dump))
    assert o.status == "built", o.error
    assert wh.run_index().run_record(o.run_id)["chip"] == chip
    return Built(chip, tasks, fetch(wh, "ai_core_metrics", [o.run_id])[1].to_pylist())


def _matched(built: Built) -> list[tuple[Task, dict]]:
    rows = {(r["device_id"], r["stream_id"], r["task_id"], r["ts_ns"]): r for r in built.rows}
    assert len(rows) == len(built.rows) == len(built.tasks) > 0
    return [(t, rows[(t.device_id, t.stream_id, t.task_id, t.ts_ns)]) for t in built.tasks]


def test_bandwidths_follow_the_rule_of_the_chip(built):
    ascend310 = built.chip == "Ascend310"
    for t, row in _matched(built):
        waves = math.ceil(t.block_dim / t.ai_core_num)
        if ascend310:
            seconds = t.cycles / (t.f_nominal * 1e6) / t.block_dim * waves  # aicore_time
        else:
            seconds = t.cycles / (t.f_nominal * 1e6)  # core-seconds at info.json's frequency
        for event, column in COLUMN.items():
            if event not in t.counters:
                assert row[column] is None, column
                continue
            expected = t.counters[event] * BYTES[event][0 if ascend310 else 1] / seconds / GB
            assert row[column] == pytest.approx(expected, rel=1e-9), (column, t)


def test_main_memory_and_l2_count_the_same_bytes_only_on_ascend310(built):
    """Same counters, same seconds: main/l2 bandwidth = main/l2 requests x (256*8 or 8*8) / (256*8)."""
    pairs = [(t, r) for t, r in _matched(built) if t.counters.get(0xF)]
    if not pairs:
        assert all(0x12 not in t.counters for t in built.tasks)  # no Memory set: nothing to compare
        return
    factor = 1.0 if built.chip == "Ascend310" else 1 / 32
    for t, r in pairs:
        assert r["main_mem_read_bw_gbps"] / r["l2_read_bw_gbps"] == pytest.approx(
            factor * t.counters[0x12] / t.counters[0xF]
        )


def test_pmu_cycles_fit_the_task_duration(built):
    """Physically consistent counters: no frequency-unit slip could hide behind them.

    aicore_time (the table's, from the cycles) is at most the task's duration; the cycles of
    all blocks at f are at most the duration times the cores the blocks could occupy; every
    pipe counter is at most the task's cycles."""
    for t, row in _matched(built):
        assert row["aicore_time_us"] * 1000 <= t.duration_ns, (row, t)
        busy_cores = min(t.block_dim, t.ai_core_num)
        assert t.cycles / t.f_time * 1000 <= t.duration_ns * busy_cores, t
        assert all(0 <= v <= t.cycles for v in t.counters.values()), t
        assert t.cycles >= t.block_dim  # every block ran at least one cycle


def test_every_case_has_pmu_rows_on_the_chip_it_claims(built):
    assert built.rows
    assert built.chip in ("Ascend310", "Ascend910A", "Ascend310P", "Ascend910B")
