"""Read access: an in-memory DuckDB with one view per table over the committed part files, read
from one snapshot of the run index; a read retried on a new snapshot when a writer replaced
a run meanwhile; and the lock-down of a connection that runs a user's SQL.

Nothing here writes to the warehouse and no lock is taken: readers see the runs the run
index holds (read once), through the part files it names.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipeline import __version__
from pipeline.errors import DamagedIndex, DamagedPart, PartSizeMismatch, QueryFailed
from pipeline.warehouse.compaction import damage_advice
from pipeline.warehouse.contracts import RAW_TABLES, Contract, contract, names
from pipeline.warehouse.index import PLACING, index_schema, recorded_sizes
from pipeline.warehouse.layout import part_files
from pipeline.warehouse.store import Warehouse


def quote(path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _empty_view(c: Contract) -> str:
    cols = ["NULL::VARCHAR AS run_id"] + [f"NULL::{col.sql_type} AS {col.name}" for col in c.columns]
    return "SELECT " + ", ".join(cols) + " WHERE false"


class _Changed(Exception):
    """The warehouse changed under a reader's snapshot: take a new one."""


def _first_runs(runs: list[dict], key: str) -> dict[str, dict]:
    """Each part of a layer the snapshot's index rows (``runs``) name (``key``: raw_part or
    mart_part), once (a group file holds many runs), in run order, with the first run it holds."""
    first: dict[str, dict] = {}
    for r in runs:
        part = r.get(key)
        if part and part not in first:
            first[part] = r
    return first


def _size(f: Path) -> int | None:
    try:
        return f.stat().st_size
    except (FileNotFoundError, NotADirectoryError):
        return None


def _snapshot_files(
    wh: Warehouse, layer: str, table: str, first: dict[str, dict], sizes: dict[str, int]
) -> list[Path]:
    """The files of ``table`` for the parts the snapshot names (``_first_runs``). A file named
    but gone means a writer replaced or regrouped a run since the index was read (``_Changed``:
    read again), or, when the index still names it, that the file was lost: an error for a run
    of this version, which writes every table; a run of an older profetl may lack a table
    added since. A file whose size is not the one the index recorded at its commit (``sizes``,
    by path relative to the warehouse) was damaged since: PartSizeMismatch naming it (part
    files are never rewritten in place, so no writer's commit explains it)."""
    key = "raw_part" if layer == "raw" else "mart_part"
    out: list[Path] = []
    missing: dict[str, dict] = {}
    for part, r in first.items():
        files = part_files(wh.path, layer, table, part)
        have = [_size(f) for f in files]
        if all(n is not None for n in have):
            for f, n in zip(files, have):
                recorded = sizes.get(f.relative_to(wh.path).as_posix()) if sizes else None
                if recorded is not None and recorded != n:  # what can be done depends on who shares the part
                    raise PartSizeMismatch(
                        f, recorded, n, damage_advice(wh.run_index().rows_by_run_id(), key, part)
                    )
            out.extend(files)
        else:
            missing[part] = r
    if missing:
        now = wh.run_index().rows_by_run_id()
        for part, r in missing.items():
            if (now.get(r["run_id"]) or {}).get(key) != part:
                raise _Changed(f"run {r['run_id']} was replaced or removed while it was read")
            if (
                r.get("profetl_version") == __version__
            ):  # a group's runs are dropped together, not re-ingested
                raise DamagedPart(
                    next(f for f in part_files(wh.path, layer, table, part) if not f.exists()),
                    "missing",
                    damage_advice(now, key, part),
                )
    return out


