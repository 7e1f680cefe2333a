"""A warehouse nightly cron can trust: idempotent, replaced atomically, one writer, nothing lost."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pyarrow as pa
import pytest

from pipeline.warehouse.contracts import Column, Contract
from pipeline.errors import UnknownTable, UsageError
from pipeline.outputs.export import csv_cell, export, to_csv
from pipeline.jobs.runner import run_roots
from pipeline.outputs.query import query
from pipeline.errors import QueryFailed
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse.store import Warehouse
from tests.helpers.warehouse_checks import assert_consistent, counts, part_files, profetl

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


@pytest.fixture
def dump(tmp_path):
    d = tmp_path / "dumps" / "night1"
    generate(d, HiprofConfig(inferences=3, seed=11))
    return d


def _run(wh_path, *roots, force=False):
    wh = Warehouse(wh_path)
    with wh.writer():
        return run_roots(wh, list(roots), force=force)


def test_ingest_twice_is_a_no_op(tmp_path, dump):
    first = _run(tmp_path / "wh", dump)
    before = counts(tmp_path / "wh")
    ingest_id = Warehouse(tmp_path / "wh").runs()[0]["ingest_id"]
    second = _run(tmp_path / "wh", dump)
    assert [o.status for o in first] == ["built"] and [o.status for o in second] == ["unchanged"]
    assert counts(tmp_path / "wh") == before
    assert Warehouse(tmp_path / "wh").runs()[0]["ingest_id"] == ingest_id


def test_same_dump_elsewhere_keeps_its_run_id(tmp_path, dump):
    moved = tmp_path / "elsewhere" / "renamed"
    shutil.copytree(dump, moved)
    first = _run(tmp_path / "wh", dump)
    second = _run(tmp_path / "wh", moved)
    assert first[0].run_id == second[0].run_id and second[0].status == "unchanged"


def test_force_reingests(tmp_path, dump):
    _run(tmp_path / "wh", dump)
    before = counts(tmp_path / "wh")
    out = _run(tmp_path / "wh", dump, force=True)
    assert out[0].status == "built"
    assert counts(tmp_path / "wh") == before


def test_changed_slice_replaces_the_run(tmp_path, dump):
    _run(tmp_path / "wh", dump)
    # the same collection (same control files), more data: another generator pass over it
    shutil.rmtree(dump / "data")
    generate(dump, HiprofConfig(inferences=5, seed=11))
    _run(tmp_path / "wh", dump)
    _run(tmp_path / "fresh", dump)
    assert len(Warehouse(tmp_path / "wh").runs()) == 1
    assert counts(tmp_path / "wh") == counts(tmp_path / "fresh")  # replaced, no duplicates
    # the next writer sweeps the superseded part files
    with Warehouse(tmp_path / "wh").writer():
        pass
    assert len(part_files(tmp_path / "wh")) == len(part_files(tmp_path / "fresh"))


def test_every_byte_is_decoded_or_reported(tmp_path, dump):
    victim = sorted(p for p in (dump / "data").glob("Runtime.api.0.slice_*") if p.suffix != ".done")[-1]
    victim.write_bytes(victim.read_bytes()[:-100])  # cut inside a record
    _run(tmp_path / "wh", dump)
    r = Warehouse(tmp_path / "wh").runs()[0]
    data = sum(p.stat().st_size for p in (dump / "data").iterdir() if not p.name.endswith(".done"))
    assert r["data_bytes"] == data
    assert r["bytes_decoded"] + r["bytes_skipped"] == data
    assert r["bytes_skipped"] == 256 - 100 and r["issues"] >= 1


def test_a_second_writer_exits_with_the_locked_code_or_waits(tmp_path, dump):
    wh = tmp_path / "wh"
    assert profetl("run", dump, "--warehouse", wh).returncode == 0
    # hold the lock from another process for a while
    code = ("import sys, time; from pipeline.warehouse.store import Warehouse\n"
            "with Warehouse(sys.argv[1]).writer():\n    print('held', flush=True); time.sleep(3)\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(wh)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    locked = profetl("run", dump, "--warehouse", wh, "--force")
    assert locked.returncode == 3, locked.stderr
    assert "another writer" in locked.stderr and len(locked.stderr.strip().splitlines()) == 1
    reader = profetl("query", "select count(*) as n from runs", "--format", "csv", "--warehouse", wh)
    assert reader.returncode == 0 and reader.stdout.splitlines() == ["n", "1"]  # readers are not blocked
    waited = profetl("run", dump, "--warehouse", wh, "--force", "--wait", "30")
    p.wait()
    assert waited.returncode == 0, waited.stderr
    assert_consistent(wh)


def test_a_dead_writers_lock_is_broken_with_a_warning(tmp_path, dump):
    wh = tmp_path / "wh"
    wh.mkdir()
    (wh / ".lock").write_text("999999")  # left by a writer that died (nobody holds the flock)
    r = profetl("run", dump, "--warehouse", wh)
    assert r.returncode == 0, r.stderr
    assert "warning: the previous writer (process 999999) died" in r.stderr
    assert (wh / ".lock").read_text() == ""  # a clean exit empties it


def test_good_and_bad_dumps_under_one_root(tmp_path, dump):
    root = tmp_path / "dumps"
    generate(root / "night2", HiprofConfig(inferences=2, devices=2, seed=12))  # other control files
    bad = root / "broken"
    (bad / "data" / "Runtime.api.0.slice_0").mkdir(parents=True)  # a folder where a file should be
    missing = tmp_path / "not-there"
    r = profetl("run", root, missing, "--warehouse", tmp_path / "wh")
    assert r.returncode == 1
    assert "failed" in r.stdout and "broken" in r.stdout and "not-there" in r.stdout
    assert "3 dump(s)" in r.stdout or "4 dump(s)" in r.stdout
    assert len(Warehouse(tmp_path / "wh").runs()) == 2  # both good nights landed
    assert "Traceback" not in r.stdout + r.stderr


def test_names_cannot_escape_the_warehouse(tmp_path):
    wh = Warehouse(tmp_path / "wh")
    with pytest.raises(UsageError):
        wh.part("raw", "api_calls", "../../etc", "x")
    with pytest.raises(UsageError):
        wh.part("raw", "../x", "run", "x")
    with pytest.raises(UnknownTable):
        export(wh, "../../secret", [], "csv", str(tmp_path / "o.csv"))


def test_query_is_read_only(tmp_path, dump):
    _run(tmp_path / "wh", dump)
    for sql in (f"copy (select 1) to '{tmp_path / 'x.csv'}'", "create table t as select 1",
                f"attach '{tmp_path / 'x.db'}'", "select 1; select 2"):
        with pytest.raises(QueryFailed):
            query(Warehouse(tmp_path / "wh"), sql)
    assert not (tmp_path / "x.csv").exists()


def test_csv_neutralises_formulas_and_keeps_numbers():
    assert [csv_cell(v) for v in ("=1+2", "+x", "-x", "@SUM(A1)", "\tx", "\rx", "plain")] == \
        ["'=1+2", "'+x", "'-x", "'@SUM(A1)", "'\tx", "'\rx", "plain"]
    assert [csv_cell(v) for v in (-5, -2.5, 0, None, 1e-5)] == ["-5", "-2.5", "0", "", "1e-05"]
    c = Contract("t", "marts", "", "", "", (Column("op_name", "string", "", display="Op Name"),
                                             Column("time_ns", "int64", "", display="Time(ns)")))
    text = to_csv(c, pa.table({"op_name": ["=HYPERLINK(\"x\")", "conv"], "time_ns": [-3, 4]}))
    assert text == "Op Name,Time(ns)\n\"'=HYPERLINK(\"\"x\"\")\",-3\nconv,4\n"


def test_sweep_removes_leftovers_only(tmp_path, dump):
    _run(tmp_path / "wh", dump)
    wh = Warehouse(tmp_path / "wh")
    run = wh.runs()[0]
    stray = wh.part("raw", "api_calls", run["run_id"], "20000101T000000-deadbeef")
    stray.write_bytes(b"partial")
    (tmp_path / "wh" / ".tmp" / "x").mkdir(parents=True)
    before = counts(tmp_path / "wh")
    with wh.writer():
        assert wh.swept >= 1
    assert not stray.exists() and not (tmp_path / "wh" / ".tmp").exists()
    assert counts(tmp_path / "wh") == before


def test_a_writer_that_fails_releases_the_lock_cleanly(tmp_path):
    wh = Warehouse(tmp_path / "wh")
    with pytest.raises(RuntimeError):
        with wh.writer():
            raise RuntimeError("a failing build")
    with wh.writer():
        assert wh.stale_lock is None  # no false alarm about a dead writer
