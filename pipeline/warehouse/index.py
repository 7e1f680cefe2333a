"""The run index (``runs/runs.parquet``): its format, and ``RunIndex``, one snapshot of it.

A ``RunIndex`` is the index as read once (``Warehouse.run_index``): the file's bytes, decoded
as needed (none for a new warehouse). Its methods are pure: the runs'
rows and records, the parts that hold some runs' rows, the files of a part or of a run,
resolving a run reference (``latest``, an id, an id prefix). What a writer commits after it
was read is not in it; a reader that wants it takes a new snapshot.

The reads of the index by DuckDB (``read_placing_rows``, ``read_recorded_sizes``), for
readers that need neither Arrow nor the commit records' bulk, are here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pipeline.errors import DamagedIndex, UnknownRun
from pipeline.lazy import lazy
from pipeline.warehouse import commit_records
from pipeline.warehouse.contracts import contract
from pipeline.warehouse.layout import check_folder, check_run_id, part_files
from pipeline.warehouse.part_rows import conform, reason

# Arrow is loaded where the index is first decoded: a reader that only names paths (``query``,
# whose DuckDB reads the index) never loads it
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
# The columns that place a run's rows and say which profetl wrote it: what a reader without the
# ``runs`` view reads of the index (``read_placing_rows``).
PLACING = ("run_id", "raw_part", "mart_part", "profetl_version")


def files_type() -> pa.DataType:
    """The type of the index's ``files`` column: the files of a run's parts with their sizes and hashes."""
    return pa.list_(pa.struct([("file", pa.string()), ("size", pa.int64()), ("sha256", pa.string())]))


def index_schema() -> pa.Schema:
    s = contract("raw", "runs").schema
    for name in INDEX_EXTRA:
        s = s.append(pa.field(name, pa.string()))
    return s.append(pa.field("files", files_type()))


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


def version_files(version: pa.Table) -> list[dict]:
    """The part files a version of the index names with the size and SHA-256 it recorded for
    them: ``{"file", "size", "sha256"}``, ``file`` relative to the warehouse. Parts committed by
    a profetl that recorded none are not listed."""
    col = version.column("files") if "files" in version.column_names else None
    if col is None:
        return []
    return [e for v in col.to_pylist() if v for e in v]


def read_index_version(path: Path) -> pa.Table:
    """A version of the index (the index itself, or a kept one), checked as the index is
    (DamagedIndex naming it when it cannot be read or is not a run index), with the current
    schema's columns."""
    return conform(read_index(Path(path), None), index_schema(), None)


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


