"""A writer killed at any moment leaves the previous run or the new one; the next run completes."""

from __future__ import annotations

import os
import random
import shutil
import signal
import time

import pytest

from pipeline.warehouse.faults import POINTS
from pipeline.synth.hiprof import HiprofConfig, generate
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
