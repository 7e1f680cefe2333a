"""Read access: an in-memory DuckDB with one view per table over the committed part files.

Nothing here writes to the warehouse and no lock is taken: readers see the runs the run
index holds, through the part files it names.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import __version__
from pipeline.contracts import RAW_TABLES, Contract, contract, contracts
from pipeline.errors import QueryFailed, TransformFailed
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
    path = wh.run_part("raw", table, run)
    wanted = [col for col in c.columns if col.name != "run_id"]
    if path is None or not path.exists():
        if run.get("profetl_version") == __version__:
            raise TransformFailed(f"run {run_id} has no raw part file for {table} ({path})")
        cols = ", ".join(f"NULL::{col.sql_type} AS {col.name}" for col in wanted)
        return f"select {cols} where false"
    have = set(pq.read_schema(path).names)
    cols = ", ".join(col.name if col.name in have else f"NULL::{col.sql_type} AS {col.name}"
                     for col in wanted)
    # a group file holds other runs too
    where = f" where run_id = {_quote(run_id)}" if "run_id" in have else ""
    return f"select {cols} from read_parquet({_quote(path)}){where}"


def _view_sql(wh: Warehouse, layer: str, c: Contract, run_ids: list[str] | None) -> str:
    """The table's rows of ``run_ids`` (None: every run) through the files the index names."""
    files = wh.current_files(layer, c.name, None if run_ids is None else [{"run_id": r} for r in run_ids])
    if not files:
        return _empty_view(c)
    names = ", ".join(col.name for col in c.columns)
    flat = [f for f in files if not f.parent.name.startswith("run_id=")]
    old = [f for f in files if f.parent.name.startswith("run_id=")]
    scans = []
    if flat:
        scans.append(f"SELECT * FROM read_parquet([{', '.join(_quote(f) for f in flat)}], union_by_name = true)")
    if old:  # profetl 0.2's layout, until a writer migrates it: the run is the folder's name
        scans.append(f"SELECT * FROM read_parquet([{', '.join(_quote(f) for f in old)}], hive_partitioning = true, "
                     "hive_types = {'run_id': VARCHAR}, union_by_name = true)")
    # a group file holds runs not asked for
    where = "" if run_ids is None else " WHERE run_id IN (" + ", ".join(_quote(r) for r in run_ids) + ")"
    # UNION BY NAME with the empty contract: a column no part file has yet (a run written by an
    # older profetl, a column added since) reads as NULL instead of failing the whole view
    union = " UNION ALL BY NAME ".join(f"({x})" for x in scans)
    return f"SELECT run_id, {names} FROM ({union} UNION ALL BY NAME {_empty_view(c)}){where}"


def connect(wh: Warehouse, run_ids: list[str] | None = None, tables=None) -> duckdb.DuckDBPyConnection:
    """A connection with views ``runs``, every raw table and every mart (optionally some runs only).

    Times print in UTC. ``runs`` holds the commit records plus ``RUN_VIEW_COLUMNS``.
    ``tables`` limits the other views to those named (and what ``runs`` reads): a view
    reads the footer of every part file it lists, so fewer views open faster.
    """
    wh.check()
    legacy = not wh.index_file.exists() and wh.legacy()
    only = None if tables is None else set(tables) | (_RUNS_VIEW_READS if legacy else set())
    known = wh.run_ids()
    runs = None
    if run_ids is not None:
        wanted = set(run_ids)
        runs = [r for r in known if r in wanted]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    # a query per run (export) opens the same files again: read each footer once
    con.execute("SET parquet_metadata_cache = true")
    record_cols = ", ".join(col.name for col in contracts("raw")["runs"].columns)
    if not legacy and known:
        where = "" if runs is None else " WHERE run_id IN (" + ", ".join(_quote(r) for r in runs) + ")"
        con.execute(f"CREATE VIEW _run_records AS SELECT {record_cols}, workload "
                    f"FROM read_parquet({_quote(wh.index_file)}){where}")
    elif known and (runs is None or runs):
        chosen = known if runs is None else runs
        listing = "[" + ", ".join(_quote(wh.path / "runs" / f"run_id={r}" / "run.parquet") for r in chosen) + "]"
        con.execute(f"CREATE VIEW _run_records AS SELECT {record_cols}, NULL::VARCHAR AS workload "
                    f"FROM read_parquet({listing}, hive_partitioning = false, union_by_name = true)")
    else:
        c = contracts("raw")["runs"]
        con.execute("CREATE VIEW _run_records AS SELECT " + ", ".join(
            f"NULL::{col.sql_type} AS {col.name}" for col in c.columns) + ", NULL::VARCHAR AS workload WHERE false")
    for name in RAW_TABLES:
        if only is None or name in only:
            con.execute(f"CREATE VIEW {name} AS {_view_sql(wh, 'raw', contracts('raw')[name], runs)}")
    for name, c in contracts("marts").items():
        if only is None or name in only:
            con.execute(f"CREATE VIEW {name} AS {_view_sql(wh, 'marts', c, runs)}")
    con.execute(_RUNS_VIEW_LEGACY if legacy else _RUNS_VIEW)
    return con


