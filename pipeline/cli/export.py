"""profetl export: a table of some runs as CSV, JSON lines or Parquet."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.outputs.export import FORMATS, export_table
from pipeline.analysis.selection import select_runs


def command(
    table: Annotated[str, typer.Argument(autocompletion=common.complete_table, help="A mart (runtime_api_summary, task_scheduler, ...) or raw table (api_calls, runs, ...).", show_default=False)],
    run: common.RunsOpt = None,
    since: common.SinceOpt = None,
    until: common.UntilOpt = None,
    workload: common.WorkloadOpt = None,
    device: common.DeviceOpt = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help=f"One of {', '.join(FORMATS)} (json: JSON lines).")] = "csv",
    out_path: common.OutOpt = "-",
    headers: Annotated[str, typer.Option("--headers", help="CSV headers: display (the tool's names, e.g. Time(%), Stream ID) or snake (column names).")] = "display",
    max_rows: Annotated[int | None, typer.Option("--max-rows", metavar="N", show_default=False, help="CSV: split into numbered files of at most N rows, each with the header (out.csv -> out-0001.csv, out-0002.csv, ...); 1048575 fits a spreadsheet.")] = None,
    warehouse: common.WarehouseOpt = None,
) -> None:
    """Export TABLE for the chosen runs (default: the latest); a file appears whole or not at all.

    Runs are chosen with --run, and/or by collection time with --since/--until, and/or by
    --workload; with more than one run a Run ID column comes first. CSV uses the
    profiling tool's display headers, writes numbers as plain numbers, NULL as an empty
    cell, and quotes text a spreadsheet would run as a formula. A CSV of more rows than a
    spreadsheet opens (1,048,576 lines with the header) is written with a warning;
    --max-rows splits it. Parquet keeps the contract's types and snake_case names.

    Example: profetl export task_scheduler --since 7d --device 0 --format csv --out task_scheduler.csv
    """
    wh = common.warehouse(warehouse)
    with common.errors():
        runs = select_runs(wh, common.selection(run, since, until, workload))
        done = export_table(wh, table, [r["run_id"] for r in runs], fmt, out_path, headers, device, max_rows)
    for w in done.warnings:
        common.err.print(f"profetl: warning: {w}", highlight=False, markup=False)
    if out_path != "-":
        where = out_path if max_rows is None else f"{len(done.files)} file(s) {', '.join(str(p) for p, _ in done.files[:3])}{' ...' if len(done.files) > 3 else ''}"
        common.err.print(f"wrote {done.rows} row(s) of {len(runs)} run(s) to {where}", highlight=False, markup=False)

