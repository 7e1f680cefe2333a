"""A warehouse of several synthetic nights with known differences, for compare, trend and timeline."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from pipeline.jobs.runner import ingest_dump
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.synth.truth import Truth
from pipeline.warehouse.store import Warehouse

DAY_US = 86_400_000_000
START_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z


@dataclass
class Night:
    run_id: str
    truth: Truth
    cfg: HiprofConfig


def build_history(root: Path, configs: list[dict]) -> tuple[Warehouse, list[Night]]:
    """One synthetic run per config, collected one day apart (unless a config sets start_us)."""
    wh = Warehouse(root / "wh")
    nights = []
    for i, kw in enumerate(configs):
        cfg = HiprofConfig(**({"start_us": START_US + i * DAY_US} | kw))
        dump = root / f"night-{i}"
        truth = generate(dump, cfg)
        with wh.writer():
            o = ingest_dump(wh, dump)
        assert o.status == "built", o.error
        nights.append(Night(o.run_id, truth, cfg))
    return wh, nights


def op_running(truth: Truth, op_name: str) -> list[int]:
    """Running time (COMPLETE - RUNNING) of every completed instance of the op, all devices."""
    return [
        x.complete_ns - x.running_ns
        for x in truth.instances
        if x.op_name == op_name and x.complete_ns is not None
    ]


def op_mean(truth: Truth, op_name: str) -> float:
    d = op_running(truth, op_name)
    return sum(d) / len(d)


def median(values: list[float]) -> float:
    return float(statistics.median(values))