# Columns the ``runs`` view adds to the commit records (documented in docs/tables.md).
RUN_VIEW_COLUMNS = {
    "collected_at": ("timestamp", "Collection start (UTC) as a timestamp: collection_start_us"),
    "workload": ("string", "What the run ran, so that runs can be compared over time: "
                 "<layout>/<chip>/<model names joined by +>, or <layout>/<chip>/ops-<hash of the "
                 "sorted op names> when the run has no model records"),
}
_RUNS_VIEW_READS = {"inferences", "task_ops"}  # to compute workload in profetl 0.2's layout
# The index keeps each run's workload, computed from its raw tables when it is committed
# (Warehouse.workload); a warehouse of profetl 0.2's layout not migrated yet has none, and
# the view computes it the same way from the raw tables.
_RUNS_VIEW = """
CREATE VIEW runs AS
SELECT
    r.* EXCLUDE (workload),
    make_timestamptz(r.collection_start_us) AS collected_at,
    r.workload
FROM _run_records AS r
"""
_RUNS_VIEW_LEGACY = """
CREATE VIEW runs AS
SELECT
    r.* EXCLUDE (workload),
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


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Only queries: a COPY, ATTACH, CREATE or other statement could write files."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None
    for st in statements:
        kind = str(st.type).rsplit(".", 1)[-1]
        if kind not in READ_ONLY_STATEMENTS:
            raise QueryFailed(f"only SELECT queries are allowed here, not {kind}: the warehouse is read-only to `query`")
    if len(statements) != 1:
        raise QueryFailed(f"give one SELECT statement, not {len(statements)}")


def read_consistent(wh: Warehouse, read, run_ids: list[str] | None = None, tables=None):
    """``read(con)`` on a fresh set of views; once more if a writer replaced a run meanwhile.

    A writer deletes the part files its commit superseded, so a reader that listed them
    just before may find one gone: it then sees the new commit on the second try.
    """
    for attempt in (1, 2):
        con = connect(wh, run_ids, tables)
        try:
            return read(con)
        except duckdb.IOException:
            if attempt == 2:
                raise
        finally:
            con.close()


def write_consistent(wh: Warehouse, select, fmt: str, out: str, headers: list[str] | None = None,
                     run_ids: list[str] | None = None, tables=None) -> int:
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

    return read_consistent(wh, read, run_ids, tables)


def query_to(wh: Warehouse, sql: str, fmt: str, out: str, params: dict | None = None) -> int:
    """Run one read-only query and stream its rows to ``out`` as CSV, JSON lines or Parquet."""
    def select(con):
        check_read_only(con, sql)
        reader = con.sql(sql, params=params or None).to_arrow_reader(BATCH_ROWS)
        return reader.schema, reader

    try:
        return write_consistent(wh, select, fmt, out)
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None


def query(wh: Warehouse, sql: str, params: dict | None = None, limit: int | None = None) -> QueryResult:
    """Run one read-only query; keep every row, or the first ``limit`` (the rest are counted,
    not kept, so the head of a huge result costs the memory of the head)."""
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
        table, total = read_consistent(wh, read)
    except duckdb.Error as e:
        raise QueryFailed(str(e).splitlines()[0]) from None
    return QueryResult(table.column_names, table, total)
