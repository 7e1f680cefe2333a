"""Export a table of one or more runs as CSV (for spreadsheets) or Parquet, atomically."""

from __future__ import annotations

import csv
import io
import math
import os
import secrets
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.contracts import Contract, contract, contracts
from pipeline.errors import UnknownTable, UsageError
from pipeline.query import connect
from pipeline.warehouse import Warehouse

FORMATS = ("csv", "parquet")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def table_contract(table: str) -> Contract:
    for layer in ("marts", "raw"):
        if table in contracts(layer):
            return contract(layer, table)
    known = sorted(contracts("marts")) + sorted(contracts("raw"))
    raise UnknownTable(f"no table named {table!r}; known: {', '.join(known)}")


def fetch(wh: Warehouse, table: str, run_ids: list[str]) -> tuple[Contract, pa.Table]:
    """The table's rows for the given runs, in the order the build wrote them."""
    c = table_contract(table)
    con = connect(wh, run_ids)
    try:
        t = con.sql(f"SELECT * FROM {c.name}").to_arrow_table()
    finally:
        con.close()
    if len(run_ids) > 1:
        order = {r: i for i, r in enumerate(run_ids)}
        idx = sorted(range(t.num_rows), key=lambda i: order.get(t.column("run_id")[i].as_py(), 0))
        t = t.take(pa.array(idx, pa.int64()))
    return c, t


def csv_cell(v) -> str:
    """A cell a spreadsheet shows as written: NULL empty, numbers as numbers, no formulas."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        # 15 significant digits: exact for every value a double holds to that precision,
        # without binary noise such as 37.946000000000005 in the spreadsheet
        return "" if math.isnan(v) else format(v, ".15g")
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (list, tuple)):
        v = ",".join(str(x) for x in v)
    s = str(v)
    return "'" + s if s.startswith(_FORMULA_START) else s


def to_csv(c: Contract, t: pa.Table, headers: str = "display", with_run: bool = False) -> str:
    cols = [col for col in c.columns if col.name != "run_id"]
    names = ([("run_id", "Run ID")] if with_run else []) + [(col.name, col.display or col.name) for col in cols]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([disp if headers == "display" else name for name, disp in names])
    data = [t.column(name).to_pylist() for name, _ in names]
    for row in zip(*data):
        w.writerow([csv_cell(v) for v in row])
    return buf.getvalue()


def _atomic_write(out: Path, write) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(4)}.tmp")
    try:
        write(tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def export(wh: Warehouse, table: str, run_ids: list[str], fmt: str, out: str, headers: str = "display") -> int:
    """Write the table to ``out`` (``-`` is standard output for CSV); returns the row count."""
    if fmt not in FORMATS:
        raise UsageError(f"format {fmt!r}; use one of {', '.join(FORMATS)}")
    if headers not in ("display", "snake"):
        raise UsageError(f"headers {headers!r}; use display or snake")
    c, t = fetch(wh, table, run_ids)
    with_run = len(run_ids) > 1
    if fmt == "csv":
        text = to_csv(c, t, headers, with_run)
        if out == "-":
            sys.stdout.write(text)
        else:
            _atomic_write(Path(out), lambda p: p.write_text(text, encoding="utf-8"))
    else:
        if out == "-":
            raise UsageError("Parquet cannot be written to standard output; give --out a file")
        keep = (["run_id"] if with_run else []) + [col.name for col in c.columns if col.name != "run_id"]
        _atomic_write(Path(out), lambda p: pq.write_table(t.select(keep), p, compression="zstd"))
    return t.num_rows
