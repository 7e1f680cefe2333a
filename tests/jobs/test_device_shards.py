"""A unit's files split by the devices they serve (pipeline.jobs.units.split_plan and split_table) and
read by a device's build (pipeline.jobs.raw_reads.raw_select): each row in one shard, and a
device's build reads the rows the filter over the whole run gives it, whatever threads
launched on several devices or appear in several units."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from pipeline.jobs.raw_reads import THREAD_TABLES, raw_select
from pipeline.jobs.units import UnitRead, raw_sink, split_plan, split_table
from pipeline.warehouse.contracts import RAW_TABLES

RUN = {"run_id": "r1", "profetl_version": None}

# (table, tid, device_id): rows of host threads; tid 3 calls on device 0 and launches on 1 and 2
HOST_A = [
    ("api_calls", 1, 0),
    ("api_calls", 1, 0),
    ("api_calls", 2, 1),
    ("api_calls", 3, 0),
    ("api_calls", 3, 0),
    ("api_calls", None, 1),
    ("api_calls", 4, None),
    ("task_ops", 1, 0),
    ("task_ops", 3, 1),
    ("task_ops", 3, 2),
    ("task_ops", 5, 2),
    ("ingest_issues", None, 0),
    ("ingest_issues", None, 2),
    ("ingest_issues", None, None),
]
HOST_B = [("api_calls", 5, 3), ("api_calls", 6, 0), ("task_ops", 6, 0)]  # tid 5 also in HOST_A
# one device's unit (not split) with rows of a host thread
DEVICE_UNIT = [("task_ops", 5, 1), ("ingest_issues", None, 1)]


def _unit(out: Path, rows) -> UnitRead:
    out.mkdir(parents=True)
    paths = {t: out / f"{t}.parquet" for t in RAW_TABLES}
    sink = raw_sink(paths, RUN["run_id"])
    for table in sorted({t for t, _, _ in rows}):
        mine = [(tid, dev) for t, tid, dev in rows if t == table]
        cols = {"device_id": [d for _, d in mine], "seq": list(range(len(mine)))}
        if table in THREAD_TABLES:
            cols["tid"] = [tid for tid, _ in mine]
        sink.write(table, cols)
    sink.close()
    return UnitRead("unit", {t: [str(p)] for t, p in paths.items()}, dict(sink.rows))


class _Index:
    def __init__(self, files):
        self.files = files

    def files_of_run(self, layer, table, run):
        return [Path(p) for p in self.files[table]]


class _Warehouse:
    def __init__(self, reads):
        self.index = _Index({t: [p for r in reads for p in r.files[t]] for t in RAW_TABLES})

    def run_index(self):
        return self.index


def _copy(read: UnitRead, out: Path) -> UnitRead:
    shutil.copytree(Path(read.files["api_calls"][0]).parent, out)
    return UnitRead(
        read.unit, {t: [str(out / Path(p).name) for p in ps] for t, ps in read.files.items()}, read.rows
    )


def _rows(con, sql) -> list:
    return sorted(con.execute(sql).fetchall(), key=repr)


@pytest.mark.parametrize("with_device_unit", [False, True])
def test_split_units_give_each_device_the_rows_of_the_filter(tmp_path, with_device_unit):
    units = [_unit(tmp_path / "a", HOST_A), _unit(tmp_path / "b", HOST_B)]
    if with_device_unit:
        units.append(_unit(tmp_path / "c", DEVICE_UNIT))
    whole = _Warehouse([_copy(u, tmp_path / f"whole-{i}") for i, u in enumerate(units)])
    for u in units:  # each table split as a cluster's split tasks do
        plan = split_plan(u)
        if plan is not None:
            out = str(Path(u.files["api_calls"][0]).parent)
            u.files = {t: split_table(ps[0], t, plan, out)[0] for t, ps in u.files.items()}
    assert len(units[0].files["api_calls"]) == 5  # {0}, {1}, {0,1,2}, {2}, {None}: by device set...
    assert len(units[1].files["api_calls"]) == 2  # ...of each unit's own threads: {0}, {3}
    if with_device_unit:
        assert len(units[2].files["api_calls"]) == 1  # one device: left as it was
    split = _Warehouse(units)
    con = duckdb.connect()
    for table in ("api_calls", "task_ops", "ingest_issues", "devices"):
        # every row once: the tables hold what one read writes
        assert _rows(con, raw_select(split, table, RUN)) == _rows(con, raw_select(whole, table, RUN))
        for device in (0, 1, 2, 3, None, 7):
            got = raw_select(split, table, RUN, device)
            assert _rows(con, got) == _rows(con, raw_select(whole, table, RUN, device)), (table, device)
    # a device's build leaves out the shards of threads that recorded nothing for it: device 3
    # reads its own shard of unit b and unit a's shard of thread 5 (which launched on 2 and, in
    # unit b, called on 3); rows of a thread in a file that says nothing of its devices (the
    # device unit's) make every build read every shard of THREAD_TABLES, files without rows
    # aside
    read = raw_select(split, "api_calls", RUN, 3)
    files = split.index.files["api_calls"]
    assert len([p for p in files if f"'{p}'" in read]) == (7 if with_device_unit else 2)
    # unit a's shards that serve device 2 (thread 3's one empty); not the device unit's, whose
    # statistics say it holds device 1's rows alone
    issues = split.index.files["ingest_issues"]
    assert len([p for p in issues if f"'{p}'" in raw_select(split, "ingest_issues", RUN, 2)]) == 2
    if with_device_unit:
        assert f"'{issues[-1]}'" in raw_select(split, "ingest_issues", RUN, 1)
