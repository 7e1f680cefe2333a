"""A writer killed at any moment leaves the previous run or the new one; the next run completes."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse.faults import POINTS
from pipeline.warehouse.store import Warehouse
from tests.helpers.nights import kept_as_built
from tests.helpers.warehouse_checks import assert_consistent, counts, part_files, profetl

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    """One dump in two versions (same collection, more data in v2), and the counts each gives."""
    base = tmp_path_factory.mktemp("crash")
    v1, v2 = base / "v1", base / "v2"
    generate(v1, HiprofConfig(inferences=3, seed=21))
    generate(v2, HiprofConfig(inferences=6, seed=21))
    expected = {}
    for name, d in (("v1", v1), ("v2", v2)):
        wh = base / f"wh-{name}"
        assert profetl("run", d, "--warehouse", wh).returncode == 0
        expected[name] = counts(wh)
    assert expected["v1"] != expected["v2"]
    return base, v1, v2, expected


def _warehouse_with_v1(tmp_path, versions):
    base, v1, v2, expected = versions
    dump = tmp_path / "dump"
    shutil.copytree(v1, dump)
    wh = tmp_path / "wh"
    assert profetl("run", dump, "--warehouse", wh).returncode == 0
    shutil.rmtree(dump)
    shutil.copytree(v2, dump)  # the dump changed since the last night
    return dump, wh, expected


@pytest.mark.parametrize("point", POINTS)
def test_killed_at_each_stage(tmp_path, versions, point):
    dump, wh, expected = _warehouse_with_v1(tmp_path, versions)
    crashed = profetl("run", dump, "--warehouse", wh, env={"PROFETL_CRASH_AT": point})
    assert crashed.returncode == 137, crashed.stderr
    assert_consistent(wh)
    after = counts(wh)
    assert after == (expected["v2"] if point == "after_commit" else expected["v1"])
    again = profetl("run", dump, "--warehouse", wh)
    assert again.returncode == 0, again.stderr
    assert "died without releasing" in again.stderr
    assert counts(wh) == expected["v2"]
    assert_consistent(wh)
    # leftovers of the dead writer are gone: one part file per table and run
    assert len(part_files(wh)) == len({p.parent for p in part_files(wh)})


def test_killed_at_random_moments(tmp_path, versions):
    dump, wh, expected = _warehouse_with_v1(tmp_path, versions)
    rng = random.Random(5)
    for _ in range(6):
        p = profetl("run", dump, "--warehouse", wh, "--force", wait=False)
        time.sleep(rng.uniform(0.05, 1.5))
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        p.wait()
        assert_consistent(wh)
        assert counts(wh) in (expected["v1"], expected["v2"])
    final = profetl("run", dump, "--warehouse", wh, "--force")
    assert final.returncode == 0, final.stderr
    assert counts(wh) == expected["v2"]
    assert len(part_files(wh)) == len({p.parent for p in part_files(wh)})


@pytest.fixture(scope="module")
def two_runs_built(tmp_path_factory):
    """Two runs of distinct collections built by `profetl run` once for the module: the dumps,
    the warehouse (copy it before changing it) and the run ids."""
    base = tmp_path_factory.mktemp("two-runs")
    a, b = base / "a", base / "b"
    generate(a, HiprofConfig(inferences=2, seed=31, start_us=1_767_225_600_000_000))
    generate(b, HiprofConfig(inferences=2, seed=32, start_us=1_767_312_000_000_000))
    wh = base / "wh"
    done = profetl("run", a, b, "--warehouse", wh)
    assert done.returncode == 0, done.stderr
    runs = sorted(Warehouse(wh).run_index().run_ids())
    assert len(runs) == 2
    with kept_as_built(base, "the module's two runs"):
        yield a, b, wh, runs


@pytest.fixture
def two_runs(two_runs_built, tmp_path):
    """A copy of the two runs' warehouse for the test; the dumps (read them, never change them)
    and the run ids."""
    a, b, wh, runs = two_runs_built
    shutil.copytree(wh, tmp_path / "wh")
    return a, b, tmp_path / "wh", runs


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "not_an_index"])
def test_an_unreadable_index_stops_every_command_and_deletes_nothing(two_runs, damage):
    """The run index names which files hold every run: when it cannot be read, readers and
    writers stop with an error naming it, and nothing is swept, compacted or dropped."""
    a, b, wh, (victim, _) = two_runs
    index = wh / "runs" / "runs.parquet"
    data = index.read_bytes()
    bad = {
        "truncated": data[: len(data) // 2],
        "garbage": b"\x00garbage" * 50,
        "empty": b"",
        "not_an_index": (wh / "raw" / "task_states").glob("*.parquet").__next__().read_bytes(),
    }[damage]
    if damage == "not_an_index":  # a Parquet file, but no run_id column: another table's part
        import pyarrow.parquet as pq

        t = pq.read_table(next((wh / "raw" / "task_states").glob("*.parquet"))).drop_columns(["run_id"])
        pq.write_table(t, index)
        bad = index.read_bytes()
    else:
        index.write_bytes(bad)
    files = {p: p.stat().st_mtime_ns for p in part_files(wh)}
    (wh / "raw" / "task_states" / "part-leftover.parquet").write_bytes(b"x")  # what a sweep would remove
    for args in (
        ("runs", "--json"),
        ("query", "select count(*) from runs"),
        ("query", "select count(*) from task_states"),
        ("run", a, "--force"),
        ("drop", victim),
    ):
        p = profetl(*args, "--warehouse", wh)
        assert p.returncode == 1, (args, p.stdout, p.stderr)
        assert "runs.parquet" in p.stdout + p.stderr and "cannot be read" in p.stdout + p.stderr, (
            args,
            p.stderr,
        )
        assert "Traceback" not in p.stderr
    assert index.read_bytes() == bad
    assert (wh / "raw" / "task_states" / "part-leftover.parquet").exists()
    assert {p: p.stat().st_mtime_ns for p in part_files(wh) if p.name != "part-leftover.parquet"} == files


class _ReplacedWhileListing(Warehouse):
    """A warehouse whose run ``victim`` is re-ingested by a writer right after a reader has
    read the run index (the first time only): the reader's snapshot is then stale."""

    def __init__(self, path, dump, victim):
        super().__init__(path)
        self.dump, self.victim, self.fired = dump, victim, False

    def _replace(self, run_ids: list[str]) -> None:
        if not self.fired and self.victim in run_ids:
            self.fired = True
            from pipeline.jobs.runner import ingest_dump

            writer = Warehouse(self.path)
            with writer.writer():
                ingest_dump(writer, self.dump, force=True)

    def run_index(self):  # a reader with the runs view: the whole index, by Arrow
        snap = super().run_index()
        if snap.stored_table is not None:
            self._replace(snap.stored_table.column("run_id").to_pylist())
        return snap

    def placing_rows(self, con, run_ids=None):  # a reader without it: the placing columns, by DuckDB
        rows = super().placing_rows(con, run_ids)
        self._replace([r["run_id"] for r in rows])
        return rows


