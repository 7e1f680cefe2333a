"""The warehouse folder: hive-partitioned Parquet, one commit record per run, one writer at a time.

Layout::

    <warehouse>/raw/<table>/run_id=<id>/part-<ingest_id>.parquet
    <warehouse>/marts/<table>/run_id=<id>/part-<build_id>.parquet
    <warehouse>/runs/run_id=<id>/run.parquet     # the commit record, replaced atomically
    <warehouse>/.lock                            # flock of the one writer (with one on the folder); holds its pid

Part files carry the id of the ingest or build that wrote them. A run's ``run.parquet``
names the current ids, so new part files can be written next to the old ones and
become visible in one ``os.replace`` of ``run.parquet``; files no commit names are
leftovers of an interrupted writer and are removed under the lock.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.warehouse.contracts import contract
from pipeline.errors import DamagedRun, UnknownRun, UsageError, WarehouseLocked
from pipeline.warehouse.faults import checkpoint

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
TABLE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def new_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)


def check_run_id(run_id: str) -> str:
    if not RUN_ID.match(run_id or ""):
        raise UsageError(f"{run_id!r} is not a valid run id")
    return run_id


@dataclass
class Warehouse:
    path: Path
    stale_lock: str | None = None  # pid left in .lock by a writer that died (set by writer())
    swept: int = 0  # leftover files removed when the lock was taken
    upgraded: int = 0  # commit records rewritten to the current layout when the lock was taken
    # run id -> why its commit record cannot be read, as the last ``runs()`` found it: such a
    # run is left out of every listing, and its files are never swept (``drop`` removes them)
    unreadable: dict = None

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.unreadable = {}

    # --- paths ---------------------------------------------------------------------
    def part(self, layer: str, table: str, run_id: str, part_id: str) -> Path:
        if not TABLE.match(table):
            raise UsageError(f"{table!r} is not a valid table name")
        check_run_id(run_id)
        return self.path / layer / table / f"run_id={run_id}" / f"part-{part_id}.parquet"

    def check(self, must_exist: bool = False) -> Warehouse:
        """Refuse a path that cannot be a warehouse: a file, or (``must_exist``, for commands
        that only work on runs already there) nothing at all."""
        if self.path.exists() and not self.path.is_dir():
            raise UsageError(f"the warehouse {self.path} is a file, not a folder; "
                             "--warehouse (-w) or $PROFETL_WAREHOUSE names the warehouse folder")
        if must_exist and not self.path.exists():
            raise UsageError(f"no warehouse at {self.path}: `profetl run DUMP... --warehouse {self.path}` makes one; "
                             "--warehouse (-w) or $PROFETL_WAREHOUSE names another")
        return self

    def run_file(self, run_id: str) -> Path:
        return self.path / "runs" / f"run_id={check_run_id(run_id)}" / "run.parquet"

    # --- runs ----------------------------------------------------------------------
    def runs(self) -> list[dict]:
        """Committed runs, oldest collection first. A commit record that cannot be read
        (truncated, garbage, no permission) is not a run here, but it is not nothing either:
        it is kept in ``unreadable`` with the reason, for the commands to report."""
        rows = []
        self.unreadable = {}
        base = self.path / "runs"
        if not base.is_dir():
            return rows
        for f in sorted(base.glob("run_id=*/run.parquet")):
            run_id = f.parent.name.split("=", 1)[1]
            try:
                rows.append(_read_record(f, run_id))
            except DamagedRun as e:
                self.unreadable[run_id] = str(e)
        rows.sort(key=lambda r: (r.get("collection_start_us") or 0, r["run_id"]))
        return rows

    def run(self, run_id: str) -> dict | None:
        """The run's commit record; None when it has none; DamagedRun when it cannot be read."""
        f = self.run_file(run_id)
        if not f.exists():
            return None
        return _read_record(f, run_id)

    def drop(self, run_id: str) -> int:
        """Remove a run: its commit record first (the run is gone at once), then every part
        file and temporary file of it. The one way a run's data is deleted on purpose, readable
        record or not. Call under the lock. Returns the files removed."""
        record = self.run_file(run_id)
        files = [p for layer in ("raw", "marts") for p in (self.path / layer).glob(f"*/run_id={run_id}/*")]
        if not record.exists() and not files:
            raise UnknownRun(f"no run {run_id!r} in {self.path} (see `profetl runs`)")
        removed = 0
        if record.exists():
            record.unlink()
            _fsync_dir(record.parent)
            removed += 1
        for p in files + list(record.parent.glob(".run-*.tmp")):
            p.unlink(missing_ok=True)
            removed += 1
        for d in [record.parent] + [p.parent for p in files]:
            try:
                d.rmdir()
            except OSError:
                pass
        self.unreadable.pop(run_id, None)
        return removed

    def resolve(self, run_ref: str | None) -> dict:
        """A committed run by id, unique id prefix, or ``latest`` (the run collected last: ``latest()``)."""
        runs = self.runs()
        if not runs:
            self.check(must_exist=True)
            raise UnknownRun(f"the warehouse {self.path} has no runs yet")
        if run_ref in (None, "latest"):
            return latest(runs)
        exact = [r for r in runs if r["run_id"] == run_ref]
        if exact:
            return exact[0]
        prefix = [r for r in runs if r["run_id"].startswith(run_ref)]
        if len(prefix) == 1:
            return prefix[0]
        if prefix:
            raise UnknownRun(f"run id {run_ref!r} is ambiguous: {', '.join(r['run_id'] for r in prefix[:5])}")
        raise UnknownRun(f"no run {run_ref!r} in {self.path} (see `profetl runs`)")

    def current_files(self, layer: str, table: str, runs: list[dict] | None = None) -> list[Path]:
        key = "ingest_id" if layer == "raw" else "build_id"
        out = []
        for r in self.runs() if runs is None else runs:
            if r.get(key):
                f = self.part(layer, table, r["run_id"], r[key])
                if f.exists():
                    out.append(f)
        return out

    def commit(self, row: dict) -> None:
        """Make ``row`` the run's current state: one atomic rename."""
        f = self.run_file(row["run_id"])
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f".run-{secrets.token_hex(4)}.tmp")
        table = pa.Table.from_pylist([row], schema=contract("raw", "runs").schema).drop_columns(["run_id"])
        # run_id is the folder's partition key, not a column; the file's metadata names it too,
        # so that a record copied into another run's folder is found out (see _read_record)
        pq.write_table(_owned_by(table, row["run_id"]), tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        checkpoint("before_commit")
        os.replace(tmp, f)
        _fsync_dir(f.parent)
        checkpoint("after_commit")
        self._drop_superseded(row["run_id"], {row.get("ingest_id"), row.get("build_id")})

    def _drop_superseded(self, run_id: str, current: set) -> None:
        """Part files of the run that its new commit no longer names (readers retry once)."""
        for layer in ("raw", "marts"):
            for f in (self.path / layer).glob(f"*/run_id={run_id}/part-*.parquet"):
                if f.name[len("part-"):-len(".parquet")] not in current:
                    f.unlink(missing_ok=True)

    def discard_uncommitted(self, run_id: str) -> int:
        """Remove the run's part files its commit record does not name: what a writer wrote for
        a dump that then failed, so a full disk gets its space back now, not at the next writer.
        Nothing is removed for a run whose record cannot be read. Call under the lock."""
        try:
            row = self.run(run_id)
        except DamagedRun:
            return 0
        current = {row.get("ingest_id"), row.get("build_id")} if row else set()
        removed = 0
        for layer in ("raw", "marts"):
            for f in (self.path / layer).glob(f"*/run_id={run_id}/part-*.parquet"):
                if f.name[len("part-"):-len(".parquet")] not in current:
                    f.unlink(missing_ok=True)
                    removed += 1
        return removed

    def sweep(self) -> int:
        """Remove part files and temp files that no commit names. Call under the lock."""
        current = {}
        for r in self.runs():
            current[r["run_id"]] = {r.get("ingest_id"), r.get("build_id")}
        removed = 0
        for layer in ("raw", "marts"):
            for f in (self.path / layer).glob("*/run_id=*/*"):
                run_id = f.parent.name.split("=", 1)[1]
                if run_id in self.unreadable:
                    continue  # which files its record names is unknown: keep them all
                part_id = f.name[len("part-"):-len(".parquet")] if f.name.startswith("part-") else None
                if part_id not in current.get(run_id, set()):
                    f.unlink(missing_ok=True)
                    removed += 1
        for f in (self.path / "runs").glob("run_id=*/.run-*.tmp"):
            f.unlink(missing_ok=True)
            removed += 1
        tmp = self.path / ".tmp"
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        return removed

    def upgrade_run_records(self) -> int:
        """Rewrite commit records written before run_id left them (it is the folder's partition
        key: a column of the same name made ``pandas.read_parquet("<warehouse>/runs")`` fail).
        Each is replaced atomically; returns how many. Call under the lock."""
        upgraded = 0
        for f in sorted((self.path / "runs").glob("run_id=*/run.parquet")):
            try:
                if "run_id" not in pq.read_schema(f).names:
                    continue
                old = pq.read_table(f)
                table = _owned_by(old.drop_columns(["run_id"]), old.column("run_id")[0].as_py())
            except (OSError, pa.ArrowInvalid):
                continue
            tmp = f.with_name(f".run-{secrets.token_hex(4)}.tmp")
            pq.write_table(table, tmp)
            os.replace(tmp, f)
            upgraded += 1
        return upgraded

    def temp_dir(self) -> Path:
        """A new scratch folder under ``.tmp``; ``drop_temp`` removes it when the work is done."""
        d = self.path / ".tmp" / secrets.token_hex(4)
        d.mkdir(parents=True, exist_ok=True)
        return d

    def drop_temp(self, d: Path) -> None:
        """Remove a ``temp_dir()`` and, when it was the last, ``.tmp`` itself: a command leaves
        no empty folders behind (a writer that died leaves its own, swept by the next one)."""
        shutil.rmtree(d, ignore_errors=True)
        try:
            d.parent.rmdir()
        except OSError:  # another scratch folder is still in it, or it is gone
            pass

    # --- the writer lock -----------------------------------------------------------------
    @contextmanager
    def writer(self, wait_seconds: float = 0.0):
        """Hold the warehouse's writer lock for the duration of the block.

        The lock is an ``flock`` on the warehouse folder and one on ``.lock``: the kernel
        releases them when their process dies, even under ``kill -9``, so a dead writer never
        blocks the next one; deleting ``.lock`` under a live writer lets no second one in. The file
        holds the writer's pid while it works and is emptied on a clean exit, so a
        non-empty, unlocked file means the previous writer died: that is reported in
        ``stale_lock`` and its leftovers are swept before this writer starts.
        """
        self.check()
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
            self._wait_flock(dir_fd, deadline, lock)
            fd = self._open_lock(lock, deadline)
            previous = os.pread(fd, 64, 0).decode(errors="replace").strip()
            self.stale_lock = previous or None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            self.swept = self.sweep()
            self.upgraded = self.upgrade_run_records()
            locked = True
            yield self
        finally:
            if locked and _same_file(fd, lock):  # an orderly end, error or not: the next writer need not warn
                os.ftruncate(fd, 0)
            if fd >= 0:
                os.close(fd)  # closing the descriptors releases the flocks
            os.close(dir_fd)

    def _open_lock(self, lock: Path, deadline: float) -> int:
        """``.lock`` opened and flocked, checked to be the file at that path once locked (a file
        deleted or replaced meanwhile is let go and the new one taken)."""
        while True:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                self._wait_flock(fd, deadline, lock)
            except BaseException:
                os.close(fd)
                raise
            if _same_file(fd, lock):
                return fd
            os.close(fd)

    @staticmethod
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
                        f"{lock} is held by process {holder}; another writer is running") from None
                time.sleep(0.2)


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


