"""The upgrade from profetl 0.2's layout: the only code that knows it.

profetl 0.2 wrote a commit record per run (``runs/run_id=<id>/run.parquet``) and its part
files in a folder per run (``<layer>/<table>/run_id=<id>/part-<id>.parquet``, no run_id
column), and no index. No reader reads such a warehouse: the store refuses it
(``refuse``: ``WarehouseNeedsUpgrade``, naming ``profetl check --repair``). A writer moves
it to the current layout under the lock before anything else (``migrate``, from
``Writer.locked`` and from ``check.repair``); a run whose record cannot be read stops the
move, naming it, until ``check --repair --drop`` drops it (``drop_old``). ``needs_upgrade``
and ``refuse`` read a ``Warehouse``; ``migrate`` and ``drop_old`` are functions over its
``Writer`` (``writer.py``), under the lock."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from pipeline.errors import DamagedPart, DamagedRun, UnknownRun, WarehouseNeedsUpgrade
from pipeline.lazy import lazy
from pipeline.warehouse import compaction
from pipeline.warehouse.layout import LAYERS, check_run_id, fsync_dir, layer_tables, rmdir_if_empty, run_order
from pipeline.warehouse.part_rows import conform, distinct_values, files_bytes, reason
from pipeline.workload import workload_of

pa = lazy("pyarrow")
pc = lazy("pyarrow.compute")
pq = lazy("pyarrow.parquet")

RECORD = "run.parquet"  # a run's commit record in its folder runs/run_id=<id>/


def needs_upgrade(wh) -> bool:
    """Whether the warehouse ``wh`` is of profetl 0.2's layout: commit records per run and no
    index yet (a migration killed before its commit leaves it so)."""
    if wh.index_file.exists():
        return False
    base = wh.path / "runs"
    return base.is_dir() and any(base.glob(f"run_id=*/{RECORD}"))


def refuse(wh) -> None:
    """WarehouseNeedsUpgrade when ``wh`` is of profetl 0.2's layout: what every reader meets,
    before it reads anything."""
    if needs_upgrade(wh):
        raise WarehouseNeedsUpgrade(wh.path)


def _records(wh) -> list[tuple[str, Path]]:
    """(run id, its commit record) of every run of the 0.2 layout, by run id."""
    return [
        (f.parent.name.split("=", 1)[1], f) for f in sorted((wh.path / "runs").glob(f"run_id=*/{RECORD}"))
    ]


def _old_file(root: Path, layer: str, table: str, run: dict) -> Path | None:
    """The 0.2 part file of ``run`` for ``table`` (None when the run has no part of that layer)."""
    part = run.get("ingest_id" if layer == "raw" else "build_id")
    if not part:
        return None
    return root / layer / table / f"run_id={run['run_id']}" / f"part-{part}.parquet"


def drop_old(w, run_ids: list[str]) -> dict[str, int]:
    """Remove runs of the 0.2 layout, readable record or not: their records and their run
    folders (UnknownRun, before anything is removed, when one is not there). Returns the files
    removed per run. The layout is not migrated here (``migrate`` does it next)."""
    wh = w.warehouse
    found = {}
    for run_id in dict.fromkeys(check_run_id(r) for r in run_ids):
        record = wh.path / "runs" / f"run_id={run_id}" / RECORD
        files = [p for layer, _, _ in LAYERS for p in (wh.path / layer).glob(f"*/run_id={run_id}/*")]
        if not record.exists() and not files:
            raise UnknownRun(f"no run {run_id!r} in {wh.path} (see `profetl runs`)")
        found[run_id] = (record, files)
    removed = {}
    for run_id, (record, files) in found.items():
        n = 0
        if record.exists():
            record.unlink()
            fsync_dir(record.parent)
            n += 1
        for p in files + list(record.parent.glob(".run-*.tmp")):
            p.unlink(missing_ok=True)
            n += 1
        for d in [record.parent] + [p.parent for p in files]:
            rmdir_if_empty(d)
        removed[run_id] = n
    return removed


def migrate(w) -> int:
    """Move a warehouse of profetl 0.2's layout to this one, under the lock: every run's files
    are written again with a run_id column (small runs into groups), then the index is written
    (the commit: a crash before it leaves the old layout, whole, and its new files for the
    next sweep), then the old folders go. DamagedRun, before anything is written, when a
    record cannot be read (which files it names is unknown). What a migration killed after its
    commit leaves of the old layout, the writer's sweep removes (``is_old_folder``). Returns the
    runs moved."""
    wh = w.warehouse
    if not needs_upgrade(wh):
        return 0
    idx, damaged = {}, []
    for run_id, f in _records(wh):
        try:
            r = read_record(f, run_id)
        except DamagedRun as e:
            damaged.append(DamagedRun(e.run_id, e.path, e.reason, wh.path))
            continue
        # parts named by the run's own ids until they are written (small runs: into groups)
        idx[run_id] = dict(r, raw_part=r.get("ingest_id") or None, mart_part=r.get("build_id") or None)
    if damaged:
        raise damaged[0]
    for r in idx.values():  # from the run's own small files, before they are grouped
        r["workload"] = _workload(wh, r)

    def old_batches(layer, table, src, rows, schema):
        for r in rows:
            f = _old_file(wh.path, layer, table, r)
            if f is None or not f.exists():
                continue  # a table added since profetl 0.2: none in its runs
            try:
                for b in pq.ParquetFile(f).iter_batches(batch_size=65_536):
                    yield conform(b, schema, r["run_id"])
            except (OSError, pa.ArrowException) as e:
                raise DamagedPart(
                    f,
                    reason(e),
                    f"the upgrade needs it: restore it, or drop run {r['run_id']} "
                    f"(`profetl check --repair --drop {r['run_id']} -w {shlex.quote(str(wh.path))}`)",
                ) from None

    try:
        for layer, key, id_key in LAYERS:
            parts = [r for r in idx.values() if r.get(key)]
            small, batch, size = [], [], 0
            for r in sorted(parts, key=run_order):
                n = _old_bytes(wh, layer, r)
                if n > compaction.SMALL_RUN_BYTES:  # stays in files of its own, now with a run_id column
                    compaction.write_group(w, layer, key, [r], r[id_key], read=old_batches)
                    continue
                if batch and (len(batch) >= compaction.GROUP_RUNS or size + n > compaction.GROUP_BYTES):
                    small.append(batch)
                    batch, size = [], 0
                batch.append(r)
                size += n
            if batch:
                small.append(batch)
            for members in small:
                compaction.new_group(w, idx, layer, key, members, read=old_batches)
    except BaseException:  # named by no index: what a failed upgrade leaves is nothing new
        for rel in list(w.placed):
            w.unplace_file(wh.path / rel)
        raise
    w.write_index(idx)
    _remove(_old_folders(wh))
    return len(idx)


def _old_folders(wh) -> list[Path]:
    """The 0.2 layout's folders: the runs' commit records' and the tables' run folders."""
    return [*(wh.path / "runs").glob("run_id=*")] + [
        d for layer, _, _ in LAYERS for d in (wh.path / layer).glob("*/run_id=*")
    ]


def is_old_folder(p: Path) -> bool:
    """Whether ``p`` (an entry of ``runs/`` or of a table's folder) is a folder of the 0.2
    layout. Once an index is committed, such a folder is what a migration killed after its
    commit left: nothing names it, and the writer's sweep removes it."""
    return p.name.startswith("run_id=") and p.is_dir()


def _remove(folders: list[Path]) -> None:
    """Remove the 0.2 layout's folders once the index that replaces them is committed."""
    for d in folders:
        shutil.rmtree(d, ignore_errors=True)


def _old_files(wh, layer: str, table: str, run: dict) -> list[Path]:
    f = _old_file(wh.path, layer, table, run)
    return [f] if f is not None else []


def _old_bytes(wh, layer: str, run: dict) -> int:
    return files_bytes(f for table in layer_tables(layer) for f in _old_files(wh, layer, table, run))


def _workload(wh, run: dict) -> str:
    """The run's workload key (``pipeline/workload.py``) from its 0.2 raw files."""

    return workload_of(
        run, lambda table, column: distinct_values(_old_files(wh, "raw", table, run), column, run["run_id"])
    )


OWNER_KEY = b"profetl.run_id"


def owned_by(table: pa.Table, run_id: str) -> pa.Table:
    """``table`` with the run it is the commit record of in its schema metadata."""
    return table.replace_schema_metadata({**(table.schema.metadata or {}), OWNER_KEY: run_id.encode()})


def read_record(f: Path, run_id: str) -> dict:
    """One commit record (``runs/run_id=<id>/run.parquet``), run_id (from the folder, or the
    column of a record written before it was dropped) first; DamagedRun saying why it cannot be
    read, or that it is another run's (its metadata, or its old run_id column, names another)."""
    try:
        table = pq.read_table(f)
        rows = table.to_pylist()
    except (OSError, pa.ArrowException) as e:
        raise DamagedRun(run_id, f, reason(e)) from None
    owner = (table.schema.metadata or {}).get(OWNER_KEY, run_id.encode()).decode(errors="replace")
    if owner != run_id:
        raise DamagedRun(run_id, f, f"it is the commit record of run {owner}")
    if len(rows) != 1 or rows[0].get("run_id", run_id) != run_id:
        raise DamagedRun(run_id, f, f"it holds {len(rows)} row(s), not the one row of run {run_id}")
    return {"run_id": run_id} | {k: v for k, v in rows[0].items() if k != "run_id"}
