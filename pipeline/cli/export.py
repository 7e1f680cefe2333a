"""profetl export: a table of a run as CSV or Parquet."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import common as C
from pipeline.export import FORMATS, export


def command(
    table: Annotated[str, typer.Argument(help="A mart (runtime_api_summary, task_scheduler, ...) or raw table.", show_default=False)],
    run: Annotated[list[str] | None, typer.Option("--run", "-r", help="Run id, prefix or latest; repeat for several runs.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help=f"One of {', '.join(FORMATS)}.")] = "csv",
    out_path: Annotated[str, typer.Option("--out", "-o", help="Output file, or - for standard output (CSV).")] = "-",
    headers: Annotated[str, typer.Option("--headers", help="display (the tool's names, e.g. Time(%)) or snake (column names).")] = "display",
    warehouse: C.WarehouseOpt = None,
) -> None:
    """Export TABLE for one or more runs; the file appears whole or not at all.

    CSV uses the profiling tool's display headers, leaves numbers as numbers and quotes
    text that a spreadsheet would run as a formula. Parquet keeps the contract's types.

    Example: profetl export task_scheduler --run latest --format csv --out task_scheduler.csv
    """
    wh = C.warehouse(warehouse)
    with C.errors():
        run_ids = [wh.resolve(r)["run_id"] for r in (run or ["latest"])]
        n = export(wh, table, run_ids, fmt, out_path, headers)
    if out_path != "-":
        C.err.print(f"wrote {n} row(s) to {out_path}", highlight=False)