@pytest.mark.parametrize(
    "sql",
    [
        "select count(distinct run_id), count(*) from task_states",
        "select count(distinct run_id), count(*) from task_states join runs using (run_id)",
    ],
)
def test_reader_never_answers_from_a_stale_list(two_runs, sql):
    """A writer replaces a run between a reader's listing and its read: the reader must see
    every run (here: read again on a new snapshot), not silently leave the run out."""
    from pipeline.outputs.query import query

    a, b, wh, (victim, other) = two_runs
    expected = counts(wh)
    dump = next(
        d for d in (a, b) if Warehouse(wh).run_index().run_record(victim)["source_path"].endswith(d.name)
    )
    racing = _ReplacedWhileListing(wh, dump, victim)
    res = query(racing, sql)
    assert racing.fired
    assert res.rows == [(2, expected["task_states"])]


class _ReplacedWhileReadingTheIndex(_ReplacedWhileListing):
    """A writer commits while DuckDB reads the index's placing columns (it opens the file by
    name more than once): the read fails on the mix of the two files."""

    def placing_rows(self, con, run_ids=None):
        if not self.fired:
            self._replace([self.victim])
            from pipeline.errors import DamagedIndex

            raise DamagedIndex(self.index_file, "a row group's offsets are past the end of the file")
        return super().placing_rows(con, run_ids)


