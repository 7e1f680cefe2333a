"""profetl compare: a run against another run, or against the median of the last N runs of its workload."""

from __future__ import annotations

from typing import Annotated

import pyarrow as pa
import typer

from pipeline.analysis.compare import Comparison, compare
from pipeline.analysis.run_stats import DIMENSIONS, STATS
from pipeline.cli import common
from pipeline.errors import ExitCode, UsageError
from pipeline.outputs.formats import ROW_FORMATS, write_table
from pipeline.outputs.sections import cell

COLUMNS = [
    "level",
    "name",
    "before",
    "after",
    "change",
    "ratio",
    "before_count",
    "after_count",
    "status",
    "regression",
]


def _rows_table(cmp: Comparison) -> pa.Table:
    return pa.Table.from_pylist(
        [{k: getattr(c, k) for k in COLUMNS} for c in cmp.rows],
        schema=pa.schema(
            [
                ("level", pa.string()),
                ("name", pa.string()),
                ("before", pa.float64()),
                ("after", pa.float64()),
                ("change", pa.float64()),
                ("ratio", pa.float64()),
                ("before_count", pa.float64()),
                ("after_count", pa.float64()),
                ("status", pa.string()),
                ("regression", pa.bool_()),
            ]
        ),
    )


def _ratio(r: float | None) -> str:
    return "N/A" if r is None else f"{r:.3f}"


def _print(cmp: Comparison, limit: int | None) -> None:
    unit = f" ({cmp.unit})" if cmp.unit else ""
    common.out.print(f"Run {cmp.run_id} vs {cmp.baseline}", highlight=False, markup=False)
    common.out.print(
        f"workload {cmp.workload}; per {cmp.by}, {cmp.stat}{unit}", highlight=False, markup=False
    )
    for w in cmp.warnings:
        common.err.print(f"profetl: warning: {w}", highlight=False, markup=False)
    name_header = {"op": "Op Name", "api": "API", "task_type": "Type", "iteration": "Part"}[cmp.by]
    level_header = {"api": ["Level"], "iteration": ["Model ID"]}.get(cmp.by, [])
    headers = level_header + [name_header, f"Before{unit}", f"After{unit}", "Change", "Ratio", "Status"]
    rows = cmp.rows if limit is None else cmp.rows[:limit]
    table = [
        ([c.level] if level_header else [])
        + [
            c.name,
            cell(c.before),
            cell(c.after),
            cell(c.change),
            _ratio(c.ratio),
            c.status.upper() + " (regression)" if c.regression else c.status,
        ]
        for c in rows
    ]
    more = (
        f"{len(cmp.rows) - len(rows)} more row(s): --limit 0 shows all" if len(rows) < len(cmp.rows) else None
    )
    common.print_table(None, headers, table, caption=more)
    if cmp.threshold_pct is not None:
        n = len(cmp.regressions)
        common.out.print(
            f"{n} regression(s) at {cmp.threshold_pct:g}% or more"
            + (f" (entries from {cmp.min_value:g} up)" if cmp.min_value else ""),
            highlight=False,
            markup=False,
        )


def command(
    run: common.RunArg = "latest",
    against: Annotated[
        str | None,
        typer.Option(
            "--against",
            "-a",
            metavar="RUN",
            show_default=False,
            autocompletion=common.complete_run,
            help="Compare with this run.",
        ),
    ] = None,
    last: Annotated[
        int | None,
        typer.Option(
            "--last",
            "-n",
            metavar="N",
            show_default=False,
            help="Compare with the median of the last N runs of the same workload collected before RUN (default: the one run before it).",
        ),
    ] = None,
    by: Annotated[str, typer.Option("--by", help=f"Entries to compare: {', '.join(DIMENSIONS)}.")] = "op",
    stat: Annotated[
        str,
        typer.Option(
            "--stat",
            help=f"Statistic per entry: {', '.join(STATS)} (mean: time per task instance, call, iteration or all-reduce range, ns).",
        ),
    ] = "mean",
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            "-t",
            metavar="PCT",
            show_default=False,
            help="Exit 4 when an entry is at least PCT percent slower (ratio >= 1 + PCT/100).",
        ),
    ] = None,
    min_value: Annotated[
        float,
        typer.Option(
            "--min",
            metavar="VALUE",
            help="Noise floor: entries whose before and after are both below VALUE (ns for times) are never regressions.",
        ),
    ] = 0.0,
    workload: common.WorkloadOpt = None,
    device: common.DeviceOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="Rows to print in the terminal table (0: all).")] = 30,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            show_default=False,
            help=f"Write the rows as {', '.join(ROW_FORMATS)} (json: JSON lines) instead of a terminal table.",
        ),
    ] = None,
    out_path: common.OutOpt = "-",
    warehouse: common.WarehouseOpt = None,
    json_: common.JsonOpt = False,
) -> None:
    """Compare RUN with another run, or with the median of the last N runs of its workload.

    Per op, API, task type or part of a training iteration: the value before and after,
    change, ratio after/before, and whether the entry is new (only in RUN) or vanished (only
    in the baseline). Ops and task types are timed by their tasks' running time; APIs by
    their calls; --by iteration compares per model the Iteration Time, FP to BP Time,
    Iteration Refresh and Data Aug Bound of the step-trace iterations and the all-reduce
    Reduce Duration (step_trace_summary, step_trace_reduces). Values are
    summed over devices (or --device). The "same workload" is the workload column of
    `profetl runs`: layout, chip and the model names the run executed (a hash of its op
    names when there are none); --workload picks another.

    Exit codes: 0 no regression (or no --threshold); 4 an entry regressed by --threshold
    percent or more; 1 failure; 2 usage error.

    Example: profetl compare latest --last 7 --threshold 10 --min 1000
    """
    wh = common.warehouse(warehouse)
    with common.errors():
        if fmt is not None and json_:
            raise UsageError("give either --json or --format")
        cmp = compare(wh, run, against, last, by, stat, threshold, min_value, workload, device)
        if fmt is not None:
            n = write_table(_rows_table(cmp), fmt, out_path)
            if out_path != "-":
                common.err.print(f"wrote {n} row(s) to {out_path}", highlight=False, markup=False)
    if json_:
        common.print_json(cmp.as_dict())
    elif fmt is None:
        _print(cmp, limit or None)
    if cmp.regressions:
        raise typer.Exit(ExitCode.REGRESSION)
