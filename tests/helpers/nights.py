"""The sample dump as several nights, ingested and built one night after another: the warehouse
the warehouse tests (compaction, check, damage, the run index) start from. Built once per test
process for each count and compaction setting (the ``sample_nights`` fixture of
tests/conftest.py); a test copies the warehouse before it changes it."""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.outputs.export import fetch
from pipeline.warehouse import compaction
from pipeline.warehouse.layout import is_group
from pipeline.warehouse.store import Warehouse

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"
# the tables whose rows a test compares before and after a run moves into a group
TABLES = ("api_calls", "task_ops", "op_summary", "task_scheduler")


def night(root: Path, i: int) -> Path:
    """The sample dump as another night: another start_info text, so another run id."""
    d = root / f"night{i}"
    shutil.copytree(SAMPLE, d)
    for f in d.rglob("start_info.*"):
        if not f.name.endswith(".done"):
            f.write_text(f.read_text() + " " * (i + 1))
    return d


@contextmanager
def compaction_at_test_sizes():
    """Compaction at the sizes of a test: the newest run stays apart, two waiting runs are
    compacted, a group holds at most three runs."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compaction, "KEEP_FRESH", 1)
        mp.setattr(compaction, "COMPACT_BATCH", 2)
        mp.setattr(compaction, "GROUP_RUNS", 3)
        yield


def run_rows(wh: Warehouse, run_id: str) -> dict:
    """The run's rows of TABLES, by table."""
    return {t: fetch(wh, t, [run_id])[1].to_pylist() for t in TABLES}


@dataclass
class Nights:
    """Nights built one after another into ``wh`` (a folder: copy it before changing it)."""

    wh: Path
    dumps: list[Path]  # night i's dump (read it, never change it)
    run_ids: list[str]  # night i's run
    # each run's rows of TABLES read just after its night, while it still had files of its own
    # (a run compacted into a group at its own night has none)
    alone: dict[str, dict]

    def copy(self, dest: Path) -> Warehouse:
        """A copy of the warehouse at ``dest``, to change as a test likes (its runs still name
        the dumps of ``dumps``)."""
        shutil.copytree(self.wh, dest)
        return Warehouse(dest)


def build_nights(root: Path, count: int, small_groups: bool) -> Nights:
    """``count`` nights of the sample, each run (ingested and built) on its own by `profetl run`
    (in this process), with compaction at test sizes when ``small_groups``, in ``root``. Each
    night must exit 0: built, no data lost, also on the nights that compact."""
    from typer.testing import CliRunner

    from pipeline.cli.main import app

    wh = Warehouse(root / "wh")
    dumps, run_ids, alone = [], [], {}
    with compaction_at_test_sizes() if small_groups else nullcontext():
        for i in range(count):
            d = night(root / "dumps", i)
            r = CliRunner().invoke(app, ["run", str(d), "-w", str(wh.path), "--json"])
            assert r.exit_code == 0, r.output
            (o,) = json.loads(r.stdout)
            assert o["status"] == "built" and not o["data_lost"], o
            dumps.append(d)
            run_ids.append(o["run_id"])
            if not is_group(wh.run_index().rows_by_run_id()[o["run_id"]]["raw_part"]):
                alone[o["run_id"]] = run_rows(wh, o["run_id"])
    groups = {r["raw_part"] for r in wh.run_index().rows_by_run_id().values() if is_group(r["raw_part"])}
    assert small_groups or not groups, "nights at the default sizes were compacted: a test's sizes leaked in"
    return Nights(wh.path, dumps, run_ids, alone)


def files_of(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: its path relative to it -> (size, modification time in ns)."""
    return {
        f.relative_to(root).as_posix(): (f.stat().st_size, f.stat().st_mtime_ns)
        for f in root.rglob("*")
        if f.is_file()
    }


@contextmanager
def kept_as_built(root: Path, what: str):
    """Around the tests that share what ``root`` holds: afterwards every file under it must be
    as it was (a test that changed the shared files instead of its own copy fails)."""
    as_built = files_of(root)
    yield
    changed = sorted(set(files_of(root).items()) ^ set(as_built.items()))
    assert not changed, f"{what} changed (a test changed it, not its own copy): {changed[:5]}"
