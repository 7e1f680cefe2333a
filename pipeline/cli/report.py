"""profetl report: one run as a self-contained HTML report."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.outputs.html_report import TREND_RUNS, write_report


def command(
    run: common.RunArg = "latest",
    out_path: Annotated[
        str, typer.Option("--out", "-o", metavar="FILE", help="The HTML file to write.")
    ] = "report.html",
    trend_runs: Annotated[
        int,
        typer.Option(
            "--trend-runs",
            metavar="N",
            help="Runs of the workload the trend chart spans (this one and those before it).",
        ),
    ] = TREND_RUNS,
    warehouse: common.WarehouseOpt = None,
    fmt: common.TableOrJsonOpt = None,
    json_: common.AliasJsonOpt = False,
) -> None:
    """Write RUN as one HTML file that opens offline (scripts and styles inside): metadata and
    data accounting, top ops, Task Scheduler states, AI Core pipeline ratios and memory-bound
    ops, top-down time per inference, the parts of each training iteration (step trace with FP
    and BP), the advice findings (with regressions against the last 5
    runs of the workload) and, when the warehouse has earlier runs of the workload, the trend
    of the top ops. Charts are aggregated first: the file stays about 5 MB for any run size.

    Example: profetl report latest --out report.html
    """
    json_ = common.wants_json(fmt, json_)
    wh = common.warehouse(warehouse)
    with common.errors():
        w = write_report(wh.check(must_exist=True), out_path, run, trend_runs)
    if json_:
        common.print_json({"path": str(w.path), "bytes": w.bytes, "charts": w.charts, "findings": w.findings})
        return
    common.err.print(
        f"wrote {w.path} ({w.bytes / 1e6:.1f} MB, {w.charts} chart(s), {w.findings} finding(s))",
        highlight=False,
        markup=False,
    )
