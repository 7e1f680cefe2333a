"""STARS task ids of 13 bits and more: bits 13-15 travel in the stream field (docs/formats.md#stars-ids)."""

from __future__ import annotations

import pytest

from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import fetch
from pipeline.synth.prof import ProfConfig, generate
from pipeline.warehouse.store import Warehouse

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


def test_large_task_ids_pair_start_and_end(tmp_path):
    generate(
        tmp_path / "dump",
        ProfConfig(chip="ascend910b", devices=1, inferences=34, tasks=500, flip_after=0, slice_bytes=1 << 20),
    )
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        [o] = run_roots(wh, [tmp_path / "dump"])
    runs = fetch(wh, "task_runs", [o.run_id])[1].to_pylist()
    assert max(r["task_id"] for r in runs) > 0x2000  # ids past 13 bits are present
    assert all(r["start_ns"] is not None for r in runs)
    kinds = {r["kind"] for r in fetch(wh, "ingest_issues", [o.run_id])[1].to_pylist()}
    assert not kinds & {"end_without_start", "start_without_end"}