@dataclass(frozen=True, eq=False)
class RunIndex:
    """One snapshot of the run index: ``data``, the index file's bytes as read once (None
    without an index: a new warehouse, no runs)."""

    root: Path
    index_file: Path
    data: bytes | None = None

    @classmethod
    def from_bytes(cls, root: Path, index_file: Path, data: bytes) -> RunIndex:
        """A snapshot of the index file read as ``data``; DamagedIndex when its footer is not a
        run index's of a format this profetl reads."""
        snap = cls(root, index_file, data)
        snap._file()  # (the footer checked now: a damaged index fails where it is opened)
        return snap

    # --- the index as Arrow tables ------------------------------------------------------
    def _file(self) -> pq.ParquetFile:
        return _open_index(self.index_file, pa.BufferReader(self.data))

    def _decode(self, columns: list[str] | None) -> pa.Table:
        # In this thread, not Arrow's pool: a pool task decoding from these bytes lets go of
        # them after the read has returned, and needs the interpreter for it; at a command's
        # exit that aborts the process (docs/architecture.md#reliability, "exit").
        try:
            with self._file() as pf:
                return pf.read(columns=columns, use_threads=False)
        except (OSError, pa.ArrowException, UnicodeDecodeError) as e:
            raise DamagedIndex(self.index_file, reason(e)) from None

    @cached_property
    def stored_table(self) -> pa.Table | None:
        """Every column of the index as it is stored (None without an index)."""
        return None if self.data is None else self._decode(None)

    @cached_property
    def placing_table(self) -> pa.Table | None:
        """The columns of the index that place runs (``LIGHT``): all most readers need, and a
        fraction of the bytes (readers work on columns: making a dict of every run costs more
        than the rest of a command once there are thousands)."""
        if self.data is None:
            return None
        if "stored_table" in self.__dict__:
            return self.stored_table.select(LIGHT)
        return self._decode(LIGHT)

    def index_table(self) -> pa.Table | None:
        """The whole index in the current schema (a column added since it was written: NULL);
        None without one."""
        t = self.stored_table
        return None if t is None else conform(t, index_schema(), None)

    @cached_property
    def _rows(self) -> dict[str, dict]:
        t = self.stored_table
        if t is None:
            return {}
        return {r["run_id"]: r for r in t.to_pylist(maps_as_pydicts="strict")}

    # --- runs ---------------------------------------------------------------------------
    def rows_by_run_id(self) -> dict[str, dict]:
        """Every committed run's index row by run id (commit record, parts, workload): a copy
        the caller may change."""
        return {k: dict(v) for k, v in self._rows.items()}

    def index_row(self, run_id: str) -> dict | None:
        """One run's index row (None when it has none)."""
        if self.data is None:
            return None
        if "_rows" in self.__dict__:
            r = self._rows.get(run_id)
            return None if r is None else dict(r)
        t = self.stored_table
        rows = t.filter(pc.equal(t.column("run_id"), run_id)).to_pylist(maps_as_pydicts="strict")
        return rows[0] if rows else None

    def _placing_row(self, run_id: str) -> dict | None:
        """A run's ``LIGHT`` columns."""
        t = self.placing_table
        if t is None:
            return None
        rows = t.filter(pc.equal(t.column("run_id"), run_id)).to_pylist()
        return rows[0] if rows else None

    def run_ids(self) -> list[str]:
        """The committed runs' ids, in run order."""
        t = self.placing_table
        return t.column("run_id").to_pylist() if t is not None else []

    def run_records(self) -> list[dict]:
        """Committed runs' commit records, oldest collection first."""
        t = self.stored_table
        if t is None:
            return []
        # the index is kept in this order; a column added since it was written is NULL
        return conform(t, contract("raw", "runs").schema, None).to_pylist(maps_as_pydicts="strict")

    def run_record(self, run_id: str) -> dict | None:
        """The run's commit record; None when it has none."""
        r = self.index_row(check_run_id(run_id))
        if r is None:
            return None
        return {k: r.get(k) for k in contract("raw", "runs").schema.names}

    def resolve_run(self, run_ref: str | None) -> dict:
        """The commit record of a committed run named by id, unique id prefix, or ``latest``
        (the run collected last: ``latest()``); UnknownRun when none or several match."""
        t = self.placing_table
        if t is None or not t.num_rows:
            check_folder(self.root, must_exist=True)
            raise UnknownRun(f"the warehouse {self.root} has no runs yet")
        ids = t.column("run_id").to_pylist()
        if run_ref in (None, "latest"):
            cols = {k: t.column(k).to_pylist() for k in ("run_id", "collection_start_us", "ingested_at")}
            run_ref = latest([dict(zip(cols, v)) for v in zip(*cols.values())])["run_id"]
        if run_ref in ids:
            return self.run_record(run_ref)
        prefix = [i for i in ids if i.startswith(run_ref)]
        if len(prefix) == 1:
            return self.resolve_run(prefix[0])
        if prefix:
            raise UnknownRun(f"run id {run_ref!r} is ambiguous: {', '.join(prefix[:5])}")
        raise UnknownRun(f"no run {run_ref!r} in {self.root} (see `profetl runs`)")

    # --- parts and their files ------------------------------------------------------------
    def parts_of_runs(self, layer: str, run_ids=None) -> list[str]:
        """The distinct parts of ``layer`` holding the rows of ``run_ids`` (default: every run),
        in run order."""
        key = "raw_part" if layer == "raw" else "mart_part"
        t = self.placing_table
        if t is None:
            return []
        col = t.column(key)
        if run_ids is not None:
            col = col.filter(pc.is_in(t.column("run_id"), value_set=pa.array(list(run_ids), pa.string())))
        return pc.unique(col.drop_null()).to_pylist()

    def part_files(self, layer: str, table: str, part: str) -> list[Path]:
        """The files of ``part`` for ``table``: one, or a sharded part's shards in order."""
        return part_files(self.root, layer, table, part)

    def files_of_run(self, layer: str, table: str, run: dict) -> list[Path]:
        """The files holding ``run``'s rows of ``table`` (a group file holds other runs' too;
        a sharded part is several files); a run this snapshot does not hold with that ingest
        (or build) id, one not committed yet (a build of a new ingest): its own part's files."""
        key = "raw_part" if layer == "raw" else "mart_part"
        id_key = "ingest_id" if layer == "raw" else "build_id"
        r = self._placing_row(run["run_id"]) or {}
        part = r.get(key) if r.get(id_key) == run.get(id_key) else None
        if part is None:
            own = run.get(id_key)
            if not own:
                return []
            check_run_id(run["run_id"])
            return self.part_files(layer, table, own)
        return self.part_files(layer, table, part)


