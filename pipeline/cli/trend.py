"""profetl trend: one metric over the runs in the warehouse, as a table and a plot."""

from __future__ import annotations

from typing import Annotated

import pyarrow as pa
import typer

from pipeline.analysis.run_stats import RUN_METRICS, STATS
from pipeline.analysis.trend import Trend, trend
from pipeline.cli import common
from pipeline.errors import UsageError
from pipeline.outputs.formats import ROW_FORMATS, write_table
from pipeline.outputs.plot import write_plot
from pipeline.outputs.sections import cell


def _table(t: Trend) -> pa.Table:
    return pa.table(
        {
            "run_id": pa.array([p.run_id for p in t.points], pa.string()),
            "collected_at": pa.array([p.collected_at for p in t.points], pa.timestamp("us", tz="UTC")),
            "workload": pa.array([p.workload for p in t.points], pa.string()),
            "value": pa.array([p.value for p in t.points], pa.float64()),
            "count": pa.array([p.count for p in t.points], pa.int64()),
        }
    )


def command(
    metric: Annotated[
        str,
        typer.Argument(
            metavar="KIND:NAME",
            help=f"op:NAME, api:NAME, task_type:NAME, or run:METRIC with METRIC one of {', '.join(RUN_METRICS)}.",
            show_default=False,
        ),
    ],
    stat: Annotated[
        str,
        typer.Option(
            "--stat",
            help=f"For op, api and task_type: {', '.join(STATS)} (mean: ns per task instance or call).",
        ),
    ] = "mean",
    run: common.RunsOpt = None,
    since: common.SinceOpt = None,
    until: common.UntilOpt = None,
    workload: common.WorkloadOpt = None,
    last: common.LastOpt = None,
    device: common.DeviceOpt = None,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot",
            metavar="FILE",
            show_default=False,
            help="Also draw the trend: FILE.svg or FILE.png (time axis, one line per workload).",
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            show_default=False,
            help=f"Write the points as {', '.join(ROW_FORMATS)} (json: JSON lines) instead of a terminal table.",
        ),
    ] = None,
    out_path: common.OutOpt = "-",
    warehouse: common.WarehouseOpt = None,
    json_: common.JsonOpt = False,
) -> None:
    """Show one metric in every run (or the chosen runs), oldest collection first.

    An op's or task type's value sums its tasks over the run's devices (or --device); an
    API's sums its calls. A run without the entry shows N/A and breaks the plotted line.
    Combine with --workload so that only comparable runs are on the line.

    Example: profetl trend op:conv2d_0 --stat mean --since 30d --workload hiprof_result_dir/Ascend310/resnet50 --plot conv.svg
    """
    wh = common.warehouse(warehouse)
    with common.errors():
        if fmt is not None and json_:
            raise UsageError("give either --json or --format")
        t = trend(wh, metric, stat, common.selection(run, since, until, workload, last), device)
        if plot:
            write_plot(t, plot)
        if fmt is not None:
            write_table(_table(t), fmt, out_path)
    for w in t.warnings:
        common.err.print(f"profetl: warning: {w}", highlight=False, markup=False)
    if json_:
        common.print_json(t.as_dict())
    elif fmt is None:
        common.print_table(
            f"{t.label}: {t.meaning}",
            ["Run ID", "Collected (UTC)", "Workload", "Value", "Count"],
            [
                [
                    p.run_id,
                    p.collected_at.strftime("%Y-%m-%d %H:%M:%S") if p.collected_at else "N/A",
                    p.workload or "N/A",
                    cell(p.value),
                    cell(p.count),
                ]
                for p in t.points
            ],
        )
    if plot and plot != "-":
        common.err.print(f"wrote the plot to {plot}", highlight=False, markup=False)
