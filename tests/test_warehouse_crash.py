"""A writer killed at any moment leaves the previous run or the new one; the next run completes."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import time

import pytest

from pipeline.faults import POINTS
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse import Warehouse
from tests.warehouse_checks import assert_consistent, counts, part_files, profetl


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


def _two_runs(tmp_path):
    """A warehouse with two runs of distinct collections; the dumps and the part files of each."""
    a, b = tmp_path / "a", tmp_path / "b"
    generate(a, HiprofConfig(inferences=2, seed=31, start_us=1_767_225_600_000_000))
    generate(b, HiprofConfig(inferences=2, seed=32, start_us=1_767_312_000_000_000))
    wh = tmp_path / "wh"
    done = profetl("run", a, b, "--warehouse", wh)
    assert done.returncode == 0, done.stderr
    runs = sorted(p.parent.name.split("=", 1)[1] for p in (wh / "runs").glob("run_id=*/run.parquet"))
    assert len(runs) == 2
    return a, b, wh, runs


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "other_run"])
def test_unreadable_commit_record_keeps_its_run(tmp_path, damage):
    """A commit record that cannot be read is reported and its files survive every writer;
    only `drop` (or a forced re-ingest) removes or replaces them."""
    a, b, wh, (victim, other) = _two_runs(tmp_path)
    record = wh / "runs" / f"run_id={victim}" / "run.parquet"
    data = record.read_bytes()
    record.write_bytes({"truncated": data[: len(data) // 2], "garbage": b"\x00garbage" * 50, "empty": b"",
                        "other_run": (wh / "runs" / f"run_id={other}" / "run.parquet").read_bytes()}[damage])
    files = sorted(p for p in part_files(wh) if f"run_id={victim}" in str(p))
    assert files

    listed = profetl("runs", "--warehouse", wh, "--json")
    assert listed.returncode == 0, listed.stderr
    assert victim in listed.stderr and "cannot be read" in listed.stderr
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [other]

    # a writer (with its sweep) leaves the run's files alone, and says why the run is missing
    again = profetl("run", b, "--warehouse", wh)
    assert again.returncode == 0, again.stderr
    assert victim in again.stderr
    assert sorted(p for p in part_files(wh) if f"run_id={victim}" in str(p)) == files

    # re-ingesting the same dump without --force is refused, with the way out named
    same = profetl("run", a, "--warehouse", wh)
    assert same.returncode == 1 and "--force" in same.stdout + same.stderr
    assert sorted(p for p in part_files(wh) if f"run_id={victim}" in str(p)) == files

    dropped = profetl("drop", victim, "--warehouse", wh)
    assert dropped.returncode == 0, dropped.stderr
    assert not [p for p in part_files(wh) if f"run_id={victim}" in str(p)] and not record.exists()
    clean = profetl("runs", "--warehouse", wh)
    assert clean.returncode == 0 and victim not in clean.stderr


def test_forced_reingest_repairs_an_unreadable_commit_record(tmp_path):
    a, b, wh, (victim, other) = _two_runs(tmp_path)
    fresh = tmp_path / "fresh"
    assert profetl("run", a, b, "--warehouse", fresh).returncode == 0
    (wh / "runs" / f"run_id={victim}" / "run.parquet").write_bytes(b"PAR1")
    repaired = profetl("run", a, "--force", "--warehouse", wh)
    assert repaired.returncode == 0, repaired.stderr
    with Warehouse(wh).writer():  # the next writer sweeps the files the repair superseded
        pass
    assert counts(wh) == counts(fresh)
    assert len(part_files(wh)) == len(part_files(fresh))
