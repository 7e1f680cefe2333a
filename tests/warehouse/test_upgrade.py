"""A warehouse written by an older profetl still rebuilds: raw tables and columns added since read as empty."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.analysis.selection import catalog
from pipeline.errors import DamagedPart, ExitCode, WarehouseNeedsUpgrade
from pipeline.jobs.runner import rebuild, run_roots
from pipeline.outputs.export import fetch
from pipeline.outputs.query import query
from pipeline.warehouse.commit_records import RECORDS
from pipeline.warehouse.contracts import contract, contracts
from pipeline.warehouse.store import Warehouse
from tests.helpers.nights import night
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
    """0.4 added the raw tables api_totals and step_times, 0.5 comm_ops, 0.6 comm_tasks and
    aicpu_tasks: a run of 0.3 has no files of them (they read as empty, its marts as before); a run
    of this version without one is damaged."""
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (o,) = run_roots(wh, [SAMPLE])
    before = _marts(wh, o.run_id)
    run = wh.run_index().run_record(o.run_id)
    assert run["profetl_version"] == "0.6.0"
    for table in ("api_totals", "step_times", "comm_ops", "comm_tasks", "aicpu_tasks"):
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


def to_old_layout(wh: Warehouse) -> dict:
    """Rewrite a warehouse as profetl 0.2 left it: <layer>/<table>/run_id=<id>/part-<id>.parquet
    without a run_id column, runs/run_id=<id>/run.parquet, no index. Returns what it wrote:
    ``{"runs": [each run's record], (layer, table): [each row, with its run_id]}``."""
    runs = wh.run_index().run_records()
    written: dict = {"runs": runs}
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
                rows = [{"run_id": r["run_id"], **row} for row in t.to_pylist()]
                written.setdefault((layer, d.name), []).extend(rows)
        out = wh.path / "runs" / f"run_id={r['run_id']}" / "run.parquet"
        out.parent.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist([r], schema=contract("raw", "runs").schema), out)
    for layer in ("raw", "marts"):
        for f in (wh.path / layer).glob("*/part-*.parquet"):
            f.unlink()
        shutil.rmtree(wh.path / layer / RECORDS, ignore_errors=True)
    wh.index_file.unlink()
    shutil.rmtree(wh.history_dir)  # profetl 0.2 kept no versions of an index
    return written


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


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (path relative to it -> its bytes), and every folder (-> None)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None for p in root.rglob("*")}


@pytest.fixture(scope="module")
def _old_source(tmp_path_factory):
    """A warehouse of two runs turned into profetl 0.2's layout (built once), what the
    conversion wrote, and the readers' answers before it."""
    base = tmp_path_factory.mktemp("old")
    wh = Warehouse(base / "wh")
    with wh.writer():
        outcomes = run_roots(wh, [night(base / "dumps", 1), night(base / "dumps", 2)])
    assert [o.status for o in outcomes] == ["built", "built"]
    expected = _everything(wh)
    written = to_old_layout(wh)
    assert len(written["runs"]) == 2
    assert (wh.path / "runs" / f"run_id={outcomes[0].run_id}" / "run.parquet").exists()
    return wh.path, written, expected, base


@pytest.fixture
def old_warehouse(tmp_path, _old_source):
    """A copy of the 0.2 warehouse of ``_old_source``: (its Warehouse, the readers' answers
    before the conversion, what the conversion wrote)."""
    src, written, expected, _ = _old_source
    shutil.copytree(src, tmp_path / "wh")
    return Warehouse(tmp_path / "wh"), expected, written


def _needs_upgrade_line(wh: Path) -> str:
    return f"profetl: error: the warehouse {wh} was written by profetl 0.2; upgrade it with: profetl check --repair -w {wh}"


def test_every_reader_of_the_old_layout_stops_with_one_line_naming_the_upgrade_and_changes_nothing(
    old_warehouse, tmp_path
):
    from tests.helpers.warehouse_checks import profetl

    wh, _, written = old_warehouse
    run_id = written["runs"][0]["run_id"]
    before = _files(wh.path)
    for args in (
        ("runs",),
        ("runs", "--json"),
        ("show",),
        ("show", run_id, "op_summary"),
        ("query", "select 1"),
        ("query", "select count(*) from runs"),
        ("query", "select count(*) from op_summary"),
        ("export", "op_summary", "--out", tmp_path / "op_summary.csv"),
        ("compare", "latest"),
        ("trend", "op:MatMul"),
        ("timeline", "latest", "--out", tmp_path / "trace.json"),
        ("report", "latest", "--out", tmp_path / "report.html"),
        ("site", "--out", tmp_path / "site"),
        ("check",),
    ):
        p = profetl(*args, "--warehouse", wh.path)
        assert p.returncode == ExitCode.USAGE == 2, (args, p.stdout, p.stderr)
        assert p.stderr.splitlines() == [_needs_upgrade_line(wh.path)], (args, p.stderr)
        assert p.stdout == "", (args, p.stdout)
        assert _files(wh.path) == before, args  # a reader writes nothing, not even a lock
    assert not (tmp_path / "op_summary.csv").exists() and not (tmp_path / "site").exists()
    # in the library: the one place readers open the index says it
    with pytest.raises(WarehouseNeedsUpgrade, match="check --repair"):
        Warehouse(wh.path).run_index()
    with pytest.raises(WarehouseNeedsUpgrade):
        query(Warehouse(wh.path), "select 1")
    assert _files(wh.path) == before


