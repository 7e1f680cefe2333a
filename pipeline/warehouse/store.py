"""The warehouse folder: Parquet part files, one run index, one writer at a time.

``Warehouse`` is the entry: it opens a warehouse folder and hands out a snapshot of its run
index (``run_index()``: ``index.RunIndex``, read once, pure methods) and its writer
(``writer()``: ``writer.Writer``, with the lock held). The layout below is what they share.

Layout::

    <warehouse>/runs/runs.parquet                 # the run index: every run's commit record and
                                                  #   each committed part file's size and hash
    <warehouse>/runs/_history/runs-<n>.parquet    # the last KEEP_VERSIONS versions of the index
    <warehouse>/raw/<table>/part-<id>.parquet     # rows of one run (id: its ingest id) or of a
    <warehouse>/marts/<table>/part-<id>.parquet   #   group of compacted runs (id: c<group id>)
    <warehouse>/<layer>/<table>/part-<id>_<n>.<k>.parquet  # shard k of n: a run written in units,
                                                  #   on a cluster or by --read-threads
                                                  #   (docs/architecture.md#cluster)
    <warehouse>/<layer>/_commits/part-<id>.parquet  # the commit record of part <id>: the rows
                                                  #   of its runs, its files' sizes and hashes
                                                  #   (pipeline/warehouse/commit_records.py)
    <warehouse>/.lock                             # flock of the one writer (with one on the folder); holds its pid

Every part file has a ``run_id`` column. The index names, for each run, the part of each
layer that holds its rows (``raw_part``, ``mart_part``; a sharded part is its ``n`` files,
``files``); a group part holds exactly the rows
of the runs the index maps to it. A writer writes new part files next to the old ones; they
become visible in one ``os.replace`` of the index (``Writer.write_index``), and files the
index no longer names are deleted after it (or, after a crash, by the next writer under the lock).

Runs whose files are small are compacted: once enough of them sit in their own files, all
but the newest move into a group file per table (``pipeline/warehouse/compaction.py``).
Replacing a run that is in a group writes the group again without it. The path scheme (layers,
part names, run ids) is ``layout.py``; reading a part's rows of some runs is ``part_rows.py``.

A warehouse written by profetl 0.2 (a commit record per run, no index) is not read as it is:
``run_index()`` (every reader's way in) stops with WarehouseNeedsUpgrade, naming the command
that upgrades it; a writer migrates it under the lock (``upgrade.migrate``, in
``pipeline/warehouse/upgrade.py``, the only code that knows that layout).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import INDEX_HISTORY, DamagedIndex, MissingIndex, UsageError
from pipeline.warehouse import commit_records, upgrade
from pipeline.warehouse.index import RunIndex, read_placing_rows, read_recorded_sizes
from pipeline.warehouse.layout import LAYERS, check_folder, part_of
from pipeline.warehouse.part_rows import reason
from pipeline.warehouse.writer import Writer

# how often ``temp_dir`` makes ``.tmp`` again when a drop of another scratch folder removed it
TEMP_TRIES = 20


@dataclass
class Warehouse:
    """A warehouse folder: where its files are, one snapshot of its run index at a time
    (``run_index``), its scratch folders, and its writer (``writer``)."""

    path: Path
    _snapshot: tuple | None = field(default=None, repr=False)  # (the index file's identity, its RunIndex)
    _writer: object = field(default=None, repr=False)  # the Writer while this process holds the lock

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    def check(self, must_exist: bool = False) -> Warehouse:
        """Refuse a path that cannot be a warehouse: a file, or (``must_exist``, for commands
        that only work on runs already there) nothing at all."""
        check_folder(self.path, must_exist)
        return self

    # --- the index file and its kept versions ---------------------------------------------------
    @property
    def index_file(self) -> Path:
        return self.path / "runs" / "runs.parquet"

    @property
    def history_dir(self) -> Path:
        return self.path / "runs" / INDEX_HISTORY

    def index_versions(self) -> list[Path]:
        """The kept versions of the index (``runs/_history/runs-<n>.parquet``), oldest first; the
        last is the index as the last commit wrote it."""
        d = self.history_dir
        if not d.is_dir():
            return []
        found = []
        for f in d.iterdir():
            m = re.fullmatch(r"runs-(\d{1,12})\.parquet", f.name)
            if m:
                found.append((int(m.group(1)), f))
        return [f for _, f in sorted(found)]

    def refuse_missing_index(self) -> None:
        """Called when there is no index: fine for an empty new warehouse; WarehouseNeedsUpgrade
        for profetl 0.2's layout (``upgrade.refuse``); MissingIndex when part files (or kept
        versions of the index) are there, since which of them were committed is then unknown
        and a sweep would delete them all."""
        upgrade.refuse(self)
        parts = len(self.flat_part_files())
        versions = len(self.index_versions())
        if parts or versions:
            raise MissingIndex(self.index_file, parts, versions)

    def flat_part_files(self) -> list[Path]:
        """Every ``part-*.parquet`` file of the layers' table folders."""
        out = []
        for layer, _, _ in LAYERS:
            base = self.path / layer
            if base.is_dir():
                for d in base.iterdir():
                    if d.is_dir() and d.name != commit_records.RECORDS:
                        out.extend(f for f in d.iterdir() if part_of(f.name) is not None and f.is_file())
        return out

    # --- reading: one snapshot of the index ------------------------------------------------------
    def run_index(self) -> RunIndex:
        """The run index as it is now, read once into a ``RunIndex`` (read again only when the
        file changed since the last call); without an index, none (a new warehouse);
        WarehouseNeedsUpgrade for a warehouse of profetl 0.2 not upgraded yet; MissingIndex when
        part files are there without one; DamagedIndex when it cannot be read."""
        f = self.index_file
        try:
            fd = os.open(f, os.O_RDONLY)
        except (FileNotFoundError, NotADirectoryError):
            self.refuse_missing_index()
            self._snapshot = None
            return RunIndex(self.path, f)
        except OSError as e:
            raise DamagedIndex(f, reason(e)) from None
        try:
            st = os.fstat(fd)
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            if self._snapshot is not None and self._snapshot[0] == key:
                return self._snapshot[1]
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read()
        except OSError as e:
            raise DamagedIndex(f, reason(e)) from None
        finally:
            os.close(fd)
        snap = RunIndex.from_bytes(self.path, f, data)
        self._snapshot = (key, snap)
        return snap

    def forget_run_index(self) -> None:
        """Read the index again at the next ``run_index()``, whatever its file's identity."""
        self._snapshot = None

    def placing_rows(self, con, run_ids: list[str] | None = None) -> list[dict] | None:
        """``index.read_placing_rows`` of this warehouse's index by the DuckDB connection
        ``con``; None without an index (an empty warehouse)."""
        if not self.index_file.exists():
            self.refuse_missing_index()
            return None
        return read_placing_rows(con, self.index_file, run_ids)

    def recorded_sizes(self, con) -> dict[str, int]:
        """``index.read_recorded_sizes`` of this warehouse's index by the DuckDB connection ``con``."""
        return read_recorded_sizes(con, self.index_file)

    # --- scratch folders (a cluster's workers make theirs without the lock) ----------------------
    def temp_dir(self) -> Path:
        """A new scratch folder under ``.tmp``; ``drop_temp`` removes it when the work is done.
        Safe beside other threads and processes making and dropping theirs: a ``.tmp`` removed
        by the drop of the last other folder between its making and this folder's is made again."""
        d = self.path / ".tmp" / secrets.token_hex(4)
        for _ in range(TEMP_TRIES - 1):
            try:
                d.mkdir(parents=True, exist_ok=True)
                return d
            except FileNotFoundError:  # .tmp made, then removed by a drop_temp before d was made
                continue
        d.mkdir(parents=True, exist_ok=True)  # the last try: its error, if any, is the reason
        return d

    def is_temp(self, d: Path) -> bool:
        """Whether ``d`` is a ``temp_dir()`` of this warehouse."""
        return Path(d).parent == self.path / ".tmp"

    def drop_temp_named(self, name: str) -> None:
        """``drop_temp`` of this warehouse's scratch folder ``name`` (a worker process's, known
        by its name: the folder it made is this process's folder of that name)."""
        self.drop_temp(self.path / ".tmp" / Path(name).name)

    def drop_temp(self, d: Path) -> None:
        """Remove a ``temp_dir()`` and, when it was the last, ``.tmp`` itself: a command leaves
        no empty folders behind (a writer that died leaves its own, swept by the next one)."""
        shutil.rmtree(d, ignore_errors=True)
        try:
            d.parent.rmdir()
        except OSError:  # another scratch folder is still in it, or it is gone
            pass

    # --- writing --------------------------------------------------------------------------------
    @contextmanager
    def writer(self, wait_seconds: float = 0.0, prepare: bool = True):
        """Take the writer lock for the block and yield its ``Writer`` (``writer.Writer.locked``);
        ``held_writer()`` gives it to the jobs meanwhile."""
        with Writer(self).locked(wait_seconds, prepare) as w:
            outer, self._writer = self._writer, w
            try:
                yield w
            finally:
                self._writer = outer

    def held_writer(self) -> Writer:
        """The ``Writer`` of this warehouse while this process holds its lock (inside
        ``writer()``); UsageError outside, where nothing may be written."""
        if self._writer is None:
            raise UsageError(
                f"writing to the warehouse {self.path} needs its writer lock (Warehouse.writer())"
            )
        return self._writer
