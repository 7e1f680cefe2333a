"""A warehouse written by an older profetl still rebuilds: raw tables and columns added since read as empty."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.analysis.selection import catalog
from pipeline.errors import DamagedPart
from pipeline.jobs.runner import rebuild, run_roots
from pipeline.outputs.export import fetch
from pipeline.outputs.query import query
from pipeline.warehouse.commit_records import RECORDS
from pipeline.warehouse.contracts import contract, contracts
from pipeline.warehouse.store import Warehouse
from tests.helpers.warehouse_checks import own_part_file

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


def _marts(wh, run_id):
    return {
        t: fetch(wh, t, [run_id])[1].to_pylist() for t in ("task_scheduler", "op_summary", "ai_core_metrics")
    }


def test_run_ingested_before_task_metrics_and_new_columns_rebuilds(tmp_path):
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (o,) = run_roots(wh, [SAMPLE])
    before = _marts(wh, o.run_id)
    run = wh.run_index().run_record(o.run_id)
    # what an older profetl left: no task_metrics file, task_ops without the columns added for exports
    own_part_file(wh, "raw", "task_metrics", o.run_id, run["ingest_id"]).unlink()
    ops = own_part_file(wh, "raw", "task_ops", o.run_id, run["ingest_id"])
    old = pq.read_table(ops).drop_columns(["start_ns", "input_shapes", "accelerator_core"])
    pq.write_table(old, ops)
    old_run = dict(run, profetl_version="0.1.0")
    with wh.writer():
        out = rebuild(wh, old_run)
    assert out.status == "built"
    assert _marts(wh, o.run_id) == before


def test_a_run_of_0_3_without_the_totals_tables_rebuilds_and_one_of_0_4_without_them_is_damaged(tmp_path):
    """0.4 added the raw tables api_totals and step_times, 0.5 comm_ops: a run of 0.3 has no files
    of them (they read as empty, its marts as before); a run of this version without one is damaged."""
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (o,) = run_roots(wh, [SAMPLE])
    before = _marts(wh, o.run_id)
    run = wh.run_index().run_record(o.run_id)
    assert run["profetl_version"] == "0.5.0"
    for table in ("api_totals", "step_times", "comm_ops"):
        own_part_file(wh, "raw", table, o.run_id, run["ingest_id"]).unlink()
    with wh.writer():
        out = rebuild(wh, dict(run, profetl_version="0.3.0"))
    assert out.status == "built"
    assert _marts(wh, o.run_id) == before
    with wh.writer(), pytest.raises(DamagedPart, match=r"api_totals/part-.* is missing"):
        rebuild(wh, run)


def test_a_current_run_missing_a_raw_file_is_an_error(tmp_path):
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (o,) = run_roots(wh, [SAMPLE])
    run = wh.run_index().run_record(o.run_id)
    own_part_file(wh, "raw", "task_metrics", o.run_id, run["ingest_id"]).unlink()
    with (
        wh.writer(),
        pytest.raises(DamagedPart, match=r"task_metrics/part-.* is missing; run .* cannot be built"),
    ):
        rebuild(wh, run)


# --- the warehouse layout of profetl 0.2: a folder and a commit record per run ------------------


def _night(tmp_path, i: int) -> Path:
    """The sample dump as another night: another start_info text, so another run id."""
    d = tmp_path / "dumps" / f"night{i}"
    shutil.copytree(SAMPLE, d)
    for f in d.rglob("start_info.*"):
        if not f.name.endswith(".done"):
            f.write_text(f.read_text() + " " * (i + 1))
    return d


def to_old_layout(wh: Warehouse) -> None:
    """Rewrite a warehouse as profetl 0.2 left it: <layer>/<table>/run_id=<id>/part-<id>.parquet
    without a run_id column, runs/run_id=<id>/run.parquet, no index."""
    runs = wh.run_index().run_records()
    for r in runs:
        for layer, key in (("raw", "ingest_id"), ("marts", "build_id")):
            for d in (wh.path / layer).iterdir():
                if d.name == RECORDS:  # profetl 0.2 wrote no commit records
                    continue
                (f,) = wh.run_index().files_of_run(layer, d.name, r)
                t = pq.read_table(f)
                t = t.filter(pc.equal(t.column("run_id"), r["run_id"])).drop_columns(["run_id"])
                out = d / f"run_id={r['run_id']}" / f"part-{r[key]}.parquet"
                out.parent.mkdir(parents=True)
                pq.write_table(t, out)
        out = wh.path / "runs" / f"run_id={r['run_id']}" / "run.parquet"
        out.parent.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist([r], schema=contract("raw", "runs").schema), out)
    for layer in ("raw", "marts"):
        for f in (wh.path / layer).glob("*/part-*.parquet"):
            f.unlink()
        shutil.rmtree(wh.path / layer / RECORDS, ignore_errors=True)
    wh.index_file.unlink()
    shutil.rmtree(wh.history_dir)  # profetl 0.2 kept no versions of an index


def _everything(wh: Warehouse) -> dict:
    """Every run's commit record as `runs` lists it and every table's rows, sorted."""
    out = {"runs": [{k: v for k, v in r.items() if k != "collected_at"} for r in catalog(wh)]}
    for layer in ("raw", "marts"):
        for name in contracts(layer):
            if name == "runs":
                continue
            rows = query(wh, f"select * from {name}").rows
            out[name] = sorted(rows, key=repr)
    return out


@pytest.fixture
def old_warehouse(tmp_path):
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        outcomes = run_roots(wh, [_night(tmp_path, 1), _night(tmp_path, 2)])
    assert [o.status for o in outcomes] == ["built", "built"]
    expected = _everything(wh)
    to_old_layout(wh)
    assert (tmp_path / "wh" / "runs" / f"run_id={outcomes[0].run_id}" / "run.parquet").exists()
    return wh, expected


def test_the_old_layout_reads_as_it_is_until_a_writer_migrates_it(old_warehouse):
    wh, expected = old_warehouse
    wh = Warehouse(wh.path)
    assert wh.legacy()
    assert _everything(wh) == expected  # readers need no migration (and do not write)
    assert wh.legacy() and not wh.index_file.exists()
    with wh.writer() as w:
        pass
    assert w.migrated == 2 and not wh.legacy() and wh.index_file.exists()
    assert not list(wh.path.glob("*/*/run_id=*")) and not list(wh.path.glob("runs/run_id=*"))
    assert _everything(Warehouse(wh.path)) == expected
    # every part file names its rows' run: plain Parquet readers need no folder convention
    for f in wh.path.glob("marts/op_summary/*.parquet"):
        assert pq.read_schema(f).names[0] == "run_id"


def test_a_migration_killed_before_its_commit_leaves_the_old_layout(old_warehouse):
    from tests.helpers.warehouse_checks import profetl

    wh, expected = old_warehouse
    crashed = profetl("build", "--all", "--warehouse", wh.path, env={"PROFETL_CRASH_AT": "before_commit"})
    assert crashed.returncode == 137, crashed.stderr
    assert Warehouse(wh.path).legacy()
    assert _everything(Warehouse(wh.path)) == expected
    again = profetl("runs", "--warehouse", wh.path)  # a reader: still the old layout
    assert again.returncode == 0 and Warehouse(wh.path).legacy()
    with Warehouse(wh.path).writer() as w:
        assert w.stale_lock and w.migrated == 2
    assert _everything(Warehouse(wh.path)) == expected
    named = {
        p
        for r in Warehouse(wh.path).run_index().rows_by_run_id().values()
        for p in (r["raw_part"], r["mart_part"])
    }
    assert {f.name[len("part-") : -len(".parquet")] for f in wh.path.glob("*/*/part-*.parquet")} <= named


def test_an_export_ingested_before_task_ops_wait_ns_rebuilds_with_the_recomputed_wait(tmp_path):
    """task_ops.wait_ns (the exporter's own wait) came after 0.4's first runs: an exported run whose
    task_ops file lacks the column rebuilds, its op_summary.wait_ns the recomputation, as before."""
    from tests.sql.test_export_wait import KERNEL_RECOMPUTED, KERNELS

    dump = tmp_path / "export"
    dump.mkdir()
    (dump / "kernel_details.csv").write_text(KERNELS)
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (o,) = run_roots(wh, [dump])
    run = wh.run_index().run_record(o.run_id)
    ops = own_part_file(wh, "raw", "task_ops", o.run_id, run["ingest_id"])
    pq.write_table(pq.read_table(ops).drop_columns(["wait_ns"]), ops)
    with wh.writer():
        out = rebuild(wh, run)
    assert out.status == "built"
    rows = fetch(wh, "op_summary", [o.run_id])[1].to_pylist()
    assert [r["wait_ns"] for r in rows] == [r["wait_recomputed_ns"] for r in rows] == KERNEL_RECOMPUTED
