"""profetl export: a table of some runs as CSV, JSON lines or Parquet."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.outputs.export import FORMATS, export
from pipeline.analysis.selection import select_runs


def command(
    table: Annotated[str, typer.Argument(autocompletion=common.complete_table, help="A mart (runtime_api_summary, task_scheduler, ...) or raw table (api_calls, runs, ...).", show_default=False)],
    run: common.RunsOpt = None,
    since: common.SinceOpt = None,
    until: common.UntilOpt = None,
    workload: common.WorkloadOpt = None,
    device: common.DeviceOpt = None,
    fmt: Annotated[str | None, typer.Option("--format", "-f", show_default="csv", help=f"One of {', '.join(FORMATS)} (json: JSON lines).")] = None,
    json_: common.AliasJsonOpt = False,
    out_path: common.OutOpt = "-",
    headers: Annotated[str, typer.Option("--headers", help="CSV headers: display (the tool's names, e.g. Time(%), Stream ID) or snake (column names).")] = "display",
    warehouse: common.WarehouseOpt = None,
) -> None:
    """Export TABLE for the chosen runs (default: the latest); a file appears whole or not at all.

    Runs are chosen with --run, and/or by collection time with --since/--until, and/or by
    --workload; with more than one run a Run ID column comes first. CSV uses the
    profiling tool's display headers, writes numbers as plain numbers, NULL as an empty
    cell, and quotes text a spreadsheet would run as a formula. Parquet keeps the
    contract's types and snake_case names.

    Example: profetl export task_scheduler --since 7d --device 0 --format csv --out task_scheduler.csv
    """
    wh = common.warehouse(warehouse)
    with common.errors():
        fmt = common.output_format(fmt, json_, FORMATS, "csv")
        runs = select_runs(wh, common.selection(run, since, until, workload))
        n = export(wh, table, [r["run_id"] for r in runs], fmt, out_path, headers, device)
    if out_path != "-":
        common.err.print(f"wrote {n} row(s) of {len(runs)} run(s) to {out_path}", highlight=False, markup=False)
