"""profetl site: the warehouse's runs as one offline static site, rebuilt incrementally."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import common


def command(
    out_dir: Annotated[
        str,
        typer.Option(
            "--out", "-o", metavar="DIR", help="The site's folder (made if missing; its parent must exist)."
        ),
    ] = "site",
    since: common.SinceOpt = None,
    report_nights: Annotated[
        int | None,
        typer.Option(
            "--report-nights",
            metavar="N",
            show_default=False,
            help="Write report pages only for the runs of the last N nights (older runs keep the page "
            "an earlier build wrote; a point without one links nowhere). Default: every run.",
        ),
    ] = None,
    warehouse: common.WarehouseOpt = None,
    fmt: common.TableOrJsonOpt = None,
    json_: common.AliasJsonOpt = False,
) -> None:
    """Write the warehouse's runs (or those collected --since WHEN) as a static site in DIR that
    opens offline, from the file system or any web server: DIR/index.html shows the workloads x
    the last 14 nights and the changes found (the nights where the level of a tracked metric
    changed, against its measured night-to-night noise: total AI Core time, the top 10 ops' and
    APIs' mean and total time, training step time; docs/site.md), each with the run columns
    that differ around it; a page per workload charts its metrics over time (click a point for
    the run's report); every run has its report page (--report-nights N: the runs of the last N
    nights; a first build of a year of nights writes a report per run, later ones only the new). DIR/changes.parquet holds every change
    for SQL. Run it again after `profetl run`: only what new runs change is rebuilt.

    Example: profetl site --out /srv/profetl-site --since 365d
    """
    json_ = common.wants_json(fmt, json_)
    wh = common.warehouse(warehouse)
    with common.errors():
        from pipeline.outputs.site import build_site

        when = common.selection(since=since).since
        b = build_site(wh.check(must_exist=True), out_dir, when, report_nights)
    said = {
        "path": str(b.out),
        "runs": b.runs,
        "workloads": b.workloads,
        "changes": b.changes,
        "runs_measured": b.runs_measured,
        "reports_written": b.reports_written,
        "reports_kept": b.reports_kept,
        "pages_written": b.pages_written,
        "pages_kept": b.pages_kept,
    }
    if json_:
        common.print_json(said)
        return
    common.err.print(
        f"wrote {b.out / 'index.html'}: {b.runs} run(s) of {b.workloads} workload(s), {b.changes} change(s); "
        f"{b.reports_written} report page(s) written ({b.reports_kept} kept), {len(b.pages_written)} other page(s) "
        f"written ({b.pages_kept} kept)",
        highlight=False,
        markup=False,
    )