def _view_sql(
    wh: Warehouse,
    layer: str,
    c: Contract,
    runs: list[dict],
    first: dict[str, dict],
    every: bool,
    sizes: dict[str, int],
) -> str:
    """The table's rows of ``runs`` (``every``: all the snapshot's runs) through the files the
    snapshot names (``first``: ``_first_runs`` of ``runs``; ``sizes``: their recorded sizes)."""
    files = _snapshot_files(wh, layer, c.name, first, sizes)
    if not files:
        return _empty_view(c)
    names = ", ".join(col.name for col in c.columns)
    scan = f"SELECT * FROM read_parquet([{', '.join(quote(f) for f in files)}], union_by_name = true)"
    # a group file holds runs not asked for
    # (a list of constants, not a join: a join would not keep the files' row order)
    where = "" if every else " WHERE run_id IN (" + ", ".join(quote(r["run_id"]) for r in runs) + ")"
    # UNION BY NAME with the empty contract: a column no part file has yet (a run written by an
    # older profetl, a column added since) reads as NULL instead of failing the whole view
    return f"SELECT run_id, {names} FROM (({scan}) UNION ALL BY NAME {_empty_view(c)}){where}"


def _identity(f: Path) -> tuple | None:
    try:
        st = f.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _placing(
    con: duckdb.DuckDBPyConnection, wh: Warehouse, run_ids: list[str] | None
) -> tuple[list[dict] | None, dict]:
    """``Warehouse.placing_rows`` and ``Warehouse.recorded_sizes``, checked against a writer's
    commit. DuckDB opens the index by its name more than once in a read (its footer when the
    query is planned, its rows when it runs), so a commit replacing the index in between would
    mix two files: when the index is not the same file after the read as before it, the read is
    not used (``_Changed``: read again), and an error is only an error when the file stayed the
    same."""
    before = _identity(wh.index_file)
    sizes: dict = {}
    try:
        runs = wh.placing_rows(con, run_ids)
        if runs is not None:
            sizes = wh.recorded_sizes(con)
    except DamagedIndex:
        if _identity(wh.index_file) == before:
            raise
        runs = None
    if _identity(wh.index_file) != before:
        raise _Changed("the run index was replaced while it was read")
    return runs, sizes


def connect(
    wh: Warehouse,
    run_ids: list[str] | None = None,
    tables=None,
    sandbox: bool = False,
    confine: bool = False,
    records: bool = True,
) -> duckdb.DuckDBPyConnection:
    """A connection with views ``runs``, every raw table and every mart (optionally some runs only).

    Times print in UTC. ``runs`` holds the commit records plus ``RUN_VIEW_COLUMNS``.
    ``tables`` limits the other views to those named: a view reads the footer of every part file it lists, so fewer views open
    faster. ``records`` False leaves out the ``runs`` view: the index's placing columns are
    then all that is read of it, by DuckDB (``Warehouse.placing_rows``), and Arrow is not loaded.
    ``sandbox``: the connection runs SQL a user wrote (``lock_down``); ``confine`` also keeps
    its file-reading functions inside the warehouse.
    """
    wh.check()
    con = duckdb.connect(config=_SANDBOX_CONFIG if sandbox else {})
    try:
        con.execute("SET TimeZone = 'UTC'")
        # a query per run (export) opens the same files again: read each footer once
        con.execute("SET parquet_metadata_cache = true")
        runs, sizes = (None, {}) if records else _placing(con, wh, run_ids)
        if records:
            import pyarrow as pa
            import pyarrow.compute as pc

            run_index = wh.run_index()  # the index, read once (DamagedIndex when it cannot be)
            snap = run_index.index_table()
            if snap is None:  # a new warehouse: no runs
                snap = index_schema().empty_table()
            sizes = recorded_sizes(snap)  # of every run: a group's files are listed on one of its runs
            if run_ids is not None:
                snap = snap.filter(
                    pc.is_in(snap.column("run_id"), value_set=pa.array(list(run_ids), pa.string()))
                )
            runs = snap.select(list(PLACING)).to_pylist()
            # the index as read once, held in memory: the runs view and the part files
            # listed below are the same snapshot, whatever a writer commits meanwhile
            # (registered, not copied: the index's control-file text is most of its bytes)
            con.register("_run_records", snap.select(contract("raw", "runs").schema.names + ["workload"]))
        only = None if tables is None else set(tables)
        runs = runs or []
        first = {"raw": _first_runs(runs, "raw_part"), "marts": _first_runs(runs, "mart_part")}
        for layer, layer_names in (("raw", RAW_TABLES), ("marts", names("marts"))):
            for name in layer_names:
                if only is None or name in only:
                    sql = _view_sql(
                        wh, layer, contract(layer, name), runs, first[layer], run_ids is None, sizes
                    )
                    con.execute(f"CREATE VIEW {name} AS {sql}")
        if records:
            con.execute(_RUNS_VIEW)
    except BaseException:
        con.close()
        raise
    if sandbox:
        lock_down(con, wh if confine else None)
    return con