def test_a_reader_reads_the_index_again_when_a_writer_replaced_it_during_the_read(two_runs):
    from pipeline.outputs.query import query

    a, b, wh, (victim, other) = two_runs
    expected = counts(wh)
    dump = next(
        d for d in (a, b) if Warehouse(wh).run_index().run_record(victim)["source_path"].endswith(d.name)
    )
    racing = _ReplacedWhileReadingTheIndex(wh, dump, victim)
    res = query(racing, "select count(distinct run_id), count(*) from task_states")
    assert racing.fired
    assert res.rows == [(2, expected["task_states"])]


def test_reader_fails_clearly_when_the_warehouse_keeps_changing(two_runs, monkeypatch):
    from pipeline.errors import QueryFailed
    from pipeline.outputs.query import query

    _, _, wh, (victim, _) = two_runs
    from pipeline.warehouse.index import RunIndex

    real = RunIndex.rows_by_run_id

    def replaced_every_time(self):  # every re-read of the index finds a new ingest
        idx = real(self)
        idx[victim] = {**idx[victim], "raw_part": "x" + idx[victim]["raw_part"]}
        return idx

    probe = Warehouse(wh)
    (part,) = probe.run_index().files_of_run("raw", "task_states", probe.run_index().run_record(victim))
    part.rename(part.with_suffix(".moved"))
    monkeypatch.setattr(RunIndex, "rows_by_run_id", replaced_every_time)
    with pytest.raises(QueryFailed, match="changed under 3 attempts"):
        query(Warehouse(wh), "select count(distinct run_id) from task_states")
    monkeypatch.undo()
    # the record unchanged and its file gone: a clear error, and a non-zero exit from the CLI
    p = profetl("query", "select count(distinct run_id) from task_states", "--warehouse", wh)
    assert p.returncode == 1 and "missing" in p.stderr and victim in p.stderr, p.stderr


def test_readers_racing_a_writer_never_get_a_partial_answer(tmp_path, versions):
    """A writer replaces one run over and over (its old parts deleted at each commit) while
    readers count runs and rows: each answer is a whole snapshot or a clear failure."""
    from pipeline.errors import QueryFailed
    from pipeline.outputs.query import query

    base, v1, v2, expected = versions
    wh = tmp_path / "wh"
    others = []
    for i, start in enumerate((1_767_398_400_000_000, 1_767_484_800_000_000)):
        d = tmp_path / f"other{i}"
        generate(d, HiprofConfig(inferences=1, seed=40 + i, start_us=start))
        others.append(d)
    dump = tmp_path / "dump"
    shutil.copytree(v1, dump)
    assert profetl("run", dump, *others, "--warehouse", wh).returncode == 0
    rest = counts(wh)["task_states"] - expected["v1"]["task_states"]
    allowed = {(3, rest + expected["v1"]["task_states"]), (3, rest + expected["v2"]["task_states"])}
    writer_script = (
        "import shutil, subprocess, sys\n"
        "for i in range(6):\n"
        "    src = sys.argv[1 + i % 2]\n"
        "    shutil.rmtree(sys.argv[3]); shutil.copytree(src, sys.argv[3])\n"
        "    subprocess.run([sys.executable, '-m', 'pipeline.cli', 'run', sys.argv[3], '-w', sys.argv[4], '--force', '--wait', '30'], check=True, capture_output=True)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", writer_script, str(v2), str(v1), str(dump), str(wh)],
        env={**os.environ},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    answers, failures = set(), 0
    deadline = time.monotonic() + 90
    try:
        while writer.poll() is None and time.monotonic() < deadline:
            try:
                answers.add(
                    query(Warehouse(wh), "select count(distinct run_id), count(*) from task_states").rows[0]
                )
            except QueryFailed as e:
                failures += 1
                assert "run the command again" in str(e)
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait()
    assert writer.returncode == 0, writer.stderr.read()
    assert answers and answers <= allowed, (answers, allowed, failures)
