"""The warehouse folder: Parquet part files, one run index, one writer at a time.

Layout::

    <warehouse>/runs/runs.parquet                 # the run index: every run's commit record and
                                                  #   each committed part file's size and hash
    <warehouse>/runs/_history/runs-<n>.parquet    # the last KEEP_VERSIONS versions of the index
    <warehouse>/raw/<table>/part-<id>.parquet     # rows of one run (id: its ingest id) or of a
    <warehouse>/marts/<table>/part-<id>.parquet   #   group of compacted runs (id: c<group id>)
    <warehouse>/<layer>/<table>/part-<id>_<n>.<k>.parquet  # shard k of n: a run written by a
                                                  #   cluster's units (docs/architecture.md#cluster)
    <warehouse>/<layer>/_commits/part-<id>.parquet  # the commit record of part <id>: the rows
                                                  #   of its runs, its files' sizes and hashes
                                                  #   (pipeline/warehouse/commit_records.py)
    <warehouse>/.lock                             # flock of the one writer (with one on the folder); holds its pid

Every part file has a ``run_id`` column. The index names, for each run, the part of each
layer that holds its rows (``raw_part``, ``mart_part``; a sharded part is its ``n`` files,
``files``); a group part holds exactly the rows
of the runs the index maps to it. A writer writes new part files next to the old ones; they
become visible in one ``os.replace`` of the index, and files the index no longer names are
deleted after it (or, after a crash, by the next writer under the lock).

Runs whose files are small are compacted: once enough of them sit in their own files, all
but the newest move into a group file per table (``pipeline/warehouse/compaction.py``).
Replacing a run that is in a group writes the group again without it. The path scheme (layers,
part names, run ids) is ``layout.py``; reading a part's rows of some runs is ``part_rows.py``.

A warehouse written by profetl 0.2 (``runs/run_id=<id>/run.parquet`` and
``<layer>/<table>/run_id=<id>/part-<id>.parquet``, no index) is read as it is and migrated to
this layout by the first writer that takes the lock (``upgrade.migrate``, the only code that
knows that layout: ``pipeline/warehouse/upgrade.py``).
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import (
    INDEX_HISTORY,
    DamagedIndex,
    DamagedPart,
    DamagedRun,
    MissingIndex,
    UnknownRun,
    UsageError,
    WarehouseLocked,
)
from pipeline.lazy import lazy
from pipeline.warehouse import commit_records, compaction, upgrade
from pipeline.warehouse.contracts import contract
from pipeline.warehouse.faults import checkpoint
from pipeline.warehouse.layout import (
    LAYERS,
    TABLE,
    check_run_id,
    entry_part,
    fsync_dir,
    is_group,
    is_legacy,
    layer_tables,
    named_parts,
    part_of,
    rmdir_if_empty,
    run_order,
    shard_count,
)
from pipeline.warehouse.part_rows import conform, reason

# Arrow is loaded where the index or a part file is first read or written: a reader that
# only names paths (``query``, whose DuckDB reads the index) never loads it
pa = lazy("pyarrow")
pc = lazy("pyarrow.compute")
pq = lazy("pyarrow.parquet")


# Columns the index keeps beside the commit record: the part of each layer that holds the
# run's rows, and the run's workload key (documented with the runs view in pipeline/warehouse/views.py).
INDEX_EXTRA = ("raw_part", "mart_part", "workload")  # text columns

# The index's format, in its Parquet key-value metadata (``FORMAT_KEY``): 2 since it records
# each committed part file's size and hash (``files``); an index without the key was written by
# an older profetl (format 1) and is read as it is. An index of a newer format is refused.
INDEX_FORMAT = 2
FORMAT_KEY = b"profetl.index_format"
# Columns an index of every format has, and the kind of each: a Parquet file without them (a
# part file copied over the index) is not a run index.
INDEX_REQUIRED = {
    "run_id": "text",
    "ingest_id": "text",
    "build_id": "text",
    "raw_part": "text",
    "mart_part": "text",
    "collection_start_us": "int",
    "ingested_at": "time",
}
# Each run's row lists (``files``, ``files_type()``) the files of the parts it is the first run
# of, in run order: a path relative to the warehouse, its size and SHA-256, recorded when the
# file was written, before its commit. A part's files are thus listed once, whatever the
# number of runs it holds; a part committed by an older profetl has none listed.
# The last KEEP_VERSIONS versions of the index are kept in runs/_history/ (``index_versions``),
# written after each commit and pruned then: a deleted or overwritten index can be restored.
# (The leading "_" keeps them out of a reading of the runs folder by pandas, Spark or Hive.)
KEEP_VERSIONS = 5
HISTORY = INDEX_HISTORY

# Columns of the index that place runs: what readers other than `runs` read of it.
LIGHT = [
    "run_id",
    "ingest_id",
    "build_id",
    "collection_start_us",
    "ingested_at",
    "raw_part",
    "mart_part",
    "workload",
]
INDEX_ROW_GROUP_ROWS = 256
# The columns that place a run's rows and say which profetl wrote it: what a reader without the
# ``runs`` view reads of the index (``Warehouse.placing``).
PLACING = ("run_id", "raw_part", "mart_part", "profetl_version")


def files_type() -> pa.DataType:
    """The type of the index's ``files`` column: the files of a run's parts with their sizes and hashes."""
    return pa.list_(pa.struct([("file", pa.string()), ("size", pa.int64()), ("sha256", pa.string())]))


def index_schema() -> pa.Schema:
    s = contract("raw", "runs").schema
    for name in INDEX_EXTRA:
        s = s.append(pa.field(name, pa.string()))
    return s.append(pa.field("files", files_type()))


def digest(path: Path) -> dict:
    """A part file's entry for the index: its path (as given), size and SHA-256, read once."""
    import hashlib

    with open(path, "rb") as fh:
        h = hashlib.file_digest(fh, "sha256")
        size = os.fstat(fh.fileno()).st_size
    return {"size": size, "sha256": h.hexdigest()}


