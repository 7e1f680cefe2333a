"""profetl query: SQL over every table of every run."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli import common as C
from pipeline.errors import UsageError
from pipeline.export import csv_cell
from pipeline.query import query
from pipeline.report import cell


def _params(items: list[str]) -> dict:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--param takes name=value, not {item!r}")
        out[name] = int(value) if value.lstrip("-").isdigit() else value
    return out


def command(
    sql: Annotated[str, typer.Argument(help="SQL text, @FILE to read a file, or - to read standard input.", show_default=False)],
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="Named parameter name=value, used as $name in the SQL.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, csv or json (JSON lines).")] = "table",
    warehouse: C.WarehouseOpt = None,
) -> None:
    """Run SQL over views of every raw table, mart and `runs`, each with run_id.

    Example: profetl query "select op_name, sum(time_ns) from task_scheduler group by 1 order by 2 desc"
    """
    with C.errors():
        if sql == "-":
            sql = sys.stdin.read()
        elif sql.startswith("@"):
            sql = Path(sql[1:]).read_text(encoding="utf-8")
        if fmt not in ("table", "csv", "json"):
            raise UsageError(f"format {fmt!r}; use table, csv or json")
        res = query(C.warehouse(warehouse), sql, _params(param or []))
    if fmt == "json":
        for row in res.rows:
            sys.stdout.write(json.dumps(dict(zip(res.columns, row)), default=str) + "\n")
    elif fmt == "csv":
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(res.columns)
        for row in res.rows:
            w.writerow([csv_cell(v) for v in row])
    else:
        C.print_table(None, res.columns, [[cell(v) for v in row] for row in res.rows])
