"""A dump's units of work: the parts of a dump a cluster reads and builds on its own
(docs/architecture.md#cluster).

An ingest reads a dump unit by unit (a hiprof-era device with its host-side streams; a PROF_*
collection directory, ``host`` or ``device_N``; an export as a whole), each into its own
Parquet files, which become the shards of the run's raw part: the rows are the same, row for
row, as one read of the whole dump writes. A build makes each device's marts on its own
(every mart's grain starts with the device, and no rule reads another device's rows), one
shard of the run's mart part per device.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.readers.catalog import reader_of
from pipeline.readers.hiprof.reader import RunMeta
from pipeline.readers.instance_numbers import InstanceNumbers, RunNumbers
from pipeline.readers.issues import IssueLog
from pipeline.warehouse.contracts import RAW_TABLES, contract
from pipeline.warehouse.faults import checkpoint
from pipeline.warehouse.layout import SHARD_DEVICES, SHARD_THREADS, THREAD_TABLES, digest, new_id
from pipeline.warehouse.sink import ParquetSink, parquet_writer

WHOLE = None  # the unit of a dump read in one piece (an export)


def raw_sink(paths: dict[str, Path], run_id: str) -> ParquetSink:
    """The sink one read of a dump (or of one unit) writes its raw tables through."""
    return ParquetSink(
        paths, derive={"task_states": InstanceNumbers().add, "task_runs": RunNumbers().add}, run_id=run_id
    )


def unit_label(unit) -> str:
    if unit is WHOLE:
        return "the export"
    return f"device {unit}" if isinstance(unit, int) else str(unit)


@dataclass
class UnitRead:
    """What one unit's read wrote and learnt; picklable, it travels from a worker back."""

    unit: object
    # raw table -> its Parquet files, one per shard: one, or a host unit's split by device
    # (split_table)
    files: dict[str, list[str]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    meta: RunMeta | None = None
    log: IssueLog | None = None
    # each file's size and hash (pipeline.warehouse.writer.digest) by its path, taken on the
    # worker that wrote it (read_unit): the starting process places the files without reading them
    digests: dict[str, dict] = field(default_factory=dict)
    # how its files are to be split by device (split_plan), when they serve several devices: by
    # tasks of their own (split_table)
    plan: SplitPlan | None = None


@dataclass
class SplitPlan:
    """The shards a unit's files are split into (split_plan): each shard's set of devices, in
    shard order, and the shard of each device's rows of no thread and of each thread's rows."""

    order: list[frozenset]
    by_device: dict
    by_thread: dict


def read_into(out: Path, layout: str, scanned, run_id: str, unit=WHOLE, first: bool = True) -> UnitRead:
    """Read a dump (``scanned``: its reader's listing of it), or its ``unit``, into a Parquet
    file per raw table in the folder ``out``, its issues (ingest_issues) included. ``out`` is a
    folder of the ingest's own (an export's databases are read from copies taken there);
    ``first``: this unit also reports what belongs to no unit. The reader's decoding modules
    load here: a process that reads one generation (or only builds) loads no other's."""
    paths = {t: out / f"{t}.parquet" for t in RAW_TABLES}
    sink = raw_sink(paths, run_id)
    log = IssueLog()
    try:
        meta = reader_of(layout).read(scanned, sink, log, unit, first, out)
        sink.write("ingest_issues", issue_columns(log))
        sink.close()
    except BaseException:
        sink.abort()
        raise
    return UnitRead(unit, {t: [str(p)] for t, p in paths.items()}, dict(sink.rows), meta, log)


def read_unit(layout: str, dump: str, unit, first: bool, workdir: str, run_id: str) -> UnitRead:
    """Read one unit of ``dump`` into a fresh folder under ``workdir`` (a worker's retry after a
    crash starts in a folder of its own, never in the dead attempt's files). The worker lists
    the dump itself: it may be another machine, which sees the dump at the same path. A unit
    whose rows serve several devices is only planned here (``UnitRead.plan``): its tables are
    then split by ``split_table`` tasks, side by side, and its files have no digests yet."""
    out = Path(workdir) / f"unit-{new_id()}"
    out.mkdir(parents=True)
    read = read_into(out, layout, reader_of(layout).scan(Path(dump), layout), run_id, unit, first)
    read.plan = split_plan(read)
    if read.plan is None:
        read.digests = {p: digest(Path(p)) for paths in read.files.values() for p in paths}
    checkpoint("unit_read")
    return read


def split_plan(read: UnitRead) -> SplitPlan | None:
    """How a unit's files are split into a shard per set of devices whose builds read the rows
    (docs/architecture.md#cluster); None when its rows serve one device or none. A row of
    THREAD_TABLES serves every device its thread (tid) recorded anything for in this unit (a
    thread's rows stay together: the rules join a device's launches to its thread's calls,
    nodes and models, whichever device those name), a row without a thread and a row of another
    table its own device. Reads only the device and thread columns."""
    tables = [t for t in RAW_TABLES if read.rows.get(t) and "device_id" in contract("raw", t).column_names]
    thread_devices: dict[int, set] = {}
    devices: set = set()  # of the rows of no thread
    for t in tables:
        cols = ["device_id", "tid"] if t in THREAD_TABLES else ["device_id"]
        for batch in pq.ParquetFile(read.files[t][0]).iter_batches(SPLIT_BATCH_ROWS, columns=cols):
            b = pa.Table.from_batches([batch])
            if t not in THREAD_TABLES:
                devices.update(pc.unique(b["device_id"]).to_pylist())
                continue
            pairs = b.group_by(["tid", "device_id"]).aggregate([])
            for tid, dev in zip(pairs["tid"].to_pylist(), pairs["device_id"].to_pylist()):
                if tid is None:
                    devices.add(dev)
                else:
                    thread_devices.setdefault(tid, set()).add(dev)
    sets = {frozenset([d]) for d in devices} | {frozenset(d) for d in thread_devices.values()}
    if len(sets) < 2:
        return None
    order = sorted(sets, key=lambda devs: sorted(map(_device_order, devs)))
    shard_of = {devs: k for k, devs in enumerate(order)}
    return SplitPlan(
        order,
        {d: shard_of[frozenset([d])] for d in devices},
        {tid: shard_of[frozenset(d)] for tid, d in thread_devices.items()},
    )


def split_table(src: str, table: str, plan: SplitPlan, workdir: str) -> tuple[list[str], dict[str, dict]]:
    """One table's file ``src`` of a unit split by ``plan``: its shard files, in shard order,
    and their digests. Each row goes to one shard,
    so the shards hold what the one file held, row for row; each records in its footer the
    devices it serves and, for THREAD_TABLES, its threads (``raw_select`` reads by them). A
    table without a device stays whole in the first shard (``src`` itself); the other shards
    get empty files of it. Written into a fresh folder under ``workdir`` (a retried task's
    never the dead attempt's), a batch at a time: a split holds no more of a table in memory
    than the sink. ``src`` is left as it is (the ingest's temporary folder goes with it)."""
    out = Path(workdir) / f"split-{new_id()}"
    out.mkdir(parents=True)
    schema = pq.read_schema(src)
    files: list[str] = []
    if "device_id" not in contract("raw", table).column_names:  # whole in the first shard
        files.append(src)
        for k in range(1, len(plan.order)):
            files.append(_write(out / f"{table}.{k}.parquet", schema, []))
    else:
        writers = []
        for k, devs in enumerate(plan.order):
            meta = {SHARD_DEVICES: json.dumps(sorted(devs, key=_device_order))}  # null: no device
            if table in THREAD_TABLES:
                meta[SHARD_THREADS] = json.dumps(sorted(tid for tid, s in plan.by_thread.items() if s == k))
            path = out / f"{table}.{k}.parquet"
            writers.append((parquet_writer(path, schema.with_metadata(meta)), path, []))
        try:
            for batch in pq.ParquetFile(src).iter_batches(SPLIT_BATCH_ROWS):
                shards = _shards(batch, plan.by_device, plan.by_thread if table in THREAD_TABLES else None)
                # one stable sort by shard, then a slice each (not a filter per shard)
                by_shard = np.argsort(shards, kind="stable")
                batch = batch.take(pa.array(by_shard))
                ends = np.searchsorted(shards[by_shard], np.arange(len(writers) + 1))
                for k, (w, _, held) in enumerate(writers):
                    mine = batch.slice(ends[k], ends[k + 1] - ends[k])
                    if mine.num_rows:
                        held.append(mine)
                    if sum(b.num_rows for b in held) >= SPLIT_BATCH_ROWS:
                        w.write_table(pa.Table.from_batches(held))
                        held.clear()
            for w, path, held in writers:
                w.write_table(pa.Table.from_batches(held, w.schema) if held else w.schema.empty_table())
                w.close()
                files.append(str(path))
        except BaseException:
            for w, _, _ in writers:
                w.close()
            raise
    digests = {f: digest(Path(f)) for f in files}
    checkpoint("unit_split")
    return files, digests


# rows a split reads, and writes into a row group of a shard, at a time
SPLIT_BATCH_ROWS = 128 * 1024


def _shards(batch: pa.RecordBatch, by_device: dict, by_thread: dict | None) -> np.ndarray:
    """The shard of each row of ``batch``: its thread's, else its device's."""
    devs = batch.column("device_id")
    known = list(by_device)
    shard = np.array([by_device[d] for d in known] or [0], np.int64)
    out = shard[pc.fill_null(pc.index_in(devs, value_set=pa.array(known, devs.type)), 0).to_numpy()]
    if by_thread:
        tids = batch.column("tid")
        threads = list(by_thread)
        pos = pc.index_in(tids, value_set=pa.array(threads, tids.type))
        of_thread = np.array([by_thread[t] for t in threads], np.int64)
        has = pc.is_valid(pos).to_numpy(zero_copy_only=False)
        out = np.where(has, of_thread[pc.fill_null(pos, 0).to_numpy()], out)
    return out


def _write(path: Path, schema: pa.Schema, batches: list) -> str:
    with parquet_writer(path, schema) as w:
        w.write_table(pa.Table.from_batches(batches, schema))
    return str(path)


def _device_order(device) -> tuple:
    return (device is None, device or 0)


def merge_reads(layout: str, reads: list[UnitRead]) -> tuple[RunMeta, IssueLog, dict[str, int]]:
    """The run's metadata, issues and rows by raw table, from its units' reads."""
    rows: dict[str, int] = {}
    log = IssueLog()
    for r in reads:
        for table, n in r.rows.items():
            rows[table] = rows.get(table, 0) + n
        log.issues += r.log.issues
        log.bytes_decoded += r.log.bytes_decoded
    meta = reader_of(layout).merge_metas([r.meta for r in reads])
    return meta, log, rows


def issue_columns(log: IssueLog) -> dict:
    """The ingest_issues table's columns of ``log``."""
    rows = [i.as_row() for i in log.issues]
    keys = ["device_id", "source_file", "byte_offset", "byte_length", "kind", "count", "message"]
    return {k: [r[k] for r in rows] for k in keys}
