"""The writer: the one process that changes a warehouse, under its lock.

``Writer`` takes the lock (``Warehouse.writer()``), upgrades profetl 0.2's layout
(``upgrade.migrate``), sweeps what a dead writer left, places the files of a new part in the
tables' folders (recording each file's size and hash), commits a run (the new index replaces
the old one in one ``os.replace``), drops runs, and deletes the files no commit names. Nothing else
renames a file into the tables' folders or takes the lock (tests/project/test_layers.py).
Compaction (``compaction.py``) and the upgrade (``upgrade.py``) are functions over a Writer.

Several threads of the process holding the lock may use its Writer at once (a night on a
cluster runs several dumps' jobs side by side, docs/architecture.md#cluster): what reads and
replaces the index or moves files into the tables' folders runs under the Writer's own thread
lock (``serial``, ``serialised``), and the files a thread put in place are that thread's until
it commits them or discards them (``placed_by``).
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import threading
import time
from contextlib import contextmanager
from functools import wraps
from pathlib import Path

from pipeline.errors import INDEX_HISTORY, DamagedIndex, DamagedPart, UnknownRun, WarehouseLocked
from pipeline.lazy import lazy
from pipeline.warehouse import commit_records, compaction, upgrade
from pipeline.warehouse.contracts import contract
from pipeline.warehouse.faults import checkpoint
from pipeline.warehouse.index import FORMAT_KEY, INDEX_FORMAT, RunIndex, index_schema
from pipeline.warehouse.layout import (
    LAYERS,
    TABLE,
    check_run_id,
    digest,
    entry_part,
    fsync_dir,
    is_group,
    layer_tables,
    named_parts,
    part_files,
    part_of,
    run_order,
)
from pipeline.warehouse.part_rows import conform, distinct_values
from pipeline.workload import workload_of

pa = lazy("pyarrow")
pc = lazy("pyarrow.compute")
pq = lazy("pyarrow.parquet")

# The last KEEP_VERSIONS versions of the index are kept in runs/_history/ (``Warehouse.index_versions``),
# written after each commit and pruned then: a deleted or overwritten index can be restored.
# (The leading "_" keeps them out of a reading of the runs folder by pandas, Spark or Hive.)
KEEP_VERSIONS = 5
HISTORY = INDEX_HISTORY
INDEX_ROW_GROUP_ROWS = 256


def serialised(fn):
    """``fn``, a method of the Writer, run under its thread lock (``Writer.serial``): one thread
    at a time reads the index and replaces it, or changes what is in the tables' folders."""

    @wraps(fn)
    def run(self, *args, **kw):
        with self.serial:
            return fn(self, *args, **kw)

    return run


