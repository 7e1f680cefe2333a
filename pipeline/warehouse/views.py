"""Read access: an in-memory DuckDB with one view per table over the committed part files, read
from one snapshot of the commit records; a read retried on a new snapshot when a writer
replaced a run meanwhile; and the lock-down of a connection that runs a user's SQL.

Nothing here writes to the warehouse and no lock is taken: readers see the runs whose
commit records exist, through the part files those records name.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline import __version__
from pipeline.errors import DamagedRun, QueryFailed
from pipeline.warehouse.contracts import RAW_TABLES, Contract, contract, contracts
from pipeline.warehouse.store import Warehouse


def quote(path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _empty_view(c: Contract) -> str:
    cols = ["NULL::VARCHAR AS run_id"] + [f"NULL::{col.sql_type} AS {col.name}" for col in c.columns]
    return "SELECT " + ", ".join(cols) + " WHERE false"


class _Changed(Exception):
    """The warehouse changed under a reader's snapshot: take a new one."""


def _snapshot_files(wh: Warehouse, layer: str, table: str, runs: list[dict]) -> list[Path]:
    """The part files the snapshot's commit records name for ``table``. A file named but gone
    means a writer replaced that run since its record was read (``_Changed``: read again), or,
    when the record is still the same, that the file was lost: an error for a run of this
    version, which writes every table; a run of an older profetl may lack a table added since."""
    key = "ingest_id" if layer == "raw" else "build_id"
    out = []
    for r in runs:
        if not r.get(key):
            continue
        f = wh.part(layer, table, r["run_id"], r[key])
        if f.exists():
            out.append(f)
            continue
        try:
            now = wh.run(r["run_id"])
        except DamagedRun:
            now = None
        if now is None or now.get(key) != r[key]:
            raise _Changed(f"run {r['run_id']} was replaced or removed while it was read")
        if r.get("profetl_version") == __version__:
            raise QueryFailed(f"run {r['run_id']}: its commit record names {f}, which is missing; "
                              f"`profetl run --force DUMP` re-ingests the run, `profetl drop {r['run_id']}` removes it")
    return out


def _view_sql(wh: Warehouse, layer: str, c: Contract, runs: list[dict]) -> str:
    files = _snapshot_files(wh, layer, c.name, runs)
    if not files:
        return _empty_view(c)
    listing = "[" + ", ".join(quote(f) for f in files) + "]"
    names = ", ".join(col.name for col in c.columns)
    # UNION BY NAME with the empty contract: a column no part file has yet (a run written by an
    # older profetl, a column added since) reads as NULL instead of failing the whole view
    return (f"SELECT run_id, {names} FROM (SELECT * FROM read_parquet({listing}, hive_partitioning = true, "
            f"hive_types = {{'run_id': VARCHAR}}, union_by_name = true) UNION ALL BY NAME {_empty_view(c)})")


def connect(wh: Warehouse, run_ids: list[str] | None = None, tables=None,
            sandbox: bool = False, confine: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection with views ``runs``, every raw table and every mart (optionally some runs only).

    Times print in UTC. ``runs`` holds the commit records plus ``RUN_VIEW_COLUMNS``.
    ``tables`` limits the other views to those named (and what ``runs`` reads): a view
    reads the footer of every part file it lists, so fewer views open faster over many runs.
    ``sandbox``: the connection runs SQL a user wrote (``lock_down``); ``confine`` also keeps
    its file-reading functions inside the warehouse.
    """
    only = None if tables is None else set(tables) | _RUNS_VIEW_READS
    runs = wh.check().runs()
    if run_ids is not None:
        wanted = set(run_ids)
        runs = [r for r in runs if r["run_id"] in wanted]
    con = duckdb.connect(config=_SANDBOX_CONFIG if sandbox else {})
    try:
        con.execute("SET TimeZone = 'UTC'")
        # the records as read once, held in memory: the runs view and the part files listed
        # below are the same snapshot, whatever a writer commits meanwhile
        records = pa.Table.from_pylist(runs, schema=contract("raw", "runs").schema)
        con.register("_run_snapshot", records)
        con.execute("CREATE TEMP TABLE _run_snapshot_copy AS SELECT * FROM _run_snapshot")
        con.unregister("_run_snapshot")
        con.execute("CREATE VIEW _run_records AS SELECT * FROM _run_snapshot_copy")
        for name in RAW_TABLES:
            if only is None or name in only:
                con.execute(f"CREATE VIEW {name} AS {_view_sql(wh, 'raw', contracts('raw')[name], runs)}")
        for name, c in contracts("marts").items():
            if only is None or name in only:
                con.execute(f"CREATE VIEW {name} AS {_view_sql(wh, 'marts', c, runs)}")
        con.execute(_RUNS_VIEW)
    except BaseException:
        con.close()
        raise
    if sandbox:
        lock_down(con, wh if confine else None)
    return con


# Set when the connection is made: no extension is installed or loaded behind a query's back
# (reading a URL or a .json file would otherwise fetch and load one).
_SANDBOX_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                   "allow_community_extensions": False}


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
    "workload": ("string", "What the run ran, so that runs can be compared over time: "
                 "<layout>/<chip>/<model names joined by +>, or <layout>/<chip>/ops-<hash of the "
                 "sorted op names> when the run has no model records"),
}
_RUNS_VIEW_READS = {"inferences", "task_ops"}
_RUNS_VIEW = """
CREATE VIEW runs AS
SELECT
    r.*,
    make_timestamptz(r.collection_start_us) AS collected_at,
    concat_ws('/', r.layout, coalesce(r.chip, 'unknown-chip'),
              coalesce(m.models, 'ops-' || left(md5(o.ops), 8), 'empty')) AS workload
FROM _run_records AS r
LEFT JOIN (
    SELECT run_id, string_agg(DISTINCT model_name, '+' ORDER BY model_name) AS models
    FROM inferences WHERE model_name IS NOT NULL GROUP BY run_id
) AS m USING (run_id)
LEFT JOIN (
    SELECT run_id, string_agg(DISTINCT op_name, ',' ORDER BY op_name) AS ops
    FROM task_ops WHERE op_name IS NOT NULL GROUP BY run_id
) AS o USING (run_id)
"""


# snapshots a reader takes before it gives up on a warehouse that keeps changing under it
READ_ATTEMPTS = 3


def read_consistent(wh: Warehouse, read, run_ids: list[str] | None = None, tables=None, **sandbox):
    """``read(con)`` on a snapshot of the warehouse: the commit records read once, and the
    part files they name. ``read`` sees all of a run's old files or all of its new ones, and
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
    raise QueryFailed(f"the warehouse {wh.path} changed under {READ_ATTEMPTS} attempts to read it "
                      f"(a writer replacing runs?), or a file of it cannot be read: {why}; run the command again")


def _vanished(e: duckdb.Error) -> bool:
    """Whether DuckDB failed on a file that could not be opened or read: what a reader meets
    when a writer deletes a superseded part file under it (an IOException, or an error of
    another class carrying DuckDB's IO Error text, as at bind time)."""
    return isinstance(e, duckdb.IOException) or str(e).startswith("IO Error")