def _as_written(written: dict) -> tuple[list[dict], dict[str, list]]:
    """What the 0.2 records held (run_id, ids, source, counts) and the rows of some tables,
    as the conversion wrote them, sorted."""
    keys = (
        "run_id",
        "ingest_id",
        "build_id",
        "source_path",
        "fingerprint",
        "collection_start_us",
        "records_decoded",
    )
    runs = sorted(({k: r[k] for k in keys} for r in written["runs"]), key=lambda r: r["run_id"])
    tables = {
        t: sorted((tuple(sorted(row.items())) for row in written[(layer, t)]), key=repr)
        for layer, t in (("raw", "task_states"), ("marts", "op_summary"), ("marts", "task_scheduler"))
    }
    return runs, tables


def test_check_repair_upgrades_the_old_layout_and_readers_then_answer_with_its_runs(old_warehouse):
    from tests.helpers.warehouse_checks import profetl

    wh, expected, written = old_warehouse
    want_runs, want_tables = _as_written(written)
    repaired = profetl("check", "--repair", "--warehouse", wh.path)
    assert repaired.returncode == 0, repaired.stderr
    assert f"upgraded   {wh.path} from profetl 0.2's layout: 2 run(s)" in repaired.stdout
    assert repaired.stdout.splitlines()[-1].startswith("whole: index whole; 2 of 2 run(s) whole")
    assert wh.index_file.exists()
    assert not list(wh.path.glob("*/*/run_id=*")) and not list(wh.path.glob("runs/run_id=*"))

    listed = profetl("runs", "--json", "--warehouse", wh.path)
    assert listed.returncode == 0, listed.stderr
    runs = sorted(json.loads(listed.stdout), key=lambda r: r["run_id"])
    assert [{k: r[k] for k in want_runs[0]} for r in runs] == want_runs
    for r in runs:  # the workload the upgrade computed from the old raw files
        assert r["workload"] and r["workload"].startswith(r["layout"] + "/")
    for run in want_runs:
        shown = profetl("show", run["run_id"], "op_summary", "--limit", "0", "--json", "--warehouse", wh.path)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)
    got = {}
    for t in want_tables:
        res = query(Warehouse(wh.path), f"select * from {t}")
        got[t] = sorted((tuple(sorted(zip(res.columns, row))) for row in res.rows), key=repr)
    assert got == want_tables
    assert _everything(Warehouse(wh.path)) == expected
    # every part file names its rows' run: plain Parquet readers need no folder convention
    parts = list(wh.path.glob("marts/op_summary/*.parquet"))
    assert parts  # (none would pass the loop unchecked)
    for f in parts:
        assert pq.read_schema(f).names[0] == "run_id"


def test_a_writer_upgrades_the_old_layout_then_adds_its_run(old_warehouse, tmp_path):
    from tests.helpers.warehouse_checks import profetl

    wh, _, written = old_warehouse
    want_runs, _ = _as_written(written)
    added = profetl("run", night(tmp_path / "dumps", 3), "--warehouse", wh.path)
    assert added.returncode == 0, added.stderr
    assert wh.index_file.exists() and not list(wh.path.glob("runs/run_id=*"))
    runs = Warehouse(wh.path).run_index().run_records()
    old = {r["run_id"]: r for r in runs if r["run_id"] in {w["run_id"] for w in want_runs}}
    assert (
        sorted(({k: r[k] for k in want_runs[0]} for r in old.values()), key=lambda r: r["run_id"])
        == want_runs
    )
    assert len(runs) == 3
    new = next(r for r in runs if r["run_id"] not in old)
    assert "night3" in new["source_path"]


def test_the_library_writer_migrates_before_its_sweep(old_warehouse):
    wh, expected, _ = old_warehouse
    with Warehouse(wh.path).writer() as w:
        assert w.migrated == 2 and wh.index_file.exists()
    assert not list(wh.path.glob("*/*/run_id=*")) and not list(wh.path.glob("runs/run_id=*"))
    assert _everything(Warehouse(wh.path)) == expected
    with Warehouse(wh.path).writer() as w:  # once only
        assert w.migrated == 0


