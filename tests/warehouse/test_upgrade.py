"""A warehouse written by an older profetl still rebuilds: raw tables and columns added since read as empty."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.errors import TransformFailed
from pipeline.outputs.export import fetch
from pipeline.jobs.runner import rebuild, run_roots
from pipeline.warehouse.store import Warehouse

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


def _marts(wh, run_id):
    return {t: fetch(wh, t, [run_id])[1].to_pylist() for t in ("task_scheduler", "op_summary", "ai_core_metrics")}


def test_run_ingested_before_task_metrics_and_new_columns_rebuilds(tmp_path):
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (o,) = run_roots(wh, [SAMPLE])
    before = _marts(wh, o.run_id)
    run = wh.run(o.run_id)
    # what an older profetl left: no task_metrics file, task_ops without the columns added for exports
    wh.part("raw", "task_metrics", o.run_id, run["ingest_id"]).unlink()
    ops = wh.part("raw", "task_ops", o.run_id, run["ingest_id"])
    old = pq.read_table(ops).drop_columns(["start_ns", "input_shapes", "accelerator_core"])
    pq.write_table(old, ops)
    old_run = dict(run, profetl_version="0.1.0")
    with wh.writer():
        out = rebuild(wh, old_run)
    assert out.status == "built"
    assert _marts(wh, o.run_id) == before


def test_a_current_run_missing_a_raw_file_is_an_error(tmp_path):
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (o,) = run_roots(wh, [SAMPLE])
    run = wh.run(o.run_id)
    wh.part("raw", "task_metrics", o.run_id, run["ingest_id"]).unlink()
    with wh.writer(), pytest.raises(TransformFailed, match="no raw part file for task_metrics"):
        rebuild(wh, run)
