"""Marts stream from DuckDB into Parquet in small batches and are written in full-size row groups."""

from __future__ import annotations

import pyarrow.parquet as pq

from pipeline import build as B
from pipeline.jobs import ingest_dump, rebuild
from pipeline.synth.hiprof import HiprofConfig, generate
from tests.built import build_dump


def test_mart_rows_kept_in_order_across_batches_and_row_groups(tmp_path, monkeypatch):
    generate(tmp_path / "d", HiprofConfig(inferences=6))
    run, _ = build_dump(tmp_path / "wh", tmp_path / "d")
    wh = B.Warehouse(tmp_path / "wh")
    whole = pq.read_table(wh.part("marts", "op_summary", run["run_id"], run["build_id"]))
    assert whole.num_rows > 40  # enough rows for several batches below

    monkeypatch.setattr(B, "FETCH_ROWS", 3)
    monkeypatch.setattr(B, "ROW_GROUP_ROWS", 10)
    with wh.writer():
        again = rebuild(wh, wh.run(run["run_id"]))
    f = pq.ParquetFile(wh.part("marts", "op_summary", run["run_id"], again.build.build_id))
    sizes = [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)]
    # groups of whole batches: at least ROW_GROUP_ROWS rows, less than one batch more; the rest last
    assert all(10 <= n < 10 + 3 for n in sizes[:-1]) and 0 < sizes[-1] < 10 + 3
    assert sum(sizes) == whole.num_rows == again.build.rows_by_mart["op_summary"]
    assert f.read().equals(whole)  # same rows in the same order as the one-batch build


def test_build_reports_each_issue_it_wrote(tmp_path):
    """The build's one-line issues are the build_issues rows it wrote: three COMPLETE states
    dropped by the generator are three task instances left out, on device 0."""
    truth = generate(tmp_path / "d", HiprofConfig(inferences=4, drop_complete=3, seed=1))
    dropped = sum(1 for x in truth.instances if x.complete_ns is None)
    assert dropped == 3
    wh = B.Warehouse(tmp_path / "wh")
    with wh.writer():
        outcome = ingest_dump(wh, tmp_path / "d")
    lines = [i for i in outcome.build.issues if "dropped_task_instances" in i]
    assert lines == [f"device 0: dropped_task_instances: {dropped} task instance(s) without a COMPLETE state; "
                     "left out of task_scheduler and topdown_inference"]


def test_build_database_reserves_its_memory_limit_for_the_block_allocator(tmp_path):
    con = B.connect(tmp_path, "256MB")
    limit, blocks = con.execute(
        "select current_setting('memory_limit'), current_setting('block_allocator_memory')").fetchone()
    con.close()
    assert limit == "244.1 MiB"  # 256 * 10^6 bytes in DuckDB's display
    assert blocks.split()[1] == "MiB" and abs(float(blocks.split()[0]) - 244.1) < 0.2


def test_a_limit_larger_than_the_address_space_still_builds(tmp_path):
    con = B.connect(tmp_path, "100TB")  # more than the block allocator can reserve: plain allocation
    assert con.execute("select 1").fetchone() == (1,)
    con.close()