_OWNER_KEY = b"profetl.run_id"


def _owned_by(table: pa.Table, run_id: str) -> pa.Table:
    """``table`` with the run it is the commit record of in its schema metadata."""
    return table.replace_schema_metadata({**(table.schema.metadata or {}), _OWNER_KEY: run_id.encode()})


def _read_record(f: Path, run_id: str) -> dict:
    """One commit record (``runs/run_id=<id>/run.parquet``), run_id (from the folder, or the
    column of a record written before it was dropped) first; DamagedRun saying why it cannot be
    read, or that it is another run's (its metadata, or its old run_id column, names another)."""
    try:
        table = pq.read_table(f)
        rows = table.to_pylist()
    except (OSError, pa.ArrowException) as e:
        reason = getattr(e, "strerror", None) or (str(e).splitlines() or [type(e).__name__])[0]
        raise DamagedRun(run_id, f, reason) from None
    owner = (table.schema.metadata or {}).get(_OWNER_KEY, run_id.encode()).decode(errors="replace")
    if owner != run_id:
        raise DamagedRun(run_id, f, f"it is the commit record of run {owner}")
    if len(rows) != 1 or rows[0].get("run_id", run_id) != run_id:
        raise DamagedRun(run_id, f, f"it holds {len(rows)} row(s), not the one row of run {run_id}")
    return {"run_id": run_id} | {k: v for k, v in rows[0].items() if k != "run_id"}


def latest(runs: list[dict]) -> dict:
    """The run collected last (the greatest collection start), so that back-filling older
    dumps does not change what ``latest`` names; among runs without a collection time, or
    collected at the same time, the one ingested last. A run with a collection time comes
    before any without."""
    return max(runs, key=lambda r: (r.get("collection_start_us") is not None, r.get("collection_start_us") or 0,
                                    r["ingested_at"]))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
