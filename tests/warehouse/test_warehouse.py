"""A warehouse nightly cron can trust: idempotent, replaced atomically, one writer, nothing lost."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pyarrow as pa
import pytest

from pipeline.errors import QueryFailed, UnknownTable, UsageError
from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import csv_cell, export, to_csv
from pipeline.outputs.query import query
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse.contracts import Column, Contract
from pipeline.warehouse.store import Warehouse
from tests.helpers.warehouse_checks import assert_consistent, counts, own_part_file, part_files, profetl

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
    ingest_id = Warehouse(tmp_path / "wh").run_index().run_records()[0]["ingest_id"]
    second = _run(tmp_path / "wh", dump)
    assert [o.status for o in first] == ["built"] and [o.status for o in second] == ["unchanged"]
    assert counts(tmp_path / "wh") == before
    assert Warehouse(tmp_path / "wh").run_index().run_records()[0]["ingest_id"] == ingest_id


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
    assert len(Warehouse(tmp_path / "wh").run_index().run_records()) == 1
    assert counts(tmp_path / "wh") == counts(tmp_path / "fresh")  # replaced, no duplicates
    # the next writer sweeps the superseded part files
    with Warehouse(tmp_path / "wh").writer():
        pass
    assert len(part_files(tmp_path / "wh")) == len(part_files(tmp_path / "fresh"))


def test_every_byte_is_decoded_or_reported(tmp_path, dump):
    victim = sorted(p for p in (dump / "data").glob("Runtime.api.0.slice_*") if p.suffix != ".done")[-1]
    victim.write_bytes(victim.read_bytes()[:-100])  # cut inside a record
    _run(tmp_path / "wh", dump)
    r = Warehouse(tmp_path / "wh").run_index().run_records()[0]
    data = sum(p.stat().st_size for p in (dump / "data").iterdir() if not p.name.endswith(".done"))
    assert r["data_bytes"] == data
    assert r["bytes_decoded"] + r["bytes_skipped"] == data
    assert r["bytes_skipped"] == 256 - 100 and r["issues"] >= 1


def test_a_second_writer_exits_with_the_locked_code_or_waits(tmp_path, dump):
    wh = tmp_path / "wh"
    assert profetl("run", dump, "--warehouse", wh).returncode == 0
    # hold the lock from another process for a while
    code = (
        "import sys, time; from pipeline.warehouse.store import Warehouse\n"
        "with Warehouse(sys.argv[1]).writer():\n    print('held', flush=True); time.sleep(3)\n"
    )
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
    assert len(Warehouse(tmp_path / "wh").run_index().run_records()) == 2  # both good nights landed
    assert "Traceback" not in r.stdout + r.stderr


def test_names_cannot_escape_the_warehouse(tmp_path):
    wh = Warehouse(tmp_path / "wh")
    with pytest.raises(UsageError):
        own_part_file(wh, "raw", "api_calls", "../../etc", "x")
    with pytest.raises(UsageError):
        own_part_file(wh, "raw", "../x", "run", "x")
    with pytest.raises(UnknownTable):
        export(wh, "../../secret", [], "csv", str(tmp_path / "o.csv"))


def test_query_is_read_only(tmp_path, dump):
    _run(tmp_path / "wh", dump)
    for sql in (
        f"copy (select 1) to '{tmp_path / 'x.csv'}'",
        "create table t as select 1",
        f"attach '{tmp_path / 'x.db'}'",
        "select 1; select 2",
    ):
        with pytest.raises(QueryFailed):
            query(Warehouse(tmp_path / "wh"), sql)
    assert not (tmp_path / "x.csv").exists()


def test_csv_neutralises_formulas_and_keeps_numbers():
    assert [csv_cell(v) for v in ("=1+2", "+x", "-x", "@SUM(A1)", "\tx", "\rx", "plain")] == [
        "'=1+2",
        "'+x",
        "'-x",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "plain",
    ]
    assert [csv_cell(v) for v in (-5, -2.5, 0, None, 1e-5)] == ["-5", "-2.5", "0", "", "1e-05"]
    c = Contract(
        "t",
        "marts",
        "",
        "",
        "",
        (
            Column("op_name", "string", "", display="Op Name"),
            Column("time_ns", "int64", "", display="Time(ns)"),
        ),
    )
    text = to_csv(c, pa.table({"op_name": ['=HYPERLINK("x")', "conv"], "time_ns": [-3, 4]}))
    assert text == 'Op Name,Time(ns)\n"\'=HYPERLINK(""x"")",-3\nconv,4\n'


def test_sweep_removes_leftovers_only(tmp_path, dump):
    _run(tmp_path / "wh", dump)
    wh = Warehouse(tmp_path / "wh")
    run = wh.run_index().run_records()[0]
    stray = own_part_file(wh, "raw", "api_calls", run["run_id"], "20000101T000000-deadbeef")
    stray.write_bytes(b"partial")
    (tmp_path / "wh" / ".tmp" / "x").mkdir(parents=True)
    before = counts(tmp_path / "wh")
    with wh.writer() as w:
        assert w.swept >= 1
    assert not stray.exists() and not (tmp_path / "wh" / ".tmp").exists()
    assert counts(tmp_path / "wh") == before


def test_a_writer_that_fails_releases_the_lock_cleanly(tmp_path):
    wh = Warehouse(tmp_path / "wh")
    with pytest.raises(RuntimeError):
        with wh.writer():
            raise RuntimeError("a failing build")
    with wh.writer() as w:
        assert w.stale_lock is None  # no false alarm about a dead writer


CONTROL_FILES = (
    "host_start.log.0",
    "start_info.0",
    "end_info.0",
    "dev_start.log.0",
    "info.json.0",
    "sample.json",
)


def test_dumps_without_control_files_get_distinct_runs(tmp_path):
    dumps = []
    for seed in (1, 2):
        d = tmp_path / f"bare{seed}"
        generate(d, HiprofConfig(inferences=2, seed=seed))
        for name in CONTROL_FILES:
            (d / name).unlink(missing_ok=True)
        dumps.append(d)
    out = _run(tmp_path / "wh", *dumps)
    assert [o.status for o in out] == ["built", "built"], [o.error for o in out]
    assert len({o.run_id for o in out}) == 2
    assert len(Warehouse(tmp_path / "wh").run_index().run_records()) == 2


def test_dumps_alike_in_other_folders_are_distinct_runs(tmp_path):
    """The same control files (same collection start), other data, another folder: another dump."""
    a, b = tmp_path / "a", tmp_path / "b"
    generate(a, HiprofConfig(inferences=2, seed=11))
    generate(b, HiprofConfig(inferences=4, seed=11))
    first = _run(tmp_path / "wh", a, b)
    assert [o.status for o in first] == ["built", "built"] and first[0].run_id != first[1].run_id
    assert not any(o.ingest.replaced for o in first)
    again = _run(tmp_path / "wh", a, b)  # each finds its own run again
    assert [(o.status, o.run_id) for o in again] == [("unchanged", o.run_id) for o in first]
    assert counts(tmp_path / "wh")["task_states"] == counts_of(tmp_path, a) + counts_of(tmp_path, b)


def test_dumps_at_one_relative_path_from_other_folders_are_told_apart(tmp_path, monkeypatch):
    """`profetl run dump` from two folders, each holding its own dump of the same control files
    and other data: two runs, each recording the absolute folder it was read from."""
    from pathlib import Path

    for folder, inferences in (("a", 2), ("b", 4)):
        generate(tmp_path / folder / "dump", HiprofConfig(inferences=inferences, seed=11))
    outcomes = []
    for folder in ("a", "b"):
        monkeypatch.chdir(tmp_path / folder)
        outcomes += _run(tmp_path / "wh", Path("dump"))
    assert [o.status for o in outcomes] == ["built", "built"], [o.error for o in outcomes]
    assert not outcomes[1].ingest.replaced and outcomes[0].run_id != outcomes[1].run_id
    runs = {r["run_id"]: r for r in Warehouse(tmp_path / "wh").run_index().run_records()}
    assert [runs[o.run_id]["source_path"] for o in outcomes] == ["dump", "dump"]
    assert [runs[o.run_id]["source_abspath"] for o in outcomes] == [
        str(tmp_path.resolve() / f / "dump") for f in "ab"
    ]
    for folder, o in zip("ab", outcomes):  # each folder finds its own run again
        monkeypatch.chdir(tmp_path / folder)
        assert [(x.status, x.run_id) for x in _run(tmp_path / "wh", Path("dump"))] == [
            ("unchanged", o.run_id)
        ]


def test_an_index_from_before_source_abspath_reads_and_takes_new_runs(tmp_path, dump):
    import pyarrow.parquet as pq

    wh = tmp_path / "wh"
    (first,) = _run(wh, dump)
    f = Warehouse(wh).index_file
    pq.write_table(pq.read_table(f).drop_columns(["source_abspath"]), f)  # as profetl wrote it before
    assert [r["source_abspath"] for r in Warehouse(wh).run_index().run_records()] == [None]
    p = profetl("runs", "--warehouse", wh, "--json")
    assert p.returncode == 0 and [r["source_abspath"] for r in json.loads(p.stdout)] == [None], p.stderr
    assert [o.status for o in _run(wh, dump)] == ["unchanged"]  # its source_path, from here, is this folder
    other = tmp_path / "dumps" / "night2"
    generate(other, HiprofConfig(inferences=2, seed=12, start_us=1_767_312_000_000_000))
    (second,) = _run(wh, other)
    assert second.status == "built"
    runs = {r["run_id"]: r for r in Warehouse(wh).run_index().run_records()}
    assert runs[first.run_id]["source_abspath"] is None and runs[second.run_id]["source_abspath"] == str(
        other
    )


def counts_of(tmp_path, dump):
    wh = tmp_path / f"alone-{dump.name}"
    _run(wh, dump)
    return counts(wh)["task_states"]


def test_a_redelivery_that_loses_data_is_refused(tmp_path, dump):
    _run(tmp_path / "wh", dump)
    before = counts(tmp_path / "wh")
    for f in (dump / "data").iterdir():
        if not f.name.endswith(".done"):
            f.write_bytes(b"")  # every data file empty
    p = profetl("run", dump, "--warehouse", tmp_path / "wh")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "refused to replace run" in p.stdout and "--force" in p.stdout
    assert counts(tmp_path / "wh") == before
    forced = profetl("run", dump, "--force", "--warehouse", tmp_path / "wh")
    assert forced.returncode in (0, 5) and "replaced" in forced.stdout
    assert counts(tmp_path / "wh")["task_states"] == 0


def test_a_change_in_the_middle_of_a_large_file_is_seen_and_reported(tmp_path):
    from pipeline.jobs.dumps import content_key

    d = tmp_path / "big"
    generate(d, HiprofConfig(inferences=40, tasks=16, slice_bytes=1 << 22))
    _run(tmp_path / "wh", d)
    big = max((p for p in (d / "data").iterdir()), key=lambda p: p.stat().st_size)
    assert big.stat().st_size > 2 * 64 * 1024 + 1024  # its middle is in neither edge
    key = content_key(d)
    data = bytearray(big.read_bytes())
    mid = len(data) // 2
    data[mid] ^= 0xFF  # one byte in the middle, same size
    big.write_bytes(bytes(data))
    assert content_key(d) == key  # the head-and-tail key alone would miss it
    p = profetl("run", d, "--warehouse", tmp_path / "wh", "--json")
    assert p.returncode == 0, p.stderr
    [o] = json.loads(p.stdout)
    assert o["status"] == "built" and o["replaced"] and o["replaced"]["source_path"] == str(d)
    text = profetl("run", d, "--warehouse", tmp_path / "wh")
    assert text.stdout.startswith("unchanged")


def test_a_warehouse_path_with_a_question_mark(tmp_path, dump):
    wh = tmp_path / "odd?name" / "wh"
    p = profetl("run", dump, "--warehouse", wh)
    assert p.returncode == 0, p.stdout + p.stderr
    q = profetl("query", "select count(distinct run_id) from task_scheduler", "--warehouse", wh, "-f", "csv")
    assert q.returncode == 0 and q.stdout.splitlines()[1] == "1", q.stdout + q.stderr


def test_deleting_the_lock_file_lets_no_second_writer_in(tmp_path, dump):
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (tmp_path / "wh" / ".lock").unlink()
        p = profetl("run", dump, "--warehouse", tmp_path / "wh")
        assert p.returncode == 3, p.stdout + p.stderr
    assert profetl("run", dump, "--warehouse", tmp_path / "wh").returncode == 0


def test_a_failed_dump_leaves_no_files(tmp_path, dump, monkeypatch):
    import pipeline.jobs.runner as jobs

    def broken(*a, **k):
        raise QueryFailed("the build broke")

    monkeypatch.setattr(jobs, "_build", broken)
    [o] = _run(tmp_path / "wh", dump)
    assert o.status == "failed"
    assert part_files(tmp_path / "wh") == []
    assert not (tmp_path / "wh" / ".tmp").exists()
