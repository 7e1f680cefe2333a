"""Export a table of one or more runs as CSV (for spreadsheets), JSON lines or Parquet, atomically.

CSV carries the profiling tool's display headers ("Time(%)", "Stream ID") unless snake_case
column names are asked for; Parquet and JSON lines always use the column names, and Parquet
the contract's types.
"""

from __future__ import annotations

import pyarrow as pa

from pipeline.contracts import Contract, contract, contracts
from pipeline.errors import UnknownTable, UsageError
from pipeline.formats import ROW_FORMATS, atomic_write, check_format, csv_cell, csv_text, write_table, write_text
from pipeline.query import read_consistent
from pipeline.warehouse import Warehouse

FORMATS = ROW_FORMATS
HEADERS = ("display", "snake")
__all__ = ["FORMATS", "HEADERS", "atomic_write", "csv_cell", "export", "fetch", "table_contract", "to_csv"]


def table_contract(table: str) -> Contract:
    for layer in ("marts", "raw"):
        if table in contracts(layer):
            return contract(layer, table)
    known = sorted(contracts("marts")) + sorted(contracts("raw"))
    raise UnknownTable(f"no table named {table!r}; known: {', '.join(known)}")


def _columns(c: Contract) -> list[str]:
    return ["run_id"] + [col.name for col in c.columns if col.name != "run_id"]


def fetch(wh: Warehouse, table: str, run_ids: list[str], devices: list[int] | None = None) -> tuple[Contract, pa.Table]:
    """The table's rows for the given runs (in that order), in the order the build wrote them;
    optionally only some devices."""
    c = table_contract(table)
    names = _columns(c)
    where = ""
    if devices:
        if "device_id" not in names:
            raise UsageError(f"{table} has no device_id column; leave out --device")
        where = " WHERE device_id IN (" + ", ".join(str(int(d)) for d in devices) + ")"
    sql = f"SELECT {', '.join(names)} FROM {c.name}{where}"
    t = read_consistent(wh, lambda con: con.sql(sql).to_arrow_table(), run_ids, {c.name})
    if len(run_ids) > 1:
        order = {r: i for i, r in enumerate(run_ids)}
        idx = sorted(range(t.num_rows), key=lambda i: order.get(t.column("run_id")[i].as_py(), 0))
        t = t.take(pa.array(idx, pa.int64()))
    return c, t


def _keep(c: Contract, with_run: bool) -> list[str]:
    cols = [col.name for col in c.columns if col.name != "run_id"]
    return (["run_id"] if with_run or c.name == "runs" else []) + cols


def to_csv(c: Contract, t: pa.Table, headers: str = "display", with_run: bool = False) -> str:
    names = _keep(c, with_run)
    display = {col.name: col.display or col.name for col in c.columns} | {"run_id": "Run ID"}
    head = [display[n] if headers == "display" else n for n in names]
    return csv_text(t.select(names), head)


def export(wh: Warehouse, table: str, run_ids: list[str], fmt: str, out: str, headers: str = "display",
           devices: list[int] | None = None) -> int:
    """Write the table of ``run_ids`` to ``out`` (``-`` is standard output); returns the row count.

    A run_id column is added when more than one run is exported.
    """
    check_format(fmt, FORMATS)
    if headers not in HEADERS:
        raise UsageError(f"headers {headers!r}; use display or snake")
    c, t = fetch(wh, table, run_ids, devices)
    with_run = len(run_ids) > 1
    if fmt == "csv":
        write_text(out, to_csv(c, t, headers, with_run))
        return t.num_rows
    return write_table(t.select(_keep(c, with_run)), fmt, out)