def recorded_sizes(index: pa.Table) -> dict[str, int]:
    """The size a version of the index (an Arrow table of it) recorded for each part file it
    lists, by path relative to the warehouse."""
    if "files" not in index.column_names:
        return {}
    entries = pc.list_flatten(index.column("files"))
    if not len(entries):
        return {}
    return dict(
        zip(pc.struct_field(entries, "file").to_pylist(), pc.struct_field(entries, "size").to_pylist())
    )


@dataclass
class Warehouse:
    path: Path
    stale_lock: str | None = None  # pid left in .lock by a writer that died (set by writer())
    swept: int = 0  # leftover files removed when the lock was taken
    migrated: int = 0  # runs moved from profetl 0.2's layout when the lock was taken
    # run id -> why its commit record cannot be read (profetl 0.2's layout, as the last listing
    # found it): such a run is left out of every listing, its files are never swept, and the
    # layout is not migrated while one is there (``drop`` removes it)
    unreadable: dict = None
    _cache: tuple | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.unreadable = {}
        self._damaged: dict[str, DamagedRun] = {}
        self.damaged_parts: list[DamagedPart] = []  # what the last ``compact`` left alone, and why
        # part files this writer put in place and has not committed yet: path relative to the
        # warehouse -> its ``files`` entry (size, SHA-256), for the commit that names them
        self._written: dict[str, dict] = {}

    # --- paths ---------------------------------------------------------------------
    def part(self, layer: str, table: str, run_id: str, part_id: str) -> Path:
        """The file a run's own part ``part_id`` (its ingest or build id) has for ``table``."""
        check_run_id(run_id)
        return self.file(layer, table, part_id)

    def files(self, layer: str, table: str, part: str) -> list[Path]:
        """The files of ``part`` for ``table``: one, or a sharded part's shards in order."""
        n = shard_count(part)
        if not n:
            return [self.file(layer, table, part)]
        if not TABLE.match(table):
            raise UsageError(f"{table!r} is not a valid table name")
        return [self.path / layer / table / f"part-{part}.{k}.parquet" for k in range(n)]

    def file(self, layer: str, table: str, part: str) -> Path:
        if not TABLE.match(table):
            raise UsageError(f"{table!r} is not a valid table name")
        if is_legacy(part):
            d, name = part.split("/", 1)
            return self.path / layer / table / d / f"{name}.parquet"
        check_run_id(part)
        return self.path / layer / table / f"part-{part}.parquet"

    def check(self, must_exist: bool = False) -> Warehouse:
        """Refuse a path that cannot be a warehouse: a file, or (``must_exist``, for commands
        that only work on runs already there) nothing at all."""
        if self.path.exists() and not self.path.is_dir():
            raise UsageError(
                f"the warehouse {self.path} is a file, not a folder; "
                "--warehouse (-w) or $PROFETL_WAREHOUSE names the warehouse folder"
            )
        if must_exist and not self.path.exists():
            raise UsageError(
                f"no warehouse at {self.path}: `profetl run DUMP... --warehouse {self.path}` makes one; "
                "--warehouse (-w) or $PROFETL_WAREHOUSE names another"
            )
        return self

    @property
    def index_file(self) -> Path:
        return self.path / "runs" / "runs.parquet"

    def legacy(self) -> bool:
        """profetl 0.2's layout: commit records per run and no index yet."""
        if self.index_file.exists():
            return False
        base = self.path / "runs"
        return base.is_dir() and any(base.glob("run_id=*/run.parquet"))

    def _no_index(self) -> None:
        """Called when there is no index: fine for an empty new warehouse and for profetl 0.2's
        layout; MissingIndex when part files (or kept versions of the index) are there, since
        which of them were committed is then unknown and a sweep would delete them all."""
        if self.legacy():
            return
        parts = len(self._flat_part_files())
        versions = len(self.index_versions())
        if parts or versions:
            raise MissingIndex(self.index_file, parts, versions)

    def _flat_part_files(self) -> list[Path]:
        """Every ``part-*.parquet`` file of the layers' table folders (not profetl 0.2's run folders)."""
        out = []
        for layer, _, _ in LAYERS:
            base = self.path / layer
            if base.is_dir():
                for d in base.iterdir():
                    if d.is_dir() and d.name != commit_records.RECORDS:
                        out.extend(f for f in d.iterdir() if part_of(f.name) is not None and f.is_file())
        return out

    # --- the kept versions of the index (for `profetl check`) ------------------------------
    @property
    def history_dir(self) -> Path:
        return self.path / "runs" / HISTORY

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

    @staticmethod
    def read_index_version(path: Path) -> pa.Table:
        """A version of the index (the index itself, or a kept one), checked as the index is
        (DamagedIndex naming it when it cannot be read or is not a run index), with the
        current schema's columns."""
        return conform(_read_index(Path(path), None), index_schema(), None)

    @staticmethod
    def version_files(version: pa.Table) -> list[dict]:
        """The part files a version of the index names with the size and SHA-256 it recorded
        for them: ``{"file", "size", "sha256"}``, ``file`` relative to the warehouse. Parts
        committed by a profetl that recorded none are not listed."""
        col = version.column("files") if "files" in version.column_names else None
        if col is None:
            return []
        return [e for v in col.to_pylist() if v for e in v]

    def recorded_files(self) -> list[dict]:
        """``version_files`` of the current index (none without one)."""
        t = self._table()
        return [] if t is None else self.version_files(t)

    # --- the index -----------------------------------------------------------------
    def _table(self, full: bool = True) -> pa.Table | None:
        """The index as an Arrow table (None without one), read again only when it changed;
        not ``full``: only the columns that place runs (``LIGHT``), which is all most readers
        need and a fraction of the bytes. Readers work on columns: making a dict of every run
        costs more than the rest of a command once there are thousands."""
        try:
            st = self.index_file.stat()
        except (FileNotFoundError, NotADirectoryError):
            self._no_index()
            return None
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, {}, None)
        tables = self._cache[1]
        want = "full" if full else "light"
        if want not in tables:
            if "full" in tables:
                tables[want] = tables["full"].select(LIGHT)
            else:
                tables[want] = _read_index(self.index_file, None if full else LIGHT)
        return tables[want]

    def snapshot(self) -> pa.Table | None:
        """The whole index as read once (None without one): what a reader lists runs and part
        files from, whatever a writer commits meanwhile."""
        t = self._table()
        return None if t is None else conform(t, index_schema(), None)

    def placing(self, con, run_ids: list[str] | None = None) -> list[dict] | None:
        """The index's ``PLACING`` columns, in index order, read once by the DuckDB connection
        ``con``: neither Arrow nor the commit records' bulk (their control-file text) is read.
        With ``run_ids``, the rows of those runs; without, of every run that comes first in its
        raw or mart part (a group part holds many runs; what a reader needs to list each part
        once). None without an index (an empty warehouse, or profetl 0.2's layout);
        DamagedIndex when it cannot be read. DuckDB opens the file by its name more than once:
        a commit replacing the index meanwhile is for the caller to notice (``views``)."""
        import duckdb

        f = self.index_file
        if not f.exists():
            self._no_index()
            return None
        path = "'" + str(f).replace("'", "''") + "'"
        try:  # the footer: a run index of a format this profetl reads
            meta = dict(
                con.execute(
                    f"SELECT key::VARCHAR, value::VARCHAR FROM parquet_kv_metadata({path})"
                ).fetchall()
            )
            cols = con.execute(f"DESCRIBE SELECT * FROM read_parquet({path})").fetchall()
        except duckdb.Error as e:
            raise DamagedIndex(f, (str(e).splitlines() or [type(e).__name__])[0]) from None
        _check_index(
            f,
            meta.get(FORMAT_KEY.decode()),
            {c[0]: _duckdb_kind(c[1]) for c in cols},
            commit_records.COMMITTED_KEY.decode() in meta,
        )
        # UNION BY NAME: an index without one of the other columns reads it as NULL (as
        # ``snapshot`` conforms it)
        others = ", ".join(f"NULL::VARCHAR AS {c}" for c in PLACING[1:])
        rows = (
            f"SELECT * FROM read_parquet({path}, file_row_number = true) "
            f"UNION ALL BY NAME SELECT {others}, NULL::BIGINT AS file_row_number WHERE false"
        )
        cols = ", ".join(PLACING)
        if run_ids is not None:
            where, params = "run_id IN (SELECT unnest($ids))", {"ids": list(run_ids)}
        else:
            where, params = (
                (
                    "n IN (SELECT min(n) FROM i GROUP BY raw_part) "
                    "OR n IN (SELECT min(n) FROM i GROUP BY mart_part)"
                ),
                None,
            )
        sql = (
            f"WITH i AS (SELECT {cols}, file_row_number AS n FROM ({rows})) "
            f"SELECT {cols} FROM i WHERE {where} ORDER BY n"
        )
        try:
            found = con.execute(sql, params).fetchall()
        except duckdb.Error as e:
            first = (str(e).splitlines() or [type(e).__name__])[0]
            no_id = isinstance(e, duckdb.BinderException) and "run_id" in first
            raise DamagedIndex(f, "it has no run_id column" if no_id else first) from None
        return [dict(zip(PLACING, r)) for r in found]

    def recorded_sizes(self, con) -> dict[str, int]:
        """The size the index recorded for each part file it lists (path relative to the
        warehouse), read by the DuckDB connection ``con`` (no Arrow); none for an index written
        before sizes were recorded. For the caller to check, as for ``placing``, that no commit
        replaced the index meanwhile."""
        import duckdb

        f = self.index_file
        if not f.exists():
            return {}
        path = "'" + str(f).replace("'", "''") + "'"
        empty = "SELECT NULL::STRUCT(file VARCHAR, size BIGINT, sha256 VARCHAR)[] AS files WHERE false"
        sql = (
            f"SELECT e.file, e.size FROM (SELECT unnest(files) AS e FROM "
            f"(SELECT files FROM (SELECT * FROM read_parquet({path}) UNION ALL BY NAME {empty})))"
        )
        try:
            return dict(con.execute(sql).fetchall())
        except duckdb.Error as e:
            raise DamagedIndex(f, (str(e).splitlines() or [type(e).__name__])[0]) from None

    def index(self) -> dict[str, dict]:
        """Every committed run's index row by run id (commit record, parts, workload)."""
        t = self._table()
        if t is None:
            return upgrade.legacy_index(self) if self.legacy() else {}
        if self._cache[2] is None:
            self._cache = (self._cache[0], self._cache[1], {r["run_id"]: r for r in t.to_pylist()})
        return {k: dict(v) for k, v in self._cache[2].items()}

    def row(self, run_id: str) -> dict | None:
        """One run's index row."""
        if self._table(full=False) is None:
            return self.index().get(run_id)
        # the index's small row groups and run_id statistics: one row group is read
        try:
            rows = pq.read_table(self.index_file, filters=[("run_id", "=", run_id)]).to_pylist()
        except (OSError, pa.ArrowException) as e:
            raise DamagedIndex(self.index_file, reason(e)) from None
        return rows[0] if rows else None

    def _placing(self, run_id: str) -> dict | None:
        """A run's placing columns (``LIGHT``) from the cached index: no file read per table."""
        t = self._table(full=False)
        if t is None:
            return self.index().get(run_id)
        rows = t.filter(pc.equal(t.column("run_id"), run_id)).to_pylist()
        return rows[0] if rows else None

    def run_ids(self) -> list[str]:
        t = self._table(full=False)
        return t.column("run_id").to_pylist() if t is not None else list(self.index())

    def parts(self, layer: str, run_ids=None) -> list[str]:
        """The distinct parts of ``layer`` holding the rows of ``run_ids`` (default: every run),
        in run order."""
        key = "raw_part" if layer == "raw" else "mart_part"
        t = self._table(full=False)
        if t is None:
            rows = self.index()
            chosen = rows.values() if run_ids is None else (rows[r] for r in run_ids if r in rows)
            return list(dict.fromkeys(r[key] for r in chosen if r.get(key)))
        col = t.column(key)
        if run_ids is not None:
            col = col.filter(pc.is_in(t.column("run_id"), value_set=pa.array(list(run_ids), pa.string())))
        return pc.unique(col.drop_null()).to_pylist()

    def drop(self, run_id: str) -> int:
        """Remove a run (``drop_runs``); returns the files removed."""
        return self.drop_runs([run_id])[run_id]

    def drop_runs(self, run_ids: list[str]) -> dict[str, int]:
        """Remove runs: out of the index first (one commit for all of them; a group holding
        some is written again without them in the same commit, and not at all when they are
        all it holds), then the files only they used. A group file that cannot be read is not
        written again (DamagedPart, nothing changed), so the runs of a damaged group can only
        go all together. In profetl 0.2's layout (not migrated while a commit record there
        cannot be read) their records and run folders go. The one way a run's data is deleted
        on purpose, readable record or not. Call under the lock. Returns the files removed per
        run (a file several of them used counts for the first)."""
        run_ids = list(dict.fromkeys(check_run_id(r) for r in run_ids))
        if self._table(full=False) is None and self.legacy():
            return {r: upgrade.drop_legacy(self, r) for r in run_ids}
        idx = self.index()
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
                1 for table in self._table_dirs(layer) for f in self.files(layer, table, part) if f.exists()
            )
        self._write_index(idx)
        self._drop(gone)
        return removed

    def discard_uncommitted(self, run_id: str) -> int:
        """Remove part files the index does not name: what a writer wrote for a dump that then
        failed (``run_id``'s), so a full disk gets its space back now, not at the next writer.
        Nothing is removed when the index cannot be read. Call under the lock."""
        try:
            named = {(layer, p) for layer, _, _ in LAYERS for p in self.parts(layer)}
        except DamagedIndex:
            return 0
        removed = 0
        for layer, _, _ in LAYERS:
            for f in (self.path / layer).glob("*/part-*.parquet"):
                if (layer, part_of(f.name)) not in named:
                    f.unlink(missing_ok=True)
                    removed += 1
        return removed

    def _write_index(
        self,
        idx: dict[str, dict] | pa.Table,
        commit: bool = True,
        touched: set[tuple[str, str]] = frozenset(),
    ) -> None:
        """The commit: the new index replaces the old one in one rename (not ``commit``: the
        empty index of a new warehouse, which commits nothing and has no crash points). The
        commit records of the parts this writer placed, and of the ``touched`` parts (layer,
        part) whose runs' rows changed, are written first."""
        f = self.index_file
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f".runs-{secrets.token_hex(4)}.tmp")
        if isinstance(idx, pa.Table):
            table = idx
        else:
            table = pa.Table.from_pylist(self._assign_files(idx), schema=index_schema())
        table = table.replace_schema_metadata({FORMAT_KEY: str(INDEX_FORMAT).encode()})
        # the commit records of the parts this writer put in place, before the commit names them
        placed = {entry_part(rel) for rel in self._written} | set(touched)
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
        self._written.clear()  # named now, or superseded (what the index does not name is swept)
        self._keep_version(f)

    def _keep_version(self, f: Path) -> None:
        """A copy of the index just committed into runs/_history/ (written to a temporary name,
        then renamed: a kept version is whole), and only the last KEEP_VERSIONS kept. After the
        commit, never before: a kept version never names files a commit did not make."""
        d = self.history_dir
        d.mkdir(exist_ok=True)
        kept = self.index_versions()
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
        those of the files this writer has put in place since (``_written``)."""
        pool: dict[tuple[str, str], dict[str, dict]] = {}
        for r in idx.values():
            for e in r.get("files") or []:
                pool.setdefault(entry_part(e["file"]), {})[e["file"]] = e
        for rel, e in self._written.items():
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
        parts it still names, and those of the files written for its new parts (``_written``)."""
        named = {(layer, new.get(key)) for layer, key, _ in LAYERS if new.get(key)}
        out = {e["file"]: e for e in (old or {}).get("files") or [] if entry_part(e["file"]) in named}
        for rel, e in self._written.items():
            if entry_part(rel) in named:
                out[rel] = {"file": rel, **e}
        return [out[k] for k in sorted(out)] or None

    def place(self, src: Path, final: Path) -> None:
        """Move a part file written elsewhere (a temporary folder) to its place ``final`` in the
        warehouse, recording its size and hash for the commit that names it (``files``)."""
        e = digest(src)
        final.parent.mkdir(parents=True, exist_ok=True)
        Path(src).replace(final)
        self._written[final.relative_to(self.path).as_posix()] = e

    def place_part(self, layer: str, part: str, sources: dict[str, list[Path]]) -> None:
        """Move the files of a new part, written elsewhere (table -> its files, one per shard
        of a sharded part, in order), to their places in the warehouse (``place``): the jobs
        hand a part over, only the writer names the tables' folders."""
        for table, srcs in sources.items():
            for src, final in zip(srcs, self.files(layer, table, part), strict=True):
                self.place(src, final)

    def record(self, final: Path) -> None:
        """Record the size and hash of a part file written in its place (``place`` for one
        written elsewhere)."""
        self._written[final.relative_to(self.path).as_posix()] = digest(final)

    # --- runs ----------------------------------------------------------------------
    def runs(self) -> list[dict]:
        """Committed runs' commit records, oldest collection first."""
        schema = contract("raw", "runs").schema
        t = self._table()
        if t is not None:  # the index is kept in this order; a column added since it was written is NULL
            return conform(t, schema, None).to_pylist()
        names = schema.names
        rows = [{k: r.get(k) for k in names} for r in self.index().values()]
        rows.sort(key=run_order)
        return rows

    def run(self, run_id: str) -> dict | None:
        """The run's commit record; None when it has none; DamagedRun when its record (profetl
        0.2's layout) cannot be read; DamagedIndex when the index cannot be."""
        r = self.row(check_run_id(run_id))
        if r is None and run_id in self._damaged and self._table(full=False) is None:
            raise self._damaged[run_id]
        if r is None:
            return None
        return {k: r.get(k) for k in contract("raw", "runs").schema.names}

    def resolve(self, run_ref: str | None) -> dict:
        """A committed run by id, unique id prefix, or ``latest`` (the run collected last: ``latest()``)."""
        t = self._table(full=False)
        if t is None:
            t = pa.Table.from_pylist(self.runs(), schema=contract("raw", "runs").schema)
        if not t.num_rows:
            self.check(must_exist=True)
            raise UnknownRun(f"the warehouse {self.path} has no runs yet")
        ids = t.column("run_id").to_pylist()
        if run_ref in (None, "latest"):
            cols = {k: t.column(k).to_pylist() for k in ("run_id", "collection_start_us", "ingested_at")}
            pick = latest([dict(zip(cols, v)) for v in zip(*cols.values())])["run_id"]
            return (
                self.run(pick)
                if self.index_file.exists()
                else next(r for r in self.runs() if r["run_id"] == pick)
            )
        if run_ref in ids:
            return (
                self.run(run_ref)
                if self.index_file.exists()
                else next(r for r in self.runs() if r["run_id"] == run_ref)
            )
        prefix = [i for i in ids if i.startswith(run_ref)]
        if len(prefix) == 1:
            return self.resolve(prefix[0])
        if prefix:
            raise UnknownRun(f"run id {run_ref!r} is ambiguous: {', '.join(prefix[:5])}")
        raise UnknownRun(f"no run {run_ref!r} in {self.path} (see `profetl runs`)")

    def run_files(self, layer: str, table: str, run: dict) -> list[Path]:
        """The files holding ``run``'s rows of ``table`` (a group file holds other runs' too;
        a sharded part is several files)."""
        key = "raw_part" if layer == "raw" else "mart_part"
        r = self._placing(run["run_id"]) or {}
        part = (
            r.get(key)
            if r.get("ingest_id" if layer == "raw" else "build_id")
            == run.get("ingest_id" if layer == "raw" else "build_id")
            else None
        )
        if part is None:  # a run not committed yet (a build of a new ingest): its own files
            own = run.get("ingest_id" if layer == "raw" else "build_id")
            if not own:
                return []
            check_run_id(run["run_id"])
            return self.files(layer, table, own)
        return self.files(layer, table, part)

    def current_files(self, layer: str, table: str, runs: list[dict] | None = None) -> list[Path]:
        """The existing files holding the rows of ``runs`` (default: all) in ``table``."""
        parts = self.parts(layer, None if runs is None else [r["run_id"] for r in runs])
        files = [f for p in parts for f in self.files(layer, table, p)]
        return [f for f in files if f.exists()]

    def commit(self, row: dict) -> None:
        """Make ``row`` the run's current state: one atomic rename of the index."""
        run_id = check_run_id(row["run_id"])
        if self._table(full=False) is None and self.legacy():
            # profetl 0.2's layout left because a commit record cannot be read: only a commit
            # replacing that very run (run --force) may move it (see ``upgrade.migrate``)
            upgrade.legacy_index(self)
            others = sorted(set(self.unreadable) - {run_id})
            if others:
                raise UsageError(f"{self.unreadable[others[0]]} (the warehouse is not changed until it is)")
            upgrade.migrate(self, replacing={run_id})
        old = self.row(run_id)
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
        t = self._table()  # every column: the rows are written again
        if regroup or t is None:  # the run leaves a group (or the old layout): every row at hand
            idx = self.index()
            before = named_parts(idx)
            for layer, key, group in regroup:
                compaction.regroup(self, idx, layer, key, group, drop={run_id})
            idx[run_id] = new
            self._write_index(idx, touched=touched)
            self._drop(before - named_parts(idx))
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
        self._write_index(both.take(order), touched=touched)
        self._drop(named_parts({run_id: old} if old else {}) - named_parts({run_id: new}))

    def _drop(self, parts: set[tuple[str, str]]) -> None:
        """Delete the files of parts the index no longer names (readers retry once), and
        their commit records."""
        for layer, part in parts:
            for table in self._table_dirs(layer):
                for f in self.files(layer, table, part):
                    f.unlink(missing_ok=True)
            if not is_legacy(part):
                commit_records.record_file(self.path, layer, part).unlink(missing_ok=True)
            if is_legacy(part):
                for d in (self.path / layer).glob(f"*/{part.split('/', 1)[0]}"):
                    rmdir_if_empty(d)

    def _table_dirs(self, layer: str) -> list[str]:
        base = self.path / layer
        have = (
            {d.name for d in base.iterdir() if d.is_dir() and TABLE.match(d.name)} if base.is_dir() else set()
        )
        return sorted(have | set(layer_tables(layer)))

    def workload(self, run: dict, raw_part: str | None) -> str:
        """What the run ran: <layout>/<chip>/<model names joined by +>, or
        <layout>/<chip>/ops-<md5 of the sorted op names joined by commas, 8 digits>, or
        <layout>/<chip>/empty; from the run's raw inferences and task ops in ``raw_part``."""
        import hashlib

        def distinct(table: str, column: str) -> list[str]:
            values: set = set()
            for f in self.files("raw", table, raw_part) if raw_part else []:
                if not f.exists():
                    continue
                names = pq.read_schema(f).names
                if column not in names:
                    continue
                t = pq.read_table(f, columns=[c for c in ("run_id", column) if c in names])
                col = t.column(column)
                if "run_id" in names:
                    col = col.filter(pc.equal(t.column("run_id"), run["run_id"]))
                values |= set(pc.unique(col).to_pylist())
            return sorted(v for v in values if v is not None)

        models = distinct("inferences", "model_name")
        if models:
            what = "+".join(models)
        else:
            ops = distinct("task_ops", "op_name")
            what = ("ops-" + hashlib.md5(",".join(ops).encode()).hexdigest()[:8]) if ops else "empty"
        return "/".join(
            x for x in (run.get("layout"), run.get("chip") or "unknown-chip", what) if x is not None
        )

    # --- upgrade and leftovers -----------------------------------------------------
    def sweep(self) -> int:
        """Remove part files and temp files that the index does not name. Call under the lock."""
        legacy = self.legacy()
        named = set(self.parts("raw")) | set(self.parts("marts"))
        removed = 0
        for layer, _, _ in LAYERS:
            base = self.path / layer
            if not base.is_dir():
                continue
            for d in base.iterdir():
                if not d.is_dir():
                    continue
                for f in d.iterdir():
                    if f.is_dir():  # profetl 0.2's run folders: kept until migrated
                        if legacy and f.name.split("=", 1)[-1] in self.unreadable:
                            continue  # which files its record names is unknown: keep them all
                        # (after migration, what the index no longer names: all of it)
                        part_ids = {p.split("/", 1)[1] for p in named if p.startswith(f.name + "/")}
                        for g in f.iterdir():
                            if g.name[: -len(".parquet")] not in part_ids:
                                g.unlink(missing_ok=True)
                                removed += 1
                        rmdir_if_empty(f)
                        continue
                    part = part_of(f.name)
                    if part not in named:
                        f.unlink(missing_ok=True)
                        removed += 1
        runs = self.path / "runs"
        if runs.is_dir():
            for f in runs.glob(".run*.tmp"):
                f.unlink(missing_ok=True)
                removed += 1
            for f in runs.glob("run_id=*/.run-*.tmp"):
                f.unlink(missing_ok=True)
                removed += 1
            for f in runs.glob(f"{HISTORY}/.runs-*.tmp"):  # a copy into the kept versions cut short
                f.unlink(missing_ok=True)
                removed += 1
            if not legacy:  # the index holds every record (a damaged index stopped us above)
                for d in runs.glob("run_id=*"):
                    shutil.rmtree(d, ignore_errors=True)
        tmp = self.path / ".tmp"
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        return removed

    def temp_dir(self) -> Path:
        """A new scratch folder under ``.tmp``; ``drop_temp`` removes it when the work is done."""
        d = self.path / ".tmp" / secrets.token_hex(4)
        d.mkdir(parents=True, exist_ok=True)
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

    # --- the writer lock -----------------------------------------------------------------
    @contextmanager
    def writer(self, wait_seconds: float = 0.0, prepare: bool = True):
        """Hold the warehouse's writer lock for the duration of the block.

        Not ``prepare``: only the lock, with no sweep, migration or new index, for
        ``profetl check --repair``, which must take it while the index is missing or damaged.

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
            if prepare:
                self.swept = self.sweep()
            if not prepare:
                pass
            elif self.legacy():
                self.migrated = upgrade.migrate(self)
            elif not self.index_file.exists():
                # a new warehouse gets an empty index before any part file: part files without
                # an index are then always damage (``_no_index``), never a first run killed
                # before its commit
                self._write_index({}, commit=False)
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
                        f"{lock} is held by process {holder}; another writer is running"
                    ) from None
                time.sleep(0.2)


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def latest(runs: list[dict]) -> dict:
    """The run collected last (the greatest collection start), so that back-filling older
    dumps does not change what ``latest`` names; among runs without a collection time, or
    collected at the same time, the one ingested last. A run with a collection time comes
    before any without."""
    return max(
        runs,
        key=lambda r: (
            r.get("collection_start_us") is not None,
            r.get("collection_start_us") or 0,
            r["ingested_at"],
        ),
    )


def _read_index(f: Path, columns: list[str] | None) -> pa.Table:
    """The run index (some columns); DamagedIndex when it cannot be read or is not an index."""
    try:
        # (ParquetFile, not read_table: read_table goes through pyarrow.dataset, whose import
        # loads pandas when it is installed, a third of a second for one file)
        with pq.ParquetFile(f) as pf:
            schema = pf.schema_arrow
            meta = pf.metadata.metadata or {}
            _check_index(
                f,
                meta.get(FORMAT_KEY, b"").decode(errors="replace") or None,
                {x.name: _arrow_kind(x.type) for x in schema},
                commit_records.COMMITTED_KEY in meta,
            )
            t = pf.read(columns=columns)
    except (OSError, pa.ArrowException, UnicodeDecodeError) as e:  # (a garbled footer's names)
        raise DamagedIndex(f, reason(e)) from None
    return t


def _check_index(f: Path, version: str | None, kinds: dict[str, str], record: bool = False) -> None:
    """DamagedIndex unless the file's columns (name -> kind) and format (its ``FORMAT_KEY``
    metadata; None: an older profetl's index) are a run index's this profetl reads, and it is
    not a part's commit record (``record``: it has the index's columns, but the rows of one part)."""
    if record:
        raise DamagedIndex(
            f, f"it is the commit record of one part (<layer>/{commit_records.RECORDS}/), not the run index"
        )
    if version is not None:
        if not version.isdigit():
            raise DamagedIndex(f, f"its index format {version[:20]!r} is not a number")
        if int(version) > INDEX_FORMAT:
            raise DamagedIndex(
                f,
                f"it is of index format {int(version)}, written by a newer profetl; "
                f"this one reads formats up to {INDEX_FORMAT}",
            )
    missing = [c for c in INDEX_REQUIRED if c not in kinds]
    if missing:
        raise DamagedIndex(
            f,
            f"it is not a run index: it has no {', '.join(missing[:3])}"
            f"{', ...' if len(missing) > 3 else ''} column{'s' if len(missing) > 1 else ''}",
        )
    wrong = [c for c, k in INDEX_REQUIRED.items() if kinds[c] != k]
    if "files" in kinds and kinds["files"] != "list":
        wrong.append("files")
    if wrong:
        raise DamagedIndex(f, f"it is not a run index: its column {wrong[0]} is not of the index's type")


def _arrow_kind(t: pa.DataType) -> str:
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or (pa.types.is_dictionary(t) and pa.types.is_string(t.value_type))
    ):
        return "text"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_timestamp(t):
        return "time"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "list"
    return str(t)


def _duckdb_kind(t: str) -> str:
    if t == "VARCHAR":
        return "text"
    if t in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"):
        return "int"
    if t.startswith("TIMESTAMP"):
        return "time"
    if t.endswith("[]"):
        return "list"
    return t