def test_what_a_migration_killed_after_its_commit_left_goes_at_the_next_writer(old_warehouse):
    """Killed between the index's commit and the removal of the old folders: the runs are the
    index's; the old folders (named by nothing) go at the next writer's sweep, nothing else."""
    wh, expected, _ = old_warehouse
    with Warehouse(wh.path).writer() as w:
        assert w.migrated == 2
    kept = sorted(p for p in wh.path.rglob("*") if p.is_file())
    left = [
        wh.path / "runs" / "run_id=20250101T000000-0badf00d",
        wh.path / "raw" / "task_states" / "run_id=x",
    ]
    for d in left:
        d.mkdir(parents=True)
        (d / "part-x.parquet").write_bytes(b"PAR1")
    with Warehouse(wh.path).writer() as w:
        assert w.migrated == 0 and w.swept >= 2
    assert not any(d.exists() for d in left)
    assert sorted(p for p in wh.path.rglob("*") if p.is_file()) == kept
    assert _everything(Warehouse(wh.path)) == expected


def test_a_migration_killed_before_its_commit_leaves_the_old_layout(old_warehouse):
    from tests.helpers.warehouse_checks import profetl

    wh, expected, _ = old_warehouse
    crashed = profetl("build", "--all", "--warehouse", wh.path, env={"PROFETL_CRASH_AT": "before_commit"})
    assert crashed.returncode == 137, crashed.stderr
    assert not wh.index_file.exists()
    again = profetl("runs", "--warehouse", wh.path)  # a reader: still the old layout, refused
    assert again.returncode == 2 and again.stderr.splitlines() == [_needs_upgrade_line(wh.path)]
    with Warehouse(wh.path).writer() as w:
        assert w.stale_lock and w.migrated == 2
    assert _everything(Warehouse(wh.path)) == expected
    named = {
        p
        for r in Warehouse(wh.path).run_index().rows_by_run_id().values()
        for p in (r["raw_part"], r["mart_part"])
    }
    assert {f.name[len("part-") : -len(".parquet")] for f in wh.path.glob("*/*/part-*.parquet")} <= named


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "other_run"])
def test_a_damaged_old_record_stops_the_upgrade_naming_the_run_until_check_repair_drops_it(
    old_warehouse, damage
):
    from tests.helpers.warehouse_checks import profetl

    wh, _, written = old_warehouse
    victim, other = (r["run_id"] for r in written["runs"])
    record = wh.path / "runs" / f"run_id={victim}" / "run.parquet"
    data = record.read_bytes()
    record.write_bytes(
        {
            "truncated": data[: len(data) // 2],
            "garbage": b"\x00garbage" * 50,
            "empty": b"",
            "other_run": (wh.path / "runs" / f"run_id={other}" / "run.parquet").read_bytes(),
        }[damage]
    )
    before = _files(wh.path)
    way_out = f"`profetl check --repair --drop {victim} -w {wh.path}`"
    for args in (
        ("run", written["runs"][1]["source_path"]),
        ("build", "--all"),
        ("drop", other),
        ("check", "--repair"),
    ):
        p = profetl(*args, "--warehouse", wh.path)
        assert p.returncode == 1, (args, p.stderr)
        (line,) = p.stderr.splitlines()
        assert line.startswith(f"profetl: error: run {victim}: its commit record {record} cannot be read"), (
            line
        )
        assert way_out in line and "Traceback" not in p.stderr
        assert {k: v for k, v in _files(wh.path).items() if k != ".lock"} == {
            k: v for k, v in before.items() if k != ".lock"
        }, args
    # a reader still says which command upgrades it
    assert profetl("runs", "--warehouse", wh.path).stderr.splitlines() == [_needs_upgrade_line(wh.path)]

    dropped = profetl("check", "--repair", "--drop", victim, "--warehouse", wh.path)
    assert dropped.returncode == 0, dropped.stderr
    assert f"dropped    {victim}" in dropped.stdout and "1 run(s)" in dropped.stdout
    assert [r["run_id"] for r in Warehouse(wh.path).run_index().run_records()] == [other]
    assert not [p for p in wh.path.rglob("*") if f"run_id={victim}" in str(p)]
    assert not list(wh.path.glob("*/*/run_id=*"))


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


def test_a_damaged_old_part_file_stops_the_upgrade_naming_it_and_leaves_nothing_new(old_warehouse):
    from tests.helpers.warehouse_checks import profetl

    wh, _, written = old_warehouse
    victim, other = (r["run_id"] for r in written["runs"])
    (f,) = wh.path.glob(f"marts/op_summary/run_id={victim}/part-*.parquet")
    f.write_bytes(f.read_bytes()[:100])
    before = _files(wh.path)
    p = profetl("check", "--repair", "--warehouse", wh.path)
    assert p.returncode == 1, p.stderr
    (line,) = p.stderr.splitlines()
    assert line.startswith(f"profetl: error: the part file {f} cannot be read"), line
    assert f"`profetl check --repair --drop {victim} -w {wh.path}`" in line
    assert {k: v for k, v in _files(wh.path).items() if k != ".lock"} == {
        k: v for k, v in before.items() if k != ".lock"
    }  # the raw groups written before it are gone again

    dropped = profetl("check", "--repair", "--drop", victim, "--warehouse", wh.path)
    assert dropped.returncode == 0, dropped.stderr
    assert [r["run_id"] for r in Warehouse(wh.path).run_index().run_records()] == [other]