class Writer:
    """The writing side of ``warehouse`` (a ``store.Warehouse``) while its lock is held
    (``Warehouse.writer()``)."""

    def __init__(self, warehouse) -> None:
        self.warehouse = warehouse
        self.path = warehouse.path
        self.stale_lock: str | None = None  # pid left in .lock by a writer that died
        self.swept = 0  # leftover files removed when the lock was taken
        self.migrated = 0  # runs moved from profetl 0.2's layout when the lock was taken
        self.damaged_parts: list[DamagedPart] = []  # what the last ``compact`` left alone, and why
        # part files this writer put in place and has not committed yet: path relative to the
        # warehouse -> its ``files`` entry (size, SHA-256), for the commit that names them
        self.placed: dict[str, dict] = {}
        # the thread that put each of them in place: its commit names them, or its failure
        # discards them; another thread's commit or failure leaves them alone
        self.placed_by: dict[str, int] = {}
        # held by the thread that reads and replaces the index or changes the tables' folders
        # (re-entrant: a commit regroups, which places files)
        self.serial = threading.RLock()

    def run_index(self) -> RunIndex:
        """The index as it is now (``Warehouse.run_index``): what this writer committed last."""
        return self.warehouse.run_index()

    # --- the lock ---------------------------------------------------------------------------
    @contextmanager
    def locked(self, wait_seconds: float = 0.0, prepare: bool = True):
        """Hold the warehouse's writer lock for the duration of the block.

        ``prepare``: profetl 0.2's layout is upgraded first (``upgrade.migrate``: a record
        that cannot be read stops the writer there, DamagedRun, nothing changed), then what a
        dead writer left is swept, and a new warehouse gets its empty index. Not ``prepare``:
        only the lock, for ``profetl check --repair``, which must take it while the index is
        missing or damaged, and upgrades the 0.2 layout itself.

        The lock is an ``flock`` on the warehouse folder and one on ``.lock``: the kernel
        releases them when their process dies, even under ``kill -9``, so a dead writer never
        blocks the next one; deleting ``.lock`` under a live writer lets no second one in. The file
        holds the writer's pid while it works and is emptied on a clean exit, so a
        non-empty, unlocked file means the previous writer died: that is reported in
        ``stale_lock`` and its leftovers are swept before this writer starts.
        """
        self.warehouse.check()
        self.path.mkdir(parents=True, exist_ok=True)
        lock = self.path / ".lock"
        deadline = time.monotonic() + wait_seconds
        # Two flocks: on the warehouse folder itself, which no one deletes under a writer (a
        # deleted .lock would let a second writer lock a new file of that name), and on .lock,
        # which holds the pid and which older profetl versions lock.
        dir_fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        fd = -1
        locked = False
        try:
            _wait_flock(dir_fd, deadline, lock)
            fd = _open_lock(lock, deadline)
            previous = os.pread(fd, 64, 0).decode(errors="replace").strip()
            self.stale_lock = previous or None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            if prepare:
                self.migrated = upgrade.migrate(self)
                self.swept = self.sweep()
            if prepare and not self.warehouse.index_file.exists():
                # a new warehouse gets an empty index before any part file: part files without
                # an index are then always damage (``Warehouse.refuse_missing_index``), never a
                # first run killed before its commit
                self.write_index({}, commit=False)
            locked = True
            yield self
        finally:
            if locked and _same_file(fd, lock):  # an orderly end, error or not: the next writer need not warn
                os.ftruncate(fd, 0)
            if fd >= 0:
                os.close(fd)  # closing the descriptors releases the flocks
            os.close(dir_fd)

    # --- leftovers ----------------------------------------------------------------------------
    @serialised
    def sweep(self) -> int:
        """Remove part files and temp files that the index does not name. Call under the lock."""
        wh = self.warehouse
        snap = wh.run_index()
        named = set(snap.parts_of_runs("raw")) | set(snap.parts_of_runs("marts"))
        removed = 0
        # profetl 0.2's folders, left by a migration killed after its commit: only once an
        # index is committed (before it, ``upgrade.migrate`` has moved them or stopped)
        old_layout_done = wh.index_file.exists()
        for layer, _, _ in LAYERS:
            base = self.path / layer
            if not base.is_dir():
                continue
            for d in base.iterdir():
                if not d.is_dir():
                    continue
                for f in d.iterdir():
                    if f.is_dir():  # no part is a folder: left alone (``check`` lists what is in it)
                        if old_layout_done and upgrade.is_old_folder(f):
                            shutil.rmtree(f, ignore_errors=True)
                            removed += 1
                        continue
                    part = part_of(f.name)
                    if part not in named:
                        f.unlink(missing_ok=True)
                        removed += 1
        runs = self.path / "runs"
        if runs.is_dir():
            for d in runs.iterdir() if old_layout_done else ():
                if upgrade.is_old_folder(d):
                    shutil.rmtree(d, ignore_errors=True)
                    removed += 1
            for f in runs.glob(".run*.tmp"):
                f.unlink(missing_ok=True)
                removed += 1
            for f in runs.glob(f"{HISTORY}/.runs-*.tmp"):  # a copy into the kept versions cut short
                f.unlink(missing_ok=True)
                removed += 1
        tmp = self.path / ".tmp"
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        return removed

    def temp_dir(self) -> Path:
        """A new scratch folder under ``.tmp`` (``Warehouse.temp_dir``)."""
        return self.warehouse.temp_dir()

    def drop_temp(self, d: Path) -> None:
        self.warehouse.drop_temp(d)

    @serialised
    def discard_uncommitted(self, run_id: str) -> int:
        """Remove part files the index does not name: what a writer wrote for a dump that then
        failed (``run_id``'s), so a full disk gets its space back now, not at the next writer.
        The files another thread has put in place for a run it has not committed yet stay.
        Nothing is removed when the index cannot be read. Call under the lock."""
        me = threading.get_ident()
        try:
            snap = self.run_index()
            named = {(layer, p) for layer, _, _ in LAYERS for p in snap.parts_of_runs(layer)}
        except DamagedIndex:
            return 0
        others = {
            (layer, p) for rel, t in self.placed_by.items() if t != me for layer, p in [entry_part(rel)]
        }
        removed = 0
        for layer, _, _ in LAYERS:
            for f in (self.path / layer).glob("*/part-*.parquet"):
                if (layer, part_of(f.name)) not in named | others:
                    f.unlink(missing_ok=True)
                    removed += 1
        self._forget_placed(me)
        return removed

    # --- placing a part's files -------------------------------------------------------------
    def place_file(self, src: Path, final: Path, entry: dict | None = None) -> None:
        """Move a part file written elsewhere (a temporary folder) to its place ``final`` in the
        warehouse, recording its size and hash for the commit that names it (``files``):
        ``entry``, the file's ``digest`` taken where it was written (a cluster's worker), or
        read here."""
        e = entry or digest(src)  # (a file of this thread's own, read outside the lock)
        with self.serial:
            final.parent.mkdir(parents=True, exist_ok=True)
            Path(src).replace(final)
            self._record_placed(final, e)

    def _record_placed(self, final: Path, entry: dict) -> None:
        rel = final.relative_to(self.path).as_posix()
        self.placed[rel] = entry
        self.placed_by[rel] = threading.get_ident()

    def _forget_placed(self, thread: int) -> None:
        """Forget the files ``thread`` put in place: named by the index now, or discarded."""
        for rel in [r for r, t in self.placed_by.items() if t == thread]:
            self.placed.pop(rel, None)
            del self.placed_by[rel]

    def place_part(
        self, layer: str, part: str, sources: dict[str, list[Path]], digests: dict[str, dict] | None = None
    ) -> None:
        """Move the files of a new part, written elsewhere (table -> its files, one per shard
        of a sharded part, in order), to their places in the warehouse (``place_file``): the
        jobs hand a part over, only the writer names the tables' folders. ``digests``: the
        ``digest`` of a source file (by its path) taken where it was written, so that placing a
        cluster's shards here renames files and reads none of them."""
        digests = digests or {}
        for table, srcs in sources.items():
            for src, final in zip(srcs, part_files(self.path, layer, table, part), strict=True):
                self.place_file(src, final, digests.get(str(src)))

    def record_file_in_place(self, final: Path) -> None:
        """Record the size and hash of a part file written in its place (``place_file`` for one
        written elsewhere)."""
        e = digest(final)
        with self.serial:
            self._record_placed(final, e)

    @serialised
    def unplace_file(self, final: Path) -> None:
        """Delete a file this writer placed and forget it: named by no commit, it leaves nothing."""
        final.unlink(missing_ok=True)
        rel = final.relative_to(self.path).as_posix()
        self.placed.pop(rel, None)
        self.placed_by.pop(rel, None)

    # --- the commit -----------------------------------------------------------------------------
    @serialised
    def commit_run(self, row: dict) -> None:
        """Make ``row`` the run's current state: one atomic rename of the index."""
        wh = self.warehouse
        run_id = check_run_id(row["run_id"])
        snap = wh.run_index()
        old = snap.index_row(run_id)
        new = {k: row.get(k) for k in contract("raw", "runs").schema.names}
        regroup = []
        for layer, key, id_key in LAYERS:
            same = old is not None and old.get(id_key) == new.get(id_key) and old.get(key)
            new[key] = old[key] if same else new.get(id_key)
            if old is not None and old.get(key) and old[key] != new[key] and is_group(old[key]):
                regroup.append((layer, key, old[key]))
        same_raw = old is not None and old.get("ingest_id") == new.get("ingest_id") and old.get("workload")
        new["workload"] = old["workload"] if same_raw else self.workload(new, new["raw_part"])
        new["files"] = self._files_of(old, new)
        # the records of the run's parts say its new row, placed now or not
        touched = {(layer, new[key]) for layer, key, _ in LAYERS if new.get(key)}
        t = snap.stored_table  # every column: the rows are written again
        if regroup or t is None:  # the run leaves a group (or the index is empty): every row at hand
            idx = snap.rows_by_run_id()
            before = named_parts(idx)
            for layer, key, group in regroup:
                compaction.regroup(self, idx, layer, key, group, drop={run_id})
            idx[run_id] = new
            self.write_index(idx, touched=touched)
            self.delete_parts(before - named_parts(idx))
            return
        # the common case: one row replaced or added, the other rows as they are (Arrow, no dicts)
        # (conformed: an index written before a column was added gets it, NULL)
        rest = conform(t.filter(pc.invert(pc.equal(t.column("run_id"), run_id))), index_schema(), None)
        both = pa.concat_tables([rest, pa.Table.from_pylist([new], schema=index_schema())])
        order = pc.sort_indices(
            both,
            options=pc.SortOptions(
                [("collection_start_us", "ascending", "at_start"), ("run_id", "ascending", "at_start")]
            ),
        )
        self.write_index(both.take(order), touched=touched)
        self.delete_parts(named_parts({run_id: old} if old else {}) - named_parts({run_id: new}))

    @serialised
    def drop_runs(self, run_ids: list[str]) -> dict[str, int]:
        """Remove runs: out of the index first (one commit for all of them; a group holding
        some is written again without them in the same commit, and not at all when they are
        all it holds), then the files only they used. A group file that cannot be read is not
        written again (DamagedPart, nothing changed), so the runs of a damaged group can only
        go all together. The one way a run's data is deleted on purpose. Returns the files
        removed per run (a file several of them used counts for the first)."""
        run_ids = list(dict.fromkeys(check_run_id(r) for r in run_ids))
        snap = self.run_index()
        idx = snap.rows_by_run_id()
        for run_id in run_ids:
            if run_id not in idx:
                raise UnknownRun(f"no run {run_id!r} in {self.path} (see `profetl runs`)")
        before = named_parts(idx)
        held = {
            (layer, idx[r][key]): r for r in reversed(run_ids) for layer, key, _ in LAYERS if idx[r].get(key)
        }
        for layer, key, _ in LAYERS:
            for group in dict.fromkeys(idx[r][key] for r in run_ids if is_group(idx[r].get(key))):
                compaction.regroup(self, idx, layer, key, group, drop=set(run_ids))
        for run_id in run_ids:
            del idx[run_id]
        gone = before - named_parts(idx)
        removed = dict.fromkeys(run_ids, 1)
        for layer, part in gone:
            removed[held[(layer, part)]] += sum(
                1
                for table in self._table_dirs(layer)
                for f in part_files(self.path, layer, table, part)
                if f.exists()
            )
        self.write_index(idx)
        self.delete_parts(gone)
        return removed

    @serialised
    def write_index(
        self,
        idx: dict[str, dict] | pa.Table,
        commit: bool = True,
        touched: set[tuple[str, str]] = frozenset(),
    ) -> None:
        """The commit: the new index replaces the old one in one rename (not ``commit``: the
        empty index of a new warehouse, which commits nothing and has no crash points). The
        commit records of the parts this writer placed, and of the ``touched`` parts (layer,
        part) whose runs' rows changed, are written first."""
        f = self.warehouse.index_file
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f".runs-{secrets.token_hex(4)}.tmp")
        if isinstance(idx, pa.Table):
            table = idx
        else:
            table = pa.Table.from_pylist(self._assign_files(idx), schema=index_schema())
        table = table.replace_schema_metadata({FORMAT_KEY: str(INDEX_FORMAT).encode()})
        # the commit records of the parts this writer put in place, before the commit names them
        placed = {entry_part(rel) for rel in self.placed} | set(touched)
        commit_records.write(self.path, table, placed, time.time_ns())
        # small row groups with run_id statistics: reading one run's row reads one of them
        pq.write_table(table, tmp, compression="zstd", row_group_size=INDEX_ROW_GROUP_ROWS)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        if commit:
            checkpoint("before_commit")
        os.replace(tmp, f)
        fsync_dir(f.parent)
        if commit:
            checkpoint("after_commit")
        # this thread's files are named now, or superseded (what the index does not name is
        # swept); another thread's wait for its own commit
        self._forget_placed(threading.get_ident())
        self._keep_version(f)

    def _keep_version(self, f: Path) -> None:
        """A copy of the index just committed into runs/_history/ (written to a temporary name,
        then renamed: a kept version is whole), and only the last KEEP_VERSIONS kept. After the
        commit, never before: a kept version never names files a commit did not make."""
        d = self.warehouse.history_dir
        d.mkdir(exist_ok=True)
        kept = self.warehouse.index_versions()
        last = int(kept[-1].name[len("runs-") : -len(".parquet")]) if kept else 0
        tmp = d / f".runs-{secrets.token_hex(4)}.tmp"
        shutil.copyfile(f, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, d / f"runs-{last + 1:08d}.parquet")
        for old in kept[: max(0, len(kept) + 1 - KEEP_VERSIONS)]:
            old.unlink(missing_ok=True)
        fsync_dir(d)

    def _assign_files(self, idx: dict[str, dict]) -> list[dict]:
        """The index's rows in run order, each listing (``files``) the files of the parts it is
        the first run of: entries the rows had (a part's files, recorded at its commit) and
        those of the files this writer has put in place since (``placed``)."""
        pool: dict[tuple[str, str], dict[str, dict]] = {}
        for r in idx.values():
            for e in r.get("files") or []:
                pool.setdefault(entry_part(e["file"]), {})[e["file"]] = e
        for rel, e in self.placed.items():
            pool.setdefault(entry_part(rel), {})[rel] = {"file": rel, **e}
        rows, listed = [], set()
        for r in sorted(idx.values(), key=run_order):
            mine = []
            for layer, key, _ in LAYERS:
                p = (layer, r.get(key))
                if p[1] and p not in listed and p in pool:
                    listed.add(p)
                    mine.extend(pool[p][k] for k in sorted(pool[p]))
            rows.append(dict(r, files=mine or None))
        return rows

    def _files_of(self, old: dict | None, new: dict) -> list[dict] | None:
        """``files`` of a run's new row when only it changes: the entries of its old row for the
        parts it still names, and those of the files written for its new parts (``placed``)."""
        named = {(layer, new.get(key)) for layer, key, _ in LAYERS if new.get(key)}
        out = {e["file"]: e for e in (old or {}).get("files") or [] if entry_part(e["file"]) in named}
        for rel, e in self.placed.items():
            if entry_part(rel) in named:
                out[rel] = {"file": rel, **e}
        return [out[k] for k in sorted(out)] or None

    @serialised
    def delete_parts(self, parts: set[tuple[str, str]]) -> None:
        """Delete the files of parts (layer, part) the index no longer names (readers retry
        once), and their commit records."""
        for layer, part in parts:
            for table in self._table_dirs(layer):
                for f in part_files(self.path, layer, table, part):
                    f.unlink(missing_ok=True)
            commit_records.record_file(self.path, layer, part).unlink(missing_ok=True)

    def _table_dirs(self, layer: str) -> list[str]:
        base = self.path / layer
        have = (
            {d.name for d in base.iterdir() if d.is_dir() and TABLE.match(d.name)} if base.is_dir() else set()
        )
        return sorted(have | set(layer_tables(layer)))

    def workload(self, run: dict, raw_part: str | None) -> str:
        """The run's workload key (``pipeline/workload.py``, the rule), from its rows in the
        files of ``raw_part``."""

        def distinct(table: str, column: str) -> list[str]:
            files = part_files(self.path, "raw", table, raw_part) if raw_part else []
            return distinct_values(files, column, run["run_id"])

        return workload_of(run, distinct)


def _open_lock(lock: Path, deadline: float) -> int:
    """``.lock`` opened and flocked, checked to be the file at that path once locked (a file
    deleted or replaced meanwhile is let go and the new one taken)."""
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _wait_flock(fd, deadline, lock)
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, lock):
            return fd
        os.close(fd)


def _wait_flock(fd: int, deadline: float, lock: Path) -> None:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = "unknown"
                try:
                    holder = lock.read_text(errors="replace").strip()[:64] or "unknown"
                except OSError:
                    pass
                raise WarehouseLocked(
                    f"{lock} is held by process {holder}; another writer is running"
                ) from None
            time.sleep(0.2)


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
