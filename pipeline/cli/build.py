"""profetl build: run the SQL transforms for runs already ingested."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.errors import DamagedPart, ExitCode
from pipeline.jobs.runner import rebuild
from pipeline.limits import describe_memory_limit


def command(
    run_ids: Annotated[
        list[str] | None,
        typer.Argument(
            help="Runs to build (id, unique prefix or latest); default: runs not built yet.",
            show_default=False,
        ),
    ] = None,
    all_runs: Annotated[bool, typer.Option("--all", help="Rebuild every run.")] = False,
    warehouse: common.WarehouseOpt = None,
    wait: common.WaitOpt = 0.0,
    memory_limit: common.MemoryOpt = None,
    threads: common.ThreadsOpt = 0,
    workers: common.WorkersOpt = None,
    scheduler: common.SchedulerOpt = None,
    fmt: common.TableOrJsonOpt = None,
    json_: common.AliasJsonOpt = False,
) -> None:
    """Build the report tables (marts) of ingested runs from their raw tables.

    With --workers or --scheduler each run's devices are built as Dask tasks.

    Example: profetl build latest

    Example: profetl build --all --workers 4
    """
    json_ = common.wants_json(fmt, json_)
    wh = common.warehouse(warehouse)
    done, damaged = [], []
    with (
        common.errors(),
        common.cluster(workers, scheduler) as cluster,
        common.writing(wh.check(must_exist=True), wait),
    ):
        run_index = wh.run_index()
        if run_ids:
            targets = [run_index.resolve_run(r) for r in run_ids]
        else:
            targets = [r for r in run_index.run_records() if all_runs or not r.get("build_id")]
        with common.job_progress(len(targets), enabled=not json_) as next_run:
            for run in targets:
                next_run(run["run_id"])
                try:
                    o = rebuild(wh, run, memory_limit, threads or None, cluster)
                except DamagedPart as e:  # that run is not built; the others still are
                    damaged.append(e)
                    continue
                done.append(o)
    if json_:
        common.print_json(
            [{"run_id": o.run_id, **common.build_json(o.build), "issues": o.issues} for o in done]
        )
    else:
        if not done and not damaged:
            common.out.print("nothing to build (every run is built; --all rebuilds)")
        for o in done:
            common.out.print(f"built      {o.run_id} in {o.build.seconds:.2f} s", highlight=False)
            for line in o.issues:
                common.out.print(f"           - {line}", highlight=False, markup=False)
        if done:  # the limit every build above had, and where it comes from
            common.out.print(f"DuckDB memory limit {describe_memory_limit(memory_limit)}", highlight=False)
    for e in damaged:
        common.err.print(f"profetl: error: {e}", highlight=False, markup=False)
    if damaged:
        raise typer.Exit(ExitCode.FAILED)
