"""The warehouse folder: hive-partitioned Parquet, one commit record per run, one writer at a time.

Layout::

    <warehouse>/raw/<table>/run_id=<id>/part-<ingest_id>.parquet
    <warehouse>/marts/<table>/run_id=<id>/part-<build_id>.parquet
    <warehouse>/runs/run_id=<id>/run.parquet     # the commit record, replaced atomically
    <warehouse>/.lock                            # flock of the one writer; holds its pid

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
from pipeline.errors import UnknownRun, UsageError, WarehouseLocked
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

    def __post_init__(self) -> None:
        self.path = Path(self.path)

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
        """Committed runs, oldest collection first."""
        rows = []
        base = self.path / "runs"
        if not base.is_dir():
            return rows
        for f in sorted(base.glob("run_id=*/run.parquet")):
            try:
                rows.extend(pq.read_table(f).to_pylist())
            except (OSError, pa.ArrowInvalid):
                continue  # a torn file cannot exist (atomic replace); skip anything foreign
        rows.sort(key=lambda r: (r.get("collection_start_us") or 0, r["run_id"]))
        return rows

    def run(self, run_id: str) -> dict | None:
        f = self.run_file(run_id)
        if not f.exists():
            return None
        return pq.read_table(f).to_pylist()[0]

    def resolve(self, run_ref: str | None) -> dict:
        """A committed run by id, unique id prefix, or ``latest``."""
        runs = self.runs()
        if not runs:
            self.check(must_exist=True)
            raise UnknownRun(f"the warehouse {self.path} has no runs yet")
        if run_ref in (None, "latest"):
            return max(runs, key=lambda r: r["ingested_at"])
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
        table = pa.Table.from_pylist([row], schema=contract("raw", "runs").schema)
        pq.write_table(table, tmp)
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

    def sweep(self) -> int:
        """Remove part files and temp files that no commit names. Call under the lock."""
        current = {}
        for r in self.runs():
            current[r["run_id"]] = {r.get("ingest_id"), r.get("build_id")}
        removed = 0
        for layer in ("raw", "marts"):
            for f in (self.path / layer).glob("*/run_id=*/*"):
                run_id = f.parent.name.split("=", 1)[1]
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

        The lock is an ``flock`` on ``.lock``: the kernel releases it when its process
        dies, even under ``kill -9``, so a dead writer never blocks the next one. The file
        holds the writer's pid while it works and is emptied on a clean exit, so a
        non-empty, unlocked file means the previous writer died: that is reported in
        ``stale_lock`` and its leftovers are swept before this writer starts.
        """
        self.check()
        self.path.mkdir(parents=True, exist_ok=True)
        lock = self.path / ".lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait_seconds
        locked = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                        raise WarehouseLocked(
                            f"{lock} is held by process {holder}; another writer is running") from None
                    time.sleep(0.2)
            previous = os.pread(fd, 64, 0).decode(errors="replace").strip()
            self.stale_lock = previous or None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            self.swept = self.sweep()
            locked = True
            yield self
        finally:
            if locked:  # an orderly end, error or not: the next writer need not warn
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the descriptor releases the flock


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