# Set when the connection is made: no extension is installed or loaded behind a query's back
# (reading a URL or a .json file would otherwise fetch and load one).
_SANDBOX_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
}


def lock_down(con: duckdb.DuckDBPyConnection, confine_to: Warehouse | None = None) -> None:
    """Settings that hold whatever the statement, on top of ``check_read_only``.

    External access is off: no extension can be loaded, no URL (http, s3) read, no file
    read or written outside the allowed directories. Those are every local directory, or,
    with ``confine_to``, only the warehouse (its committed files and nothing outside it:
    read_csv, read_text, read_blob, glob, COPY and ATTACH included). The configuration is then
    locked, so no SET takes it back. Writing into an allowed directory is stopped by the
    statement check alone: DuckDB's allowed directories are allowed for reading and writing."""
    import os

    if confine_to is None:
        allowed = ["/"]
    else:
        base = confine_to.path
        allowed = sorted({os.path.abspath(base).rstrip("/") + "/", str(base.resolve()).rstrip("/") + "/"})
    con.execute("SET allowed_directories = $dirs", {"dirs": allowed})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


# Columns the ``runs`` view adds to the commit records (documented in docs/tables.md).
RUN_VIEW_COLUMNS = {
    "collected_at": ("timestamp", "Collection start (UTC) as a timestamp: collection_start_us"),
    "workload": (
        "string",
        "What the run ran, so that runs can be compared over time: "
        "<layout>/<chip>/<model names joined by +>, or <layout>/<chip>/ops-<hash of the "
        "sorted op names> when the run has no model records",
    ),
}
# The index keeps each run's workload, computed from its raw tables when it is committed
# (the rule: pipeline/workload.py, applied by the writer).
_RUNS_VIEW = """
CREATE VIEW runs AS
SELECT
    r.* EXCLUDE (workload),
    make_timestamptz(r.collection_start_us) AS collected_at,
    r.workload
FROM _run_records AS r
"""


# snapshots a reader takes before it gives up on a warehouse that keeps changing under it
READ_ATTEMPTS = 3


def read_consistent(wh: Warehouse, read, run_ids: list[str] | None = None, tables=None, **sandbox):
    """``read(con)`` on a snapshot of the warehouse: the run index read once, and the part
    files it names. ``read`` sees all of a run's old files or all of its new ones, and
    every committed run; never a mix, never a run left out.

    A writer deletes the part files its commit superseded, so a reader that listed them
    just before may find one gone, while listing (``_Changed``) or while reading (DuckDB's
    IOException): it then takes a new snapshot and reads again, from the start. When the
    warehouse changes under every attempt, or a file stays unreadable, the read fails with
    a clear error (QueryFailed) rather than answer from part of the data.
    """
    why = ""
    for _ in range(READ_ATTEMPTS):
        try:
            con = connect(wh, run_ids, tables, **sandbox)
        except _Changed as e:
            why = str(e)
            continue
        except duckdb.Error as e:  # a file gone between the listing and the view's first read
            if not _vanished(e):
                raise
            why = str(e).splitlines()[0]
            continue
        try:
            return read(con)
        except duckdb.Error as e:
            if not _vanished(e):
                raise
            why = str(e).splitlines()[0]
        finally:
            con.close()
    raise QueryFailed(
        f"the warehouse {wh.path} changed under {READ_ATTEMPTS} attempts to read it "
        f"(a writer replacing runs?), or a file of it cannot be read: {why}; run the command again"
    )


def _vanished(e: duckdb.Error) -> bool:
    """Whether DuckDB failed on a file that could not be opened or read: what a reader meets
    when a writer deletes a superseded part file under it (an IOException, or an error of
    another class carrying DuckDB's IO Error text, as at bind time)."""
    return isinstance(e, duckdb.IOException) or str(e).startswith("IO Error")
