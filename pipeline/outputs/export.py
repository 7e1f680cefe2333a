"""Export a table of one or more runs as CSV (for spreadsheets), JSON lines or Parquet, atomically.

CSV carries the profiling tool's display headers ("Time(%)", "Stream ID") unless snake_case
column names are asked for; Parquet and JSON lines always use the column names, and Parquet
the contract's types.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from pipeline.warehouse.contracts import Contract, contract, contracts
from pipeline.errors import UnknownTable, UsageError
from pipeline.outputs.formats import ROW_FORMATS, atomic_write, check_format, csv_cell, csv_text
from pipeline.outputs.query import write_consistent
from pipeline.warehouse.views import read_consistent
from pipeline.warehouse.store import Warehouse

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


def select_sql(c: Contract, names: list[str], devices: list[int] | None) -> str:
    """SELECT of ``names`` from the table of one run, ``$run``; optionally only some devices."""
    where = ""
    if devices:
        if "device_id" not in {col.name for col in c.columns}:
            raise UsageError(f"{c.name} has no device_id column; leave out --device")
        where = " AND device_id IN (" + ", ".join(str(int(d)) for d in devices) + ")"
    return f"SELECT {', '.join(names)} FROM {c.name} WHERE run_id = $run{where}"


def stream_runs(con, sql: str, run_ids: list[str]) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The rows of ``sql`` for each run in turn (in the order the build wrote them), as the
    schema and a lazy stream of batches: one run's reader is open at a time."""
    first = con.sql(sql, params={"run": run_ids[0] if run_ids else None}).to_arrow_reader(BATCH_ROWS)

    def batches() -> Iterator[pa.RecordBatch]:
        yield from first
        for run_id in run_ids[1:]:
            yield from con.sql(sql, params={"run": run_id}).to_arrow_reader(BATCH_ROWS)

    return first.schema, batches()


def fetch(wh: Warehouse, table: str, run_ids: list[str], devices: list[int] | None = None) -> tuple[Contract, pa.Table]:
    """The table's rows for the given runs (in that order), in the order the build wrote them;
    optionally only some devices. In memory: for small tables and tests; ``export`` streams."""
    c = table_contract(table)
    sql = select_sql(c, _columns(c), devices)

    def read(con):
        schema, batches = stream_runs(con, sql, run_ids)
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
    head = _header(c, names, headers) if fmt == "csv" else None
    return write_consistent(wh, lambda con: stream_runs(con, sql, run_ids), fmt, out, head, run_ids, {c.name})
