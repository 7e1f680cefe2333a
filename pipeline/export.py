"""Export a table of one or more runs as CSV (for spreadsheets), JSON lines or Parquet, atomically.

CSV carries the profiling tool's display headers ("Time(%)", "Stream ID") unless snake_case
column names are asked for; Parquet and JSON lines always use the column names, and Parquet
the contract's types.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from pipeline.contracts import Contract, contract, contracts
from pipeline.errors import UnknownTable, UsageError
from pipeline.formats import ROW_FORMATS, atomic_write, check_format, csv_cell, csv_text
from pipeline.query import read_consistent, write_consistent
from pipeline.warehouse import Warehouse

FORMATS = ROW_FORMATS
HEADERS = ("display", "snake")
__all__ = ["FORMATS", "HEADERS", "atomic_write", "csv_cell", "export", "fetch", "select_sql", "stream_runs",
           "table_contract", "to_csv"]


def table_contract(table: str) -> Contract:
    for layer in ("marts", "raw"):
        if table in contracts(layer):
            return contract(layer, table)
    known = sorted(contracts("marts")) + sorted(contracts("raw"))
    raise UnknownTable(f"no table named {table!r}; known: {', '.join(known)}")


def _columns(c: Contract) -> list[str]:
    return ["run_id"] + [col.name for col in c.columns if col.name != "run_id"]


# rows per batch read from DuckDB and written out: an export holds about this many rows at a time
BATCH_ROWS = 100_000


def select_sql(c: Contract, names: list[str], devices: list[int] | None, many: bool = False) -> str:
    """SELECT of ``names`` from the table of one run, ``$run``; optionally only some devices.
    ``many``: of the runs in the list ``$runs`` whose ids lie between ``$lo`` and ``$hi`` (the
    range lets the reader skip the files and row groups of other runs by their statistics)."""
    where = ""
    if devices:
        if "device_id" not in {col.name for col in c.columns}:
            raise UsageError(f"{c.name} has no device_id column; leave out --device")
        where = " AND device_id IN (" + ", ".join(str(int(d)) for d in devices) + ")"
    if many:
        return (f"SELECT {', '.join(names)} FROM {c.name} "
                f"WHERE run_id BETWEEN $lo AND $hi AND list_contains($runs, run_id){where}")
    return f"SELECT {', '.join(names)} FROM {c.name} WHERE run_id = $run{where}"


def run_chunks(wh: Warehouse, layer: str, run_ids: list[str]) -> list[list[str]]:
    """``run_ids`` cut into stretches that one scan returns in that order: consecutive runs
    whose rows share a group file, in the file's order (collection order). A query per run
    would cost a plan and a pass over the group's statistics for every run."""
    from pipeline.warehouse import is_group, run_order

    key = "raw_part" if layer == "raw" else "mart_part"
    t = wh._table()
    idx = ({r["run_id"]: r for r in t.select(["run_id", key, "collection_start_us"]).to_pylist()}
           if t is not None else wh.index())
    chunks: list[list[str]] = []
    prev = None
    for run_id in run_ids:
        r = idx.get(run_id)
        part = r.get(key) if r else None
        if (chunks and prev is not None and part is not None and is_group(part) and part == prev[key]
                and run_order(prev) < run_order(r)):
            chunks[-1].append(run_id)
        else:
            chunks.append([run_id])
        prev = r
    return chunks


def stream_runs(con, sql: str, run_ids: list[str], chunks: list[list[str]] | None = None,
                many_sql: str | None = None) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The rows of ``sql`` for each run in turn (in the order the build wrote them), as the
    schema and a lazy stream of batches: one reader is open at a time. With ``chunks``
    (``run_chunks``) and ``many_sql`` (``select_sql(many=True)``), a stretch of several runs is
    read by one query."""
    if chunks is None or many_sql is None:
        chunks = [[r] for r in run_ids]

    def reader(chunk: list[str]):
        if len(chunk) == 1:
            return con.sql(sql, params={"run": chunk[0]}).to_arrow_reader(BATCH_ROWS)
        return con.sql(many_sql, params={"runs": chunk, "lo": min(chunk), "hi": max(chunk)}).to_arrow_reader(BATCH_ROWS)

    first = reader(chunks[0]) if chunks else con.sql(sql, params={"run": None}).to_arrow_reader(BATCH_ROWS)

    def batches() -> Iterator[pa.RecordBatch]:
        yield from first
        for chunk in chunks[1:]:
            yield from reader(chunk)

    return first.schema, batches()


def fetch(wh: Warehouse, table: str, run_ids: list[str], devices: list[int] | None = None) -> tuple[Contract, pa.Table]:
    """The table's rows for the given runs (in that order), in the order the build wrote them;
    optionally only some devices. In memory: for small tables and tests; ``export`` streams."""
    c = table_contract(table)
    sql = select_sql(c, _columns(c), devices)
    many = select_sql(c, _columns(c), devices, many=True)

    def read(con):
        schema, batches = stream_runs(con, sql, run_ids, run_chunks(wh, c.layer, run_ids), many)
        return pa.Table.from_batches(list(batches), schema)

    return c, read_consistent(wh, read, run_ids, {c.name})


def _keep(c: Contract, with_run: bool) -> list[str]:
    cols = [col.name for col in c.columns if col.name != "run_id"]
    return (["run_id"] if with_run or c.name == "runs" else []) + cols


def _header(c: Contract, names: list[str], headers: str) -> list[str]:
    """CSV header cells: the tool's display names, or the column names."""
    if headers == "snake":
        return names
    display = {col.name: col.display or col.name for col in c.columns} | {"run_id": "Run ID"}
    return [display[n] for n in names]


def to_csv(c: Contract, t: pa.Table, headers: str = "display", with_run: bool = False) -> str:
    names = _keep(c, with_run)
    return csv_text(t.select(names), _header(c, names, headers))


def export(wh: Warehouse, table: str, run_ids: list[str], fmt: str, out: str, headers: str = "display",
           devices: list[int] | None = None) -> int:
    """Write the table of ``run_ids`` to ``out`` (``-`` is standard output); returns the row count.

    A run_id column is added when more than one run is exported. Rows stream from the part
    files to ``out`` a batch at a time, so memory does not grow with the table.
    """
    check_format(fmt, FORMATS)
    if headers not in HEADERS:
        raise UsageError(f"headers {headers!r}; use display or snake")
    c = table_contract(table)
    names = _keep(c, len(run_ids) > 1)
    sql = select_sql(c, names, devices)
    many = select_sql(c, names, devices, many=True)
    head = _header(c, names, headers) if fmt == "csv" else None
    return write_consistent(wh, lambda con: stream_runs(con, sql, run_ids, run_chunks(wh, c.layer, run_ids), many),
                            fmt, out, head, run_ids, {c.name})
