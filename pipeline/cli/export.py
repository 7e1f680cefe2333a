"""profetl export: a table of some runs as CSV, JSON lines or Parquet; or a run's tables as msprof's files."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.analysis.selection import select_runs
from pipeline.cli import common
from pipeline.errors import UsageError
from pipeline.outputs.export import FORMATS, export_table

LIKE = ("msprof",)


def command(
    table: Annotated[
        str | None,
        typer.Argument(
            autocompletion=common.complete_table,
            help="A mart (runtime_api_summary, task_scheduler, ...) or raw table (api_calls, runs, ...); none with --all.",
            show_default=False,
        ),
    ] = None,
    run: common.RunsOpt = None,
    since: common.SinceOpt = None,
    until: common.UntilOpt = None,
    workload: common.WorkloadOpt = None,
    device: common.DeviceOpt = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format", "-f", show_default="csv", help=f"One of {', '.join(FORMATS)} (json: JSON lines)."
        ),
    ] = None,
    json_: common.AliasJsonOpt = False,
    out_path: common.OutOpt = "-",
    headers: Annotated[
        str,
        typer.Option(
            "--headers",
            help="CSV headers: display (the tool's names, e.g. Time(%), Stream ID) or snake (column names).",
        ),
    ] = "display",
    max_rows: Annotated[
        int | None,
        typer.Option(
            "--max-rows",
            metavar="N",
            show_default=False,
            help="CSV: split into numbered files of at most N rows, each with the header (out.csv -> out-0001.csv, out-0002.csv, ...); 1048575 fits a spreadsheet.",
        ),
    ] = None,
    all_tables: Annotated[
        bool,
        typer.Option(
            "--all", help="With --like msprof: every table msprof exports, of one run, into the folder --out."
        ),
    ] = False,
    like: Annotated[
        str | None,
        typer.Option(
            "--like",
            metavar="TOOL",
            show_default=False,
            help="With --all: msprof (its op_summary, op_statistic, api_statistic, task_time and aicpu CSV files, names, headers and units).",
        ),
    ] = None,
    warehouse: common.WarehouseOpt = None,
) -> None:
    """Export TABLE for the chosen runs (default: the latest); a file appears whole or not at all.

    Runs are chosen with --run, and/or by collection time with --since/--until, and/or by
    --workload; with more than one run a Run ID column comes first. CSV uses the
    profiling tool's display headers, writes numbers as plain numbers, NULL as an empty
    cell, and quotes text a spreadsheet would run as a formula; a time point on the wall
    clock (an exported run's start and end times) is ISO 8601 UTC text exact to the ns,
    which a spreadsheet would otherwise round to 15 digits. A CSV of more rows than a
    spreadsheet opens (1,048,576 lines with the header) is written with a warning;
    --max-rows splits it. Parquet keeps the contract's types and snake_case names.

    --all --like msprof --out DIR writes one run's tables as msprof's summary files
    (op_summary_0_1_<time>.csv, ...: a file per device, msprof's headers, times in us,
    N/A for what profetl lacks) for scripts written against msprof.

    Example: profetl export task_scheduler --since 7d --device 0 --format csv --out task_scheduler.csv

    Example: profetl export --all --like msprof --run latest --out msprof_files/
    """
    wh = common.warehouse(warehouse)
    with common.errors():
        fmt = common.output_format(fmt, json_, FORMATS, "csv")
        if all_tables or like is not None:
            _like(wh, table, run, since, until, workload, device, fmt, out_path, max_rows, all_tables, like)
            return
        if table is None:
            raise UsageError("name a TABLE to export (or --all --like msprof)")
        runs = select_runs(wh, common.selection(run, since, until, workload))
        done = export_table(wh, table, [r["run_id"] for r in runs], fmt, out_path, headers, device, max_rows)
    for w in done.warnings:
        common.err.print(f"profetl: warning: {w}", highlight=False, markup=False)
    if out_path != "-":
        where = (
            out_path
            if max_rows is None
            else f"{len(done.files)} file(s) {', '.join(str(p) for p, _ in done.files[:3])}{' ...' if len(done.files) > 3 else ''}"
        )
        common.err.print(
            f"wrote {done.rows} row(s) of {len(runs)} run(s) to {where}", highlight=False, markup=False
        )


def _like(wh, table, run, since, until, workload, device, fmt, out_path, max_rows, all_tables, like) -> None:
    from pathlib import Path

    from pipeline.outputs.msprof_files import export_msprof

    if not all_tables or like not in LIKE:
        raise UsageError(f"--all and --like go together: --all --like {' | '.join(LIKE)}")
    if table is not None:
        raise UsageError("--all exports every table msprof exports: leave out TABLE")
    if fmt != "csv" or max_rows is not None:
        raise UsageError(
            "--like msprof writes msprof's CSV files (sliced every 1,000,000 rows as msprof does): "
            "leave out --format and --max-rows"
        )
    if out_path == "-":
        raise UsageError("--like msprof writes several files: give --out a folder")
    runs = select_runs(wh, common.selection(run, since, until, workload))
    if len(runs) != 1:
        raise UsageError(f"--like msprof exports one run, and {len(runs)} are chosen: name one with --run")
    done = export_msprof(wh, runs[0]["run_id"], Path(out_path), device)
    common.err.print(
        f"wrote {done.rows} row(s) of run {done.run_id} in {len(done.files)} file(s) to {out_path}",
        highlight=False,
        markup=False,
    )
