"""One committed run's raw tables as SQL, for the build and the timeline (which read a single
run's part files directly, not through the read side's views)."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import __version__
from pipeline.errors import DamagedPart
from pipeline.warehouse.compaction import damage_advice
from pipeline.warehouse.contracts import RAW_TABLES, contract
from pipeline.warehouse.layout import SHARD_DEVICES, SHARD_THREADS, THREAD_TABLES, is_group, part_of
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import quote

ALL_DEVICES = object()


def device_rows(device) -> str:
    """The SQL condition for the rows of ``device`` (None: rows of no device)."""
    return "device_id is null" if device is None else f"device_id = {int(device)}"


def raw_select(wh: Warehouse, table: str, run: dict, device=ALL_DEVICES) -> str:
    """One run's raw table as its contract has it now, without ``run_id``: what the build and
    the timeline read. With ``device`` (an id, or None for rows of no device), what a build of
    that device alone needs (docs/architecture.md#cluster): its rows of the tables that have a
    device, and of THREAD_TABLES also every row of the threads that recorded anything for it
    (a thread that launched on several devices is shared by their builds, each of which keeps
    only its own device's rows of every mart). A run ingested by an older profetl lacks the
    tables and columns added since: those read as empty / NULL, so old runs still rebuild."""
    if device is ALL_DEVICES or "device_id" not in contract("raw", table).column_names:
        return _select(wh, table, run)
    reads = device_shards(wh, run, device)
    sql = _select(wh, table, run, reads)
    mine = device_rows(device)
    if table not in THREAD_TABLES:
        return f"select * from ({sql}) where {mine}"
    threads = " union ".join(
        f"select tid from ({_select(wh, t, run, reads)}) where {mine}" for t in THREAD_TABLES
    )
    return f"select * from ({sql}) where {mine} or tid in ({threads})"


def create_raw_views(con, wh: Warehouse, run: dict, device=ALL_DEVICES) -> None:
    """Each raw table of ``run`` (of ``device``, as ``raw_select``) as a view of its name on
    the DuckDB connection ``con``: what the staging SQL reads, in a build and in the timeline."""
    for table in RAW_TABLES:
        con.execute(f"create view {table} as {raw_select(wh, table, run, device)}")


def device_shards(wh: Warehouse, run: dict, device):
    """Whether a build of ``device`` reads a raw file of ``run``: ``(table, path) -> bool``.
    A shard split by device (its footer's SHARD_DEVICES) is read by the devices it serves, and
    a shard of THREAD_TABLES also by every device that one of its threads recorded anything
    for in any shard of the run. Another file (a unit's only shard, an older run's, a compacted
    group file) is left out only when it has no rows, or (a table not of THREAD_TABLES) when
    its row groups' statistics say it holds other devices' rows alone; the rest is read, and
    filtered. The rows read are those of the filter alone."""
    keys: dict = {}

    def key(path):
        if path not in keys:
            keys[path] = _shard_key(path)
        return keys[path]

    thread_devices: dict[int, set] = {}
    untracked = False  # rows of threads whose devices no footer says
    for t in THREAD_TABLES:
        for p in wh.run_index().files_of_run("raw", t, run):
            devices, threads, rows, _ = key(p)
            if devices is None:
                untracked = untracked or rows != 0
            for tid in threads:
                thread_devices.setdefault(tid, set()).update(devices)

    def reads(table: str, path) -> bool:
        devices, threads, rows, held = key(path)
        if devices is None:
            if rows == 0:
                return False
            return held is None or table in THREAD_TABLES or device in held
        if device in devices:
            return True
        return table in THREAD_TABLES and (untracked or any(device in thread_devices[t] for t in threads))

    return reads


def _shard_key(path) -> tuple[set | None, list, int | None, set | None]:
    """A raw file's devices and threads from its footer (None: not split by device), rows
    (None: unknown, the file cannot be read here; its reading fails it as damaged) and the
    devices its statistics say it holds (None: not known)."""
    try:
        st = os.stat(path)
        devices, threads, rows, held = _footer_key(str(path), st.st_mtime_ns, st.st_size)
    except (OSError, pa.ArrowException):
        return None, [], None, None
    return (
        (None if devices is None else set(devices)),
        list(threads),
        rows,
        (None if held is None else set(held)),
    )


@functools.lru_cache(maxsize=4096)
def _footer_key(path: str, mtime_ns: int, size: int) -> tuple[tuple | None, tuple, int, tuple | None]:
    """(read once per process while the file is the same: a device's build asks for every
    table; a failure is not kept)"""
    meta = pq.read_metadata(path)
    kv = meta.metadata or {}
    if SHARD_DEVICES not in kv or is_group(part_of(Path(path).name)):  # (a group file keeps no shard's)
        return None, (), meta.num_rows, _held_devices(meta)
    return (
        tuple(json.loads(kv[SHARD_DEVICES])),
        tuple(json.loads(kv.get(SHARD_THREADS, b"[]"))),
        meta.num_rows,
        None,
    )


def _held_devices(meta: pq.FileMetaData) -> tuple | None:
    """The device ids of a file's rows by its row groups' statistics of ``device_id`` (None for
    NULLs), or None where a row group's do not tell (no statistics, or several devices)."""
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    if "device_id" not in names:
        return None
    col = names.index("device_id")
    held = set()
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(col).statistics
        if stats is None or stats.null_count is None:
            return None
        if stats.null_count:
            held.add(None)
        if stats.null_count < meta.row_group(g).num_rows:
            if not stats.has_min_max or stats.min != stats.max:
                return None
            held.add(stats.min)
    return tuple(held)


def _select(wh: Warehouse, table: str, run: dict, reads=None) -> str:
    """The run's rows of ``table``, from the files ``reads(table, path)`` keeps (all without it)."""
    c = contract("raw", table)
    run_id = run["run_id"]
    paths = wh.run_index().files_of_run("raw", table, run)
    wanted = [col for col in c.columns if col.name != "run_id"]
    if not paths or not all(p.exists() for p in paths):
        if run.get("profetl_version") == __version__ and paths:
            gone = next(p for p in paths if not p.exists())
            raise _damaged(wh, run, gone, "missing")
        cols = ", ".join(f"NULL::{col.sql_type} AS {col.name}" for col in wanted)
        return f"select {cols} where false"
    if reads is not None:
        paths = [p for p in paths if reads(table, p)]
    if not paths:  # the build of a device no shard of the table serves
        cols = ", ".join(f"NULL::{col.sql_type} AS {col.name}" for col in wanted)
        return f"select {cols} where false"
    have = set()
    for p in paths:  # a file that cannot be read fails the build here, named, before DuckDB meets it
        try:
            have = have or set(pq.read_schema(p).names)
        except (OSError, pa.ArrowException) as e:
            raise _damaged(
                wh, run, p, getattr(e, "strerror", None) or (str(e).splitlines() or [type(e).__name__])[0]
            ) from None
    cols = ", ".join(
        col.name if col.name in have else f"NULL::{col.sql_type} AS {col.name}" for col in wanted
    )
    # a group file holds other runs too
    where = f" where run_id = {quote(run_id)}" if "run_id" in have else ""
    # a sharded part (docs/architecture.md#cluster) as one scan per shard: DuckDB estimates a
    # scan of several files from the first one's rows, and a first shard without rows of the
    # table (a device unit's API calls) would make it plan joins for an empty table (an ASOF
    # join as a nested loop, quadratic in the rows it then meets)
    return " union all ".join(f"select {cols} from read_parquet({quote(p)}){where}" for p in paths)


def _damaged(wh: Warehouse, run: dict, path, reason: str) -> DamagedPart:
    """A raw part file of ``run`` that the build cannot read: the run is not built (its marts
    stay as they were), and what can be done about it."""
    return DamagedPart(
        path,
        reason,
        f"run {run['run_id']} cannot be built from it: its marts are left as they were; "
        + damage_advice(wh.run_index().rows_by_run_id(), "raw_part", part_of(path.name)),
    )
