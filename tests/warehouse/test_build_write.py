"""Marts stream from DuckDB into Parquet in small batches and are written in full-size row groups."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pipeline.jobs import build as build_module
from pipeline.jobs.runner import ingest_dump, rebuild
from pipeline.synth.hiprof import HiprofConfig, generate
from tests.helpers.built import build_dump
from tests.helpers.warehouse_checks import own_part_file

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


def test_mart_rows_kept_in_order_across_batches_and_row_groups(tmp_path, monkeypatch):
    generate(tmp_path / "d", HiprofConfig(inferences=6))
    run, _ = build_dump(tmp_path / "wh", tmp_path / "d")
    wh = build_module.Warehouse(tmp_path / "wh")
    whole = pq.read_table(own_part_file(wh, "marts", "op_summary", run["run_id"], run["build_id"]))
    assert whole.num_rows > 40  # enough rows for several batches below

    monkeypatch.setattr(build_module, "FETCH_ROWS", 3)
    monkeypatch.setattr(build_module, "ROW_GROUP_ROWS", 10)
    with wh.writer():
        again = rebuild(wh, wh.run_index().run_record(run["run_id"]))
    f = pq.ParquetFile(own_part_file(wh, "marts", "op_summary", run["run_id"], again.build.build_id))
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
    wh = build_module.Warehouse(tmp_path / "wh")
    with wh.writer():
        outcome = ingest_dump(wh, tmp_path / "d")
    lines = [i for i in outcome.build.issues if "dropped_task_instances" in i]
    assert lines == [
        f"device 0: dropped_task_instances: {dropped} task instance(s) without a COMPLETE state; "
        "left out of task_scheduler and topdown_inference"
    ]


def test_build_database_reserves_its_memory_limit_for_the_block_allocator(tmp_path):
    con = build_module.connect(tmp_path, "256MB")
    limit, blocks = con.execute(
        "select current_setting('memory_limit'), current_setting('block_allocator_memory')"
    ).fetchone()
    con.close()
    assert limit == "244.1 MiB"  # 256 * 10^6 bytes in DuckDB's display
    assert blocks.split()[1] == "MiB" and abs(float(blocks.split()[0]) - 244.1) < 0.2


def test_a_limit_larger_than_the_address_space_still_builds(tmp_path):
    con = build_module.connect(
        tmp_path, "100TB"
    )  # more than the block allocator can reserve: plain allocation
    assert con.execute("select 1").fetchone() == (1,)
    con.close()


def test_staging_goes_to_the_database_file_above_twice_the_memory_limit(tmp_path):
    """100 MB (DuckDB: 95.3 MiB) allows ~200 MB of staging tables in memory; at 55 bytes a
    record that is 3.5M records (192.5 MB) but not 3.8M (209 MB)."""
    con = build_module.connect(tmp_path, "100MB")
    try:
        assert build_module.staging_storage(con, {"records_decoded": 3_500_000}) == "memory"
        assert build_module.staging_storage(con, {"records_decoded": 3_800_000}) == "file"
        assert build_module.staging_storage(con, {"records_decoded": None}) == "memory"  # an older run's row
    finally:
        con.close()
    assert (
        build_module._setting_bytes("1.5 GiB") == 1.5 * 2**30
        and build_module._setting_bytes("512 bytes") == 512
    )
    assert build_module._setting_bytes("lots") == float("inf")


@pytest.mark.parametrize("layout", ["hiprof", "ascend910b"])
def test_staging_in_the_database_file_gives_the_same_marts(tmp_path, monkeypatch, layout):
    """The same SQL over staging tables kept in the build's database file (compressed) instead
    of in memory: every mart equal, row for row and in order."""
    from pipeline.synth.prof import ProfConfig
    from pipeline.synth.prof import generate as generate_prof
    from pipeline.warehouse.contracts import contracts

    if layout == "hiprof":
        generate(tmp_path / "d", HiprofConfig(inferences=4))
        dump = tmp_path / "d"
    else:
        truth = generate_prof(tmp_path / "d", ProfConfig(chip=layout, inferences=3, tasks=6))
        dump = tmp_path / "d" / truth.root if truth.root else tmp_path / "d"
    run, _ = build_dump(tmp_path / "wh", dump)
    wh = build_module.Warehouse(tmp_path / "wh")
    before = {
        name: pq.read_table(own_part_file(wh, "marts", name, run["run_id"], run["build_id"]))
        for name in contracts("marts")
    }
    monkeypatch.setattr(build_module, "STAGING_IN_FILE_ABOVE", 0.0)  # any run with records goes to the file
    with wh.writer():
        again = rebuild(wh, wh.run_index().run_record(run["run_id"]))
    assert again.build.staging == "file"
    for name, table in before.items():
        assert pq.read_table(own_part_file(wh, "marts", name, run["run_id"], again.build.build_id)).equals(
            table
        ), name
    assert sum(t.num_rows > 0 for t in before.values()) >= 6


@pytest.mark.parametrize("storage, temporary", [("memory", True), ("file", False)])
def test_stored_staging_tables_are_kept_where_chosen(tmp_path, storage, temporary):
    from pipeline.jobs.raw_reads import create_raw_views
    from pipeline.jobs.transforms import run_table_layers, sql_files

    generate(tmp_path / "d", HiprofConfig(inferences=2))
    run, _ = build_dump(tmp_path / "wh", tmp_path / "d")
    wh = build_module.Warehouse(tmp_path / "wh")
    (tmp_path / "work").mkdir()
    con = build_module.connect(tmp_path / "work")
    try:
        create_raw_views(con, wh, run)
        run_table_layers(con, stored_as=build_module.staging_table_kind(storage))
        kept = dict(con.execute("select table_name, temporary from duckdb_tables()").fetchall())
    finally:
        con.close()
    stored = {f.name for f in sql_files("staging") + sql_files("intermediate") if f.stored}
    assert len(stored) >= 6 and kept == {name: temporary for name in stored}