def _open_index(f: Path, source) -> pq.ParquetFile:
    """The run index ``f`` opened from ``source`` (its path or its bytes), its footer checked;
    DamagedIndex when it cannot be read or is not an index."""
    try:
        # (ParquetFile, not read_table: read_table goes through pyarrow.dataset, whose import
        # loads pandas when it is installed, a third of a second for one file)
        pf = pq.ParquetFile(source)
        try:
            meta = pf.metadata.metadata or {}
            _check_index(
                f,
                meta.get(FORMAT_KEY, b"").decode(errors="replace") or None,
                {x.name: _arrow_kind(x.type) for x in pf.schema_arrow},
                commit_records.COMMITTED_KEY in meta,
            )
        except BaseException:
            pf.close()
            raise
    except (OSError, pa.ArrowException, UnicodeDecodeError) as e:  # (a garbled footer's names)
        raise DamagedIndex(f, reason(e)) from None
    return pf


def read_index(f: Path, columns: list[str] | None) -> pa.Table:
    """The run index ``f`` (some columns); DamagedIndex when it cannot be read or is not an index."""
    try:
        with _open_index(f, f) as pf:
            return pf.read(columns=columns)
    except (OSError, pa.ArrowException, UnicodeDecodeError) as e:
        raise DamagedIndex(f, reason(e)) from None


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


def arrow_kind(t: pa.DataType) -> str:
    """The kind of an Arrow type, as ``INDEX_REQUIRED`` names them."""
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


_arrow_kind = arrow_kind


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


def read_placing_rows(con, f: Path, run_ids: list[str] | None = None) -> list[dict]:
    """The ``PLACING`` columns of the index file ``f`` (which exists), in index order, read
    once by the DuckDB connection ``con``: neither Arrow nor the commit records' bulk (their
    control-file text) is read. With ``run_ids``, the rows of those runs; without, of every run
    that comes first in its raw or mart part (a group part holds many runs; what a reader needs
    to list each part once). DamagedIndex when it cannot be read. DuckDB opens the file by its
    name more than once: a commit replacing the index meanwhile is for the caller to notice
    (``views``)."""
    import duckdb

    path = "'" + str(f).replace("'", "''") + "'"
    try:  # the footer: a run index of a format this profetl reads
        meta = dict(
            con.execute(f"SELECT key::VARCHAR, value::VARCHAR FROM parquet_kv_metadata({path})").fetchall()
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
    # ``RunIndex.index_table`` conforms it)
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


def read_recorded_sizes(con, f: Path) -> dict[str, int]:
    """The size the index file ``f`` recorded for each part file it lists (path relative to
    the warehouse), read by the DuckDB connection ``con`` (no Arrow); none when ``f`` is gone
    or was written before sizes were recorded. For the caller to check, as for
    ``read_placing_rows``, that no commit replaced the index meanwhile."""
    import duckdb

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
