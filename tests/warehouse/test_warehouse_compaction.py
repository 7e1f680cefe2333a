"""Old small runs move into group files; a run in a group is still read, replaced and exported whole."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import export
from pipeline.warehouse.layout import is_group, part_of, shard_count
from pipeline.warehouse.store import Warehouse
from tests.helpers.nights import night, run_rows
from tests.helpers.warehouse_checks import assert_consistent, drop_run, part_files


@pytest.fixture
def nights(sample_nights, tmp_path, small_groups):
    """Five nights run one after the other (built once per test process, copied here); each
    run's rows read while it had files of its own."""
    built = sample_nights(5, small_groups=True)
    wh = built.copy(tmp_path / "wh")
    return wh, built.alone, dict(zip(built.run_ids, built.dumps))


def test_old_runs_move_into_groups_and_read_the_same(nights):
    wh, alone, _ = nights
    idx = wh.run_index().rows_by_run_id()
    assert len(idx) == 5 and len(alone) == 5  # each was read before it was compacted
    groups = {r["raw_part"] for r in idx.values() if is_group(r["raw_part"])}
    assert len(groups) == 2  # three runs, then one more (a group holds at most three)
    newest = max(idx.values(), key=lambda r: r["ingested_at"])
    assert not is_group(newest["raw_part"]) and not is_group(newest["mart_part"])
    for run_id, rows in alone.items():
        assert run_rows(wh, run_id) == rows, run_id
    # files: one per table and group, plus the runs not compacted yet
    own = {r["raw_part"] for r in idx.values() if not is_group(r["raw_part"])}
    assert len(list((wh.path / "raw" / "api_calls").iterdir())) == len(groups) + len(own)
    for f in (wh.path / "raw" / "api_calls").iterdir():
        assert pq.read_schema(f).names[0] == "run_id"
    assert_consistent(wh.path)


def test_export_of_many_runs_keeps_run_order(nights, tmp_path):
    wh, alone, _ = nights
    run_ids = [r["run_id"] for r in wh.run_index().run_records()]
    out = tmp_path / "all.parquet"
    n = export(wh, "op_summary", run_ids, "parquet", str(out))
    got = pq.read_table(out).to_pylist()
    # a multi-run export adds each run's collection time after run_id
    starts = {r["run_id"]: r["collection_start_us"] for r in wh.run_index().run_records()}
    assert all(int(r.pop("collected_at").timestamp() * 1e6) == starts[r["run_id"]] for r in got)
    want = [dict(row, run_id=run_id) for run_id in run_ids for row in alone[run_id]["op_summary"]]
    assert n == len(want) and got == want
    # the runs in another order than the groups keep them: the order asked for
    back = list(reversed(run_ids))
    export(wh, "op_summary", back, "parquet", str(out))
    assert [r["run_id"] for r in pq.read_table(out, columns=["run_id"]).to_pylist()] == [
        run_id for run_id in back for _ in alone[run_id]["op_summary"]
    ]


def test_replacing_a_run_in_a_group_rewrites_only_its_group(nights):
    wh, alone, dumps = nights
    idx = wh.run_index().rows_by_run_id()
    victim = next(r for r in idx.values() if is_group(r["raw_part"]))
    group = victim["raw_part"]
    mates = [r["run_id"] for r in idx.values() if r["raw_part"] == group and r["run_id"] != victim["run_id"]]
    others = [r for r in idx.values() if r["raw_part"] != group]
    with wh.writer():
        (o,) = run_roots(wh, [dumps[victim["run_id"]]], force=True)
    assert o.run_id == victim["run_id"] and o.status == "built"
    after = wh.run_index().rows_by_run_id()
    assert after[victim["run_id"]]["ingest_id"] != victim["ingest_id"]
    assert not (wh.path / "raw" / "api_calls" / f"part-{group}.parquet").exists()
    for run_id in mates:  # moved to the group written again without the victim
        assert after[run_id]["raw_part"] not in (group, after[victim["run_id"]]["raw_part"])
    for r in others:  # other groups and runs untouched
        assert after[r["run_id"]]["raw_part"] == r["raw_part"]
    for run_id, rows in alone.items():
        assert run_rows(wh, run_id) == rows, run_id
    # no file the index does not name
    named = {p for r in after.values() for p in (r["raw_part"], r["mart_part"])}
    assert {f.name[len("part-") : -len(".parquet")] for f in part_files(wh.path)} == named
    assert_consistent(wh.path)


def test_a_query_without_the_runs_view_reads_the_groups_through_the_placing_columns(nights):
    """A reader without the runs view reads only the index's placing columns (DuckDB): each
    part once with the first run it holds, in index order; its queries read the groups whole."""
    import duckdb

    from pipeline.outputs.query import query

    wh, alone, _ = nights
    index = pq.read_table(wh.index_file).to_pylist()  # in run order, as the index is kept
    firsts = []
    for key in ("raw_part", "mart_part"):
        seen = set()
        for r in index:
            if r[key] not in seen:
                seen.add(r[key])
                firsts.append(r["run_id"])
    con = duckdb.connect()
    placed = wh.placing_rows(con)
    assert [r["run_id"] for r in placed] == [r["run_id"] for r in index if r["run_id"] in firsts]
    assert all(p[k] == r[k] for p in placed for r in index if r["run_id"] == p["run_id"] for k in p)
    some = [index[-1]["run_id"], index[0]["run_id"]]
    assert [r["run_id"] for r in wh.placing_rows(con, some)] == [index[0]["run_id"], index[-1]["run_id"]]
    for run_id, rows in alone.items():
        res = query(wh, f"select count(*), sum(dur_ns) from op_summary where run_id = '{run_id}'")
        assert res.rows == [(len(rows["op_summary"]), sum(r["dur_ns"] for r in rows["op_summary"]))], run_id


def test_sharded_runs_are_compacted_and_dropped_whole(tmp_path, small_groups):
    """Runs whose raw part is a file per device (read with a pool of readers, as on a cluster:
    docs/architecture.md#cluster) read the same before and after compaction into a group, and
    dropping one removes every shard of it."""
    from pipeline.jobs.cluster import Threads

    wh = Warehouse(tmp_path / "wh")
    alone = {}
    for i in range(4):
        d = night(tmp_path / "dumps", i)
        with Threads(2) as pool, wh.writer():
            (o,) = run_roots(wh, [d], readers=pool)
        assert o.status == "built"
        part = wh.run_index().rows_by_run_id()[o.run_id]["raw_part"]
        if not is_group(part):
            assert shard_count(part) == 2  # the sample's two devices, a file each
            alone[o.run_id] = run_rows(wh, o.run_id)
    idx = wh.run_index().rows_by_run_id()
    assert len(alone) == 4 and any(is_group(r["raw_part"]) for r in idx.values())
    for run_id, rows in alone.items():
        assert run_rows(wh, run_id) == rows, run_id
    victim = next(r for r in idx.values() if not is_group(r["raw_part"]))
    shards = [
        f
        for t in ("api_calls", "task_states")
        for f in wh.run_index().part_files("raw", t, victim["raw_part"])
    ]
    assert len(shards) == 4 and all(f.exists() for f in shards)
    with wh.writer():
        drop_run(wh, victim["run_id"])
    assert not any(f.exists() for f in shards)
    named = {r[k] for r in wh.run_index().rows_by_run_id().values() for k in ("raw_part", "mart_part")}
    assert {part_of(f.name) for f in part_files(wh.path)} == named  # nothing else left on disk
    assert_consistent(wh.path)
