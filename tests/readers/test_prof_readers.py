"""Generation-2/3 reader rules on small hand-made inputs: detection, pairing, batch ids, aged heads, ids."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from pipeline.jobs.dumps import detect, discover
from pipeline.jobs.runner import ingest_dump, run_roots
from pipeline.layouts import prof as prof_layouts
from pipeline.outputs.export import fetch
from pipeline.readers.issues import IssueLog
from pipeline.readers.prof.device import stars_ids
from pipeline.readers.prof.files import job_children
from pipeline.readers.prof.pairing import Logs, batch_from_flips, batch_from_wraps
from pipeline.readers.prof.records import head_skip, read_fixed
from pipeline.readers.slices import SliceFile
from pipeline.synth.hiprof import HiprofConfig
from pipeline.synth.hiprof import generate as generate_hiprof
from pipeline.synth.prof import ProfConfig
from pipeline.synth.prof import generate as generate_prof
from pipeline.warehouse.store import Warehouse
from tests.helpers.pairing import pair_whole


def _logs(rows):
    """rows: (stream, task, is_end, syscnt) in file order."""
    a = np.array(rows, dtype=np.int64).reshape(-1, 4)
    n = len(a)
    return Logs(
        a[:, 0],
        a[:, 1],
        a[:, 2].astype(bool),
        a[:, 3],
        np.arange(n),
        np.arange(n) * 64,
        np.zeros(n, np.int32),
    )


def test_pairing_follows_msprof_rules():
    # stream 1 task 5: S(10) S(11) E(12) E(13) S(14)  -> (11,12), (-,13); starts 10 and 14 unpaired
    # stream 2 task 7: E(3) S(4)                        -> (-,3); start 4 unpaired
    runs = pair_whole(
        _logs(
            [
                (1, 5, 0, 10),
                (1, 5, 0, 11),
                (2, 7, 1, 3),
                (1, 5, 1, 12),
                (1, 5, 1, 13),
                (2, 7, 0, 4),
                (1, 5, 0, 14),
            ]
        ),
        by_time=False,
    )
    got = sorted(zip(runs.stream_id.tolist(), runs.start_syscnt.tolist(), runs.end_syscnt.tolist()))
    assert got == [(1, -1, 13), (1, 11, 12), (2, -1, 3)]
    assert sorted(runs.orphan_starts.tolist()) == [0, 5 * 64, 6 * 64]


def test_pairing_in_time_order_for_stars():
    # file order differs from time order: STARS pairs by time
    runs = pair_whole(_logs([(1, 1, 1, 20), (1, 1, 0, 10)]), by_time=True)
    assert runs.start_syscnt.tolist() == [10] and runs.end_syscnt.tolist() == [20]
    runs = pair_whole(_logs([(1, 1, 1, 20), (1, 1, 0, 10)]), by_time=False)
    assert runs.start_syscnt.tolist() == [-1] and len(runs.orphan_starts) == 1


def test_batch_from_wraps():
    stream = np.array([1, 1, 1, 1, 1, 2, 2])
    task = np.array([65534, 65535, 0, 1, 1, 9, 3])
    ts = np.array([1, 2, 3, 4, 5, 1, 2])
    assert batch_from_wraps(stream, task, ts).tolist() == [0, 0, 1, 1, 2, 0, 1]


def test_batch_from_flips_with_calibration():
    stream = np.array([1, 1, 1, 1, 1])
    task = np.array([65534, 0, 1, 2, 3])
    ts = np.array([10, 20, 30, 40, 50])
    # flip at 35 naming task 2: tasks 0 and 1 just before it (ids below 2) move to the new batch
    got = batch_from_flips(stream, task, ts, np.array([1]), np.array([35]), np.array([2]), np.array([1]))
    assert got.tolist() == [0, 1, 1, 1, 1]
    # flip task id 0: no calibration; stream destroyed (65535) also counts but never calibrates
    got = batch_from_flips(
        stream, task, ts, np.array([1, 1]), np.array([15, 45]), np.array([0, 9]), np.array([1, 65535])
    )
    assert got.tolist() == [0, 1, 1, 1, 2]
    # other streams' flips do not count
    assert (
        batch_from_flips(
            stream, task, ts, np.array([2]), np.array([1]), np.array([0]), np.array([1])
        ).tolist()
        == [0] * 5
    )


def test_stars_ids():
    s, t = stars_ids(
        np.array([5, 5 | 0x1000, 0x2000 | 0x0ABC, 0x1000 | 0xE000 | 7]),
        np.array([9, 9, 0xF000 | 0x0123, 0x1FFF]),
    )
    assert s.tolist() == [5, 5, 0x0123 % 2048, (0xF007) % 2048]
    assert t.tolist() == [9, 9, 0x0ABC | 0xF000, 0x1FFF | 0xE000]


def _hwts(n, first=0):
    a = prof_layouts.HWTS_LOG.zeros(n)
    a["magic"] = prof_layouts.DEVICE_MAGIC
    a["task_id"] = np.arange(first, first + n)
    return a.tobytes()


def test_aged_head_and_cut_tail_are_told_apart(tmp_path):
    raw = _hwts(10)
    aged = raw[3 * 64 + 7 :]  # oldest bytes deleted: starts 7 bytes into record 3
    cut = raw[:-57]  # a copy that stopped early
    for name, data in (("aged", aged), ("cut", cut)):
        (tmp_path / name).write_bytes(data)
    f_aged = [SliceFile(tmp_path / "aged", "aged", len(aged))]
    f_cut = [SliceFile(tmp_path / "cut", "cut", len(cut))]
    assert head_skip(f_aged, 64, (2, prof_layouts.DEVICE_MAGIC)) == (57, "head")
    assert head_skip(f_cut, 64, (2, prof_layouts.DEVICE_MAGIC)) == (0, "tail")
    assert head_skip(f_cut, 64, None) == (7, "head")  # no magic to tell: msprof's rule, total % size

    log = IssueLog()
    _, batches = read_fixed(
        f_aged, prof_layouts.HWTS_LOG, log, 0, aged=True, device_magic=prof_layouts.DEVICE_MAGIC
    )
    tasks = np.concatenate([b.records["task_id"] for b in batches]).tolist()
    assert tasks == list(range(4, 10))
    assert [(i.kind, i.byte_offset, i.byte_length) for i in log.issues] == [("truncated_record", 0, 57)]
    assert log.bytes_decoded == 6 * 64

    log = IssueLog()
    _, batches = read_fixed(
        f_cut, prof_layouts.HWTS_LOG, log, 0, aged=True, device_magic=prof_layouts.DEVICE_MAGIC
    )
    assert np.concatenate([b.records["task_id"] for b in batches]).tolist() == list(range(9))
    assert [(i.kind, i.byte_offset, i.byte_length) for i in log.issues] == [("truncated_record", 9 * 64, 7)]


def test_bad_device_magic_is_reported_not_decoded(tmp_path):
    a = np.frombuffer(_hwts(4), prof_layouts.HWTS_LOG.dtype).copy()
    a["magic"][2] = 0x1234
    (tmp_path / "h").write_bytes(a.tobytes())
    log = IssueLog()
    _, batches = read_fixed(
        [SliceFile(tmp_path / "h", "h", 256)],
        prof_layouts.HWTS_LOG,
        log,
        0,
        aged=True,
        device_magic=prof_layouts.DEVICE_MAGIC,
    )
    assert np.concatenate([b.records["task_id"] for b in batches]).tolist() == [0, 1, 3]
    assert [(i.kind, i.byte_offset, i.count) for i in log.issues] == [("bad_magic", 128, 1)]
    assert log.bytes_decoded == 3 * 64


def _prof(root, name, devices, host=True):
    p = root / name
    for d in devices:
        (p / f"device_{d}" / "data").mkdir(parents=True)
    if host:
        (p / "host" / "data").mkdir(parents=True)
    return p


def test_detect_prof_trees_jobs_and_default_tag(tmp_path):
    a = _prof(tmp_path / "job", "PROF_000001_20260101000000000_AAAAA", [0])
    b = _prof(tmp_path / "job", "PROF_000002_20260101000000300_BBBBB", [1, 2])
    assert detect(a) == "msprof_prof"
    assert detect(tmp_path / "job") == "msprof_job" and job_children(tmp_path / "job") == [a, b]
    assert discover(tmp_path) == [tmp_path / "job"]

    # same devices twice, or far apart in time: separate dumps, found one by one
    _prof(tmp_path / "two", "PROF_000001_20260101000000000_AAAAA", [0])
    _prof(tmp_path / "two", "PROF_000001_20260102000000000_CCCCC", [1])
    _prof(tmp_path / "same", "PROF_000001_20260101000000000_AAAAA", [0])
    _prof(tmp_path / "same", "PROF_000002_20260101000000001_DDDDD", [0])
    for parent in ("two", "same"):
        assert detect(tmp_path / parent) is None
        assert len(discover(tmp_path / parent)) == 2

    tag = tmp_path / "JOB"
    tag.mkdir()
    (tag / "hwts.log.data.45.dev.profiler_default_tag.1.slice_0").write_bytes(_hwts(2))
    assert detect(tag) == "profiler_default_tag"
    assert detect(tmp_path / "nothing") is None


def test_raw_data_wins_over_exports_beside_it(tmp_path):
    """msprof writes its database and exports into the PROF_* folder that keeps the raw data."""
    a = _prof(tmp_path / "job", "PROF_000001_20260101000000000_AAAAA", [0])
    (a / "device_0" / "data" / "hwts.data.0.slice_0").write_bytes(_hwts(2))
    (a / "msprof_20260101000001.db").write_bytes(b"")
    assert detect(a) == "msprof_prof"
    b = _prof(tmp_path / "job", "PROF_000002_20260101000000300_BBBBB", [1])
    (b / "device_1" / "data" / "hwts.data.1.slice_0").write_bytes(_hwts(2))
    (tmp_path / "job" / "msprof_20260101000002.db").write_bytes(b"")
    assert detect(tmp_path / "job") == "msprof_job"
    (a / "device_0" / "data" / "hwts.data.0.slice_0").unlink()  # only the exports left
    assert detect(a) == "msprof_export"


def _add_exports(d, where):
    """What msprof leaves after parsing ``d``: its database at the root, or mindstudio_profiler_output/."""
    if where == "db":
        (d / "msprof_20260101000009.db").write_bytes(b"")
    else:
        (d / "mindstudio_profiler_output").mkdir()
        (d / "mindstudio_profiler_output" / "op_summary_20260101000009.csv").write_text(
            "Op Name,Task ID\nx,1\n"
        )


def _ingest(tmp_path, dump):
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        o = ingest_dump(wh, dump)
    return wh.run_index().run_record(o.run_id), o.ingest.rows_by_table


@pytest.mark.slow
@pytest.mark.parametrize("where", ["db", "msprof_dir"])
def test_hiprof_result_dir_with_exports_is_read_raw(tmp_path, where):
    """A generation-1 result_dir keeps its data/ after msprof parsed it: the raw records are read."""
    dump = tmp_path / "result_dir"
    truth = generate_hiprof(dump, HiprofConfig(inferences=2, tasks=4))
    _add_exports(dump, where)
    assert detect(dump) == "hiprof_result_dir"
    assert discover(tmp_path) == [dump]
    run, rows = _ingest(tmp_path, dump)
    assert (run["layout"], run["layout_generation"]) == ("hiprof_result_dir", 1)
    assert (rows["task_states"], rows["api_calls"]) == (len(truth.states), len(truth.api_calls))


@pytest.mark.slow
@pytest.mark.parametrize("where", ["db", "msprof_dir"])
def test_job_with_exports_at_its_root_is_read_raw(tmp_path, where):
    """A job folder whose PROF_* children keep device_N/data and host/data, exports at the job root."""
    job = tmp_path / "job"
    truth = generate_prof(job, ProfConfig(devices=2, processes=2, inferences=2, tasks=4))
    _add_exports(job, where)
    assert detect(job) == "msprof_job"
    assert discover(tmp_path) == [job]
    run, rows = _ingest(tmp_path, job)
    assert run["layout"] == "msprof_job"
    assert (rows["task_runs"], rows["api_calls"]) == (len(truth.launches), len(truth.api_calls))


def test_exports_beside_a_single_raw_prof_folder_are_not_a_run(tmp_path):
    """One PROF_* folder with raw data and mindstudio_profiler_output/ beside it: the PROF_* folder is the dump."""
    root = tmp_path / "out"
    truth = generate_prof(root, ProfConfig(devices=1, inferences=2, tasks=4))
    _add_exports(root, "msprof_dir")
    assert detect(root) is None
    assert discover(root) == [root / truth.prof_dirs[0]]


# a torch_npu rank folder's own export: two tasks of kernel_details on device 0
KERNEL_DETAILS = """Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Block Dim
7,3,MatMul_k,MatMul,AI_CORE,1000.000\t,2.500,8
8,3,Gelu_k,Gelu,AI_VECTOR_CORE,1010.000\t,1.250,4
"""


@pytest.mark.slow
def test_prof_folders_with_raw_data_inside_a_torch_npu_export_are_runs_of_their_own(tmp_path):
    """torch_npu keeps msprof's PROF_* folder inside its rank folder. One that still holds raw data is a
    dump of its own found beside the rank folder; one holding only msprof's export of what
    ASCEND_PROFILER_OUTPUT holds (as in the real captures) is no run, so the collection is counted once."""
    root = tmp_path / "root"
    rank = root / "host_59186_20260101000000000_ascend_pt"
    (rank / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (rank / "profiler_info_0.json").write_text('{"rank_id": 0}')
    (rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").write_text(KERNEL_DETAILS)
    truth = generate_prof(rank, ProfConfig(devices=1, inferences=2, tasks=4))
    raw = rank / truth.prof_dirs[0]
    exported = rank / "PROF_000002_20260101000001000_EXPORTED"
    exported.mkdir()
    _add_exports(exported, "msprof_dir")
    assert (detect(rank), detect(raw), detect(exported)) == (
        "torch_npu_export",
        "msprof_prof",
        "msprof_export",
    )
    assert discover(root) == [rank, raw]
    assert discover(rank) == [rank, raw]

    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        outcomes = run_roots(wh, [root])
    assert [(o.source_path, o.status) for o in outcomes] == [(str(rank), "built"), (str(raw), "built")], [
        o.error for o in outcomes
    ]
    torch_run, raw_run = (wh.run_index().run_record(o.run_id) for o in outcomes)
    assert torch_run["run_id"] != raw_run["run_id"]
    assert (torch_run["layout"], raw_run["layout"]) == ("torch_npu_export", "msprof_prof")
    assert outcomes[0].ingest.rows_by_table["task_runs"] == 2
    rows = outcomes[1].ingest.rows_by_table
    assert (rows["task_runs"], rows["api_calls"]) == (len(truth.launches), len(truth.api_calls))

    # the rank folder's run says which nested folder is a run and which is not
    _, issues = fetch(wh, "ingest_issues", [torch_run["run_id"]])
    said = {
        i["source_file"]: i["message"] for i in issues.to_pylist() if i["source_file"].startswith("PROF_")
    }
    assert "`profetl run` finds" in said[raw.name]
    assert "not a run of its own" in said[exported.name]


def test_api_event_pairs_and_skips(tmp_path):
    """API records become calls; two EVENT records of one key one call; beginTime 0 is skipped."""
    from pipeline.readers.prof.files import Stream
    from pipeline.readers.prof.host import HostContext, api_event_rows
    from pipeline.warehouse.contracts import contract
    from pipeline.warehouse.sink import to_table

    def rec(level, typ, tid, req, begin, end, item):
        return struct.pack("<HHIIIQQQ", 0x5A5A, level, typ, tid, req, begin, end, item)

    ev = prof_layouts.EVENT_FLAG
    data = (
        rec(5000, 1000, 9, 0, 100, 200, 0)
        + rec(20000, 0x30014, 9, 3, 150, ev, 0)
        + rec(5000, 1000, 9, 0, 0, 5, 0)
        + rec(20000, 0x30014, 9, 3, 190, ev, 0)
        + rec(20000, 0x30014, 9, 4, 400, ev, 0)
    )
    (tmp_path / "unaging.api_event.data.slice_0").write_bytes(data)
    s = Stream(
        "api_event",
        64,
        "unaging",
        [SliceFile(tmp_path / "unaging.api_event.data.slice_0", "x", len(data))],
        [0],
    )
    ctx = HostContext(types={(5000, 1000): "KernelLaunch", (20000, 0x30014): "aclrtSynchronizeStream"})
    log = IssueLog()
    rows = [to_table(contract("raw", "api_calls"), r).to_pydict() for r in api_event_rows(s, ctx, log)]
    calls = [c for r in rows for c in zip(r["api_name"], r["start_ns"], r["end_ns"], r["record_kind"])]
    assert calls == [("KernelLaunch", 100, 200, "api"), ("aclrtSynchronizeStream", 150, 190, "event_pair")]
    assert sorted((i.kind, i.count) for i in log.issues) == [("invalid_api", 1), ("unmatched_event", 1)]
    assert log.bytes_decoded == len(data)


@pytest.mark.parametrize("freq, expect", [(None, [5_000, 123]), (100.0, [40_000_000_050, 40_000_000_000])])
def test_host_clock(freq, expect):
    from pipeline.readers.prof.meta import HostClock

    c = HostClock(freq, cntvct=1_000, mon_ns=40_000_000_000)
    ts = np.array([5_000, 123], np.uint64) if freq is None else np.array([1_005, 1_000], np.uint64)
    assert c.to_ns(ts).tolist() == expect


def test_aged_host_stream_starts_mid_record(tmp_path):
    """aging.* host streams lose their oldest slices; unaging.* ones never age (docs/formats.md#aging)."""
    from pipeline.readers.prof.files import Stream
    from pipeline.readers.prof.host import HostContext, api_event_rows

    recs = b"".join(
        struct.pack("<HHIIIQQQ", 0x5A5A, 5000, 1000, 9, 0, 100 * k, 100 * k + 50, 0) for k in (1, 2, 3)
    )
    for fam in ("aging", "unaging"):
        (tmp_path / f"{fam}.api_event.data.slice_3").write_bytes(recs[17:57])  # the first surviving slice
        (tmp_path / f"{fam}.api_event.data.slice_4").write_bytes(recs[57:])
    ctx = HostContext(types={(5000, 1000): "KernelLaunch"})

    def read(fam):
        files = [
            SliceFile(
                tmp_path / f"{fam}.api_event.data.slice_{n}",
                f"{fam}_{n}",
                (tmp_path / f"{fam}.api_event.data.slice_{n}").stat().st_size,
            )
            for n in (3, 4)
        ]
        log = IssueLog()
        starts = [
            v
            for r in api_event_rows(Stream("api_event", 64, fam, files, [3, 4]), ctx, log)
            for v in r["start_ns"].tolist()
        ]
        return (
            starts,
            [
                (i.kind, i.source_file, i.byte_offset, i.byte_length)
                for i in log.issues
                if i.kind != "bad_magic"
            ],
            log,
        )

    starts, issues, log = read("aging")
    assert starts == [200, 300]  # 103 bytes: the first 23 finish record 1 and are skipped
    assert issues == [("truncated_record", "aging_3", 0, 23)]
    assert log.bytes_decoded == 80
    starts, issues, log = read(
        "unaging"
    )  # never aged: read from byte 0; the misaligned records fail the magic
    assert starts == [] and issues == [("truncated_record", "unaging_4", 40, 23)]
    assert sum(i.count for i in log.issues if i.kind == "bad_magic") == 2


@pytest.mark.slow
def test_ascend310_device_inside_a_prof_tree_keeps_its_task_states(tmp_path):
    """platform_version 0 in a PROF_* tree: ts_track and aicore are the TLV streams of generation 1."""
    import shutil

    from pipeline.jobs.runner import ingest_dump
    from pipeline.outputs.export import fetch
    from pipeline.synth.hiprof import HiprofConfig, generate
    from pipeline.warehouse.store import Warehouse
    from tests.helpers import oracle

    truth = generate(tmp_path / "h", HiprofConfig(seed=3))
    dev = tmp_path / "PROF_000001_20260101000000000_ZZZZZ" / "device_0"
    (dev / "data").mkdir(parents=True)
    for p in (tmp_path / "h").iterdir():
        if p.is_file():
            shutil.copy(p, dev / p.name)
    for p in (tmp_path / "h" / "data").iterdir():
        if p.name.startswith(("ts_track", "aicore")):
            shutil.copy(p, dev / "data" / p.name)
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        o = ingest_dump(wh, dev.parent)
    run = wh.run_index().run_record(o.run_id)
    assert (run["layout_generation"], run["chip"], run["layout"]) == (1, "Ascend310", "msprof_prof")
    got = fetch(wh, "task_scheduler", [o.run_id])[1].to_pylist()
    expected = {(r["task_id"], r["stream_id"], r["task_type"]): r for r in oracle.task_scheduler(truth)}
    assert len(got) == len(expected)
    for r in got:  # no host data here: no API, no op name; the state times are the truth's
        e = expected[(r["task_id"], r["stream_id"], r["task_type"])]
        assert (r["waiting_ns"], r["pending_ns"], r["running_ns"], r["task_count"]) == (
            e["waiting_ns"],
            e["pending_ns"],
            e["running_ns"],
            e["task_count"],
        )
