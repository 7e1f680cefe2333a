"""Read access: an in-memory DuckDB with one view per table over the committed part files.

Nothing here writes to the warehouse and no lock is taken: readers see the runs whose
commit records exist, through the part files those records name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import __version__
from pipeline.contracts import RAW_TABLES, Contract, contract, contracts
from pipeline.errors import DamagedRun, QueryFailed, TransformFailed
from pipeline.formats import write_batches
from pipeline.warehouse import Warehouse


def _quote(path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _empty_view(c: Contract) -> str:
    cols = ["NULL::VARCHAR AS run_id"] + [f"NULL::{col.sql_type} AS {col.name}" for col in c.columns]
    return "SELECT " + ", ".join(cols) + " WHERE false"


def raw_select(wh: Warehouse, table: str, run: dict) -> str:
    """One run's raw table as its contract has it now, without ``run_id``: what the build and
    the timeline read. A run ingested by an older profetl lacks the tables and columns added
    since: those read as empty / NULL, so old runs still rebuild."""
    c = contract("raw", table)
    run_id = run["run_id"]
    path = wh.part("raw", table, run_id, run["ingest_id"])
    wanted = [col for col in c.columns if col.name != "run_id"]
    if not path.exists():
        if run.get("profetl_version") == __version__:
            raise TransformFailed(f"run {run_id} has no raw part file for {table} ({path})")
        cols = ", ".join(f"NULL::{col.sql_type} AS {col.name}" for col in wanted)
        return f"select {cols} where false"
    have = set(pq.read_schema(path).names)
    cols = ", ".join(col.name if col.name in have else f"NULL::{col.sql_type} AS {col.name}"
                     for col in wanted)
    return f"select {cols} from read_parquet({_quote(path)})"


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
    listing = "[" + ", ".join(_quote(f) for f in files) + "]"
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


# rows per batch streamed from DuckDB to an output file
BATCH_ROWS = 100_000


@dataclass
class QueryResult:
    columns: list[str]
    table: pa.Table  # every row, or the first ``limit`` of them
    total_rows: int = 0  # rows the query returned

    @property
    def rows(self) -> list[tuple]:
        cols = [self.table.column(i).to_pylist() for i in range(self.table.num_columns)]
        return list(zip(*cols)) if cols else []


READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN"}

# EXPLAIN [ANALYZE] [(options)] in front of the statement it explains, comments allowed between
_GAP = r"(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/)*"
_EXPLAIN = re.compile(rf"^{_GAP}explain\b{_GAP}(?:analy[sz]e\b{_GAP})?(?:\([^()]*\){_GAP})?", re.I | re.S)


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Only queries: a COPY, ATTACH, CREATE, INSTALL or other statement could write files or
    fetch code, and so could one under EXPLAIN ANALYZE (which runs it): an EXPLAIN passes only
    when what it explains is a SELECT."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None
    if len(statements) != 1:
        raise QueryFailed(f"give one SELECT statement, not {len(statements)}")
    kind = _kind(statements[0])
    text = statements[0].query
    while kind == "EXPLAIN":
        m = _EXPLAIN.match(text)
        try:
            inner = con.extract_statements(text[m.end():]) if m else []
        except duckdb.Error:
            inner = []
        if len(inner) != 1:
            raise QueryFailed("EXPLAIN is allowed here only in front of one SELECT")
        kind, text = _kind(inner[0]), inner[0].query
        if kind not in READ_ONLY_STATEMENTS:
            kind = "EXPLAIN " + kind
    if kind not in READ_ONLY_STATEMENTS:
        raise QueryFailed(f"only SELECT queries are allowed here, not {kind}: the warehouse is read-only to `query`")


def _kind(statement) -> str:
    return str(statement.type).rsplit(".", 1)[-1]


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


def write_consistent(wh: Warehouse, select, fmt: str, out: str, headers: list[str] | None = None,
                     run_ids: list[str] | None = None, tables=None, **sandbox) -> int:
    """Write the rows of ``select(con)`` (a schema and a stream of record batches) to ``out``
    as they are read, on fresh views like ``read_consistent``. A file is written again from
    the start on the second try; standard output cannot take back the rows it already got, so
    there a writer replacing a run mid-way is an error instead."""
    tries = 0

    def read(con):
        nonlocal tries
        tries += 1
        if tries > 1 and out == "-":
            raise QueryFailed("a writer replaced a run while its rows were written to standard output; run the command again")
        schema, batches = select(con)
        return write_batches(batches, schema, fmt, out, headers)

    return read_consistent(wh, read, run_ids, tables, **sandbox)


def query_to(wh: Warehouse, sql: str, fmt: str, out: str, params: dict | None = None, confine: bool = False) -> int:
    """Run one read-only query and stream its rows to ``out`` as CSV, JSON lines or Parquet
    (on a locked-down connection, ``lock_down``)."""
    def select(con):
        check_read_only(con, sql)
        reader = con.sql(sql, params=params or None).to_arrow_reader(BATCH_ROWS)
        return reader.schema, reader

    try:
        return write_consistent(wh, select, fmt, out, sandbox=True, confine=confine)
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None


def query(wh: Warehouse, sql: str, params: dict | None = None, limit: int | None = None,
          confine: bool = False) -> QueryResult:
    """Run one read-only query on a locked-down connection (``lock_down``); keep every row, or
    the first ``limit`` (the rest are counted, not kept, so the head of a huge result costs the
    memory of the head)."""
    def read(con):
        check_read_only(con, sql)
        rel = con.sql(sql, params=params or None)
        if rel is None:
            return pa.table({}), 0
        reader = rel.to_arrow_reader(BATCH_ROWS)
        kept, n, total = [], 0, 0
        for batch in reader:
            total += batch.num_rows
            if limit is None or n < limit:
                part = batch if limit is None else batch.slice(0, limit - n)
                kept.append(part)
                n += part.num_rows
        return pa.Table.from_batches(kept, reader.schema), total

    try:
        table, total = read_consistent(wh, read, sandbox=True, confine=confine)
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None
    return QueryResult(table.column_names, table, total)
