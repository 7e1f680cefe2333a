"""profetl run: ingest and build every dump under the given roots (the nightly entry point)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.errors import ExitCode, UsageError
from pipeline.jobs.runner import Outcome, check_inputs, run_roots
from pipeline.limits import describe_memory_limit, size_bytes


def command(
    roots: Annotated[
        list[Path],
        typer.Argument(help="Dump directories, or folders to search for dumps.", show_default=False),
    ],
    warehouse: common.WarehouseOpt = None,
    wait: common.WaitOpt = 0.0,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Re-ingest dumps whose content is unchanged; replace a run even when its changed dump now holds less (fewer records, more bytes skipped, metadata gone), or when its commit record cannot be read.",
        ),
    ] = False,
    show: Annotated[
        bool, typer.Option("--show", help="Print the five tables of each run afterwards.")
    ] = False,
    memory_limit: common.MemoryOpt = None,
    threads: common.ThreadsOpt = 0,
    read_threads: common.ReadThreadsOpt = 1,
    workers: common.WorkersOpt = None,
    scheduler: common.SchedulerOpt = None,
    budget: Annotated[
        str | None,
        typer.Option(
            "--budget",
            help="With --workers or --scheduler: the data bytes the dumps read and built at once may hold together, e.g. 8GB (a dump bigger runs alone). Default: the workers' total memory limit.",
            show_default=False,
        ),
    ] = None,
    tag: common.TagOpt = None,
    fmt: common.TableOrJsonOpt = None,
    json_: common.AliasJsonOpt = False,
) -> None:
    """Ingest and build every dump found under ROOTS, each as its own run.

    Keeps going when a dump fails and ends with a summary. Exit codes: 0 every dump
    built or unchanged, nothing lost; 1 some dumps failed (each is named with its reason);
    2 usage error (no ROOT exists: nothing is done); 3 the warehouse is locked
    by another live writer; 5 every dump built or unchanged, but some built with data lost
    (bytes skipped, unreadable metadata, missing files or slices: each is listed with its
    issues); 6 the --scheduler cannot be reached.

    With --workers or --scheduler each dump's devices are read and built as Dask tasks, several
    dumps at once within --budget, and each run is committed here, whole, as soon as all its
    tasks are done.

    Example: profetl run data/sample --show

    Tags (--tag, and a profetl-tags.toml in a dump's folder) are recorded with each run; an
    unchanged dump given other tags is not read again, its run is recorded again with them.

    Example: profetl run /nfs/dumps/2026-12-03 --scheduler tcp://head:8786

    Example: profetl run data/sample --tag commit=3f2a9c1 --tag model_version=v7
    """
    json_ = common.wants_json(fmt, json_)
    tags = common.tags(tag)
    wh = common.warehouse(warehouse)
    with common.errors():
        check_inputs(roots)  # no root is there: exit 2 before the warehouse is touched
        night_budget = _budget(budget, workers, scheduler)
    with (
        common.errors(),
        common.readers(read_threads) as readers,
        common.cluster(workers, scheduler) as cluster,
        common.writing(wh, wait),
    ):
        with common.job_progress(enabled=not json_) as next_dump:
            outcomes = run_roots(
                wh,
                roots,
                force=force,
                memory_limit=memory_limit,
                threads=threads or None,
                on_dump=next_dump,
                cluster=cluster,
                readers=readers,
                tags=tags,
                night_budget=night_budget,
            )
    if json_:
        common.print_json([_summary(o) for o in outcomes])
    else:
        for o in outcomes:
            _print_outcome(o)
        ok = sum(o.status != "failed" for o in outcomes)
        lossy = sum(bool(o.losses) for o in outcomes if o.status != "failed")
        common.out.print(
            f"{len(outcomes)} dump(s): {ok} done, {len(outcomes) - ok} failed"
            + (f", {lossy} built with data lost (see their issues)" if lossy else ""),
            highlight=False,
        )
        if any(o.status != "unchanged" for o in outcomes):  # a dump was built, or its build tried
            common.out.print(f"DuckDB memory limit {describe_memory_limit(memory_limit)}", highlight=False)
        if show:
            from pipeline.cli.show import print_run  # the report code loads only for --show

            for o in outcomes:
                if o.run_id and o.status != "failed":
                    with common.errors():
                        print_run(wh, o.run_id, None, limit=None)
    if any(o.status == "failed" for o in outcomes):
        raise typer.Exit(ExitCode.FAILED)
    if any(o.losses for o in outcomes):
        raise typer.Exit(ExitCode.DATA_LOSS)


def _budget(budget: str | None, workers: int | None, scheduler: str | None) -> int | None:
    """``--budget`` in bytes (None: not given); a usage error when it is not a size, or is
    given without a cluster, where dumps run one after another."""
    if budget is None:
        return None
    if workers is None and scheduler is None:
        raise UsageError("--budget bounds the dumps run at once on a cluster: give --workers or --scheduler")
    try:
        n = size_bytes(budget)
    except ValueError as e:
        raise UsageError(f"--budget {budget}: {e}") from None
    if n < 1:
        raise UsageError(f"--budget {budget}: must be more than 0 bytes")
    return n


def _summary(o: Outcome) -> dict:
    """One dump in `run --json`; ``ingest`` and ``build`` are null for the steps not taken
    (an unchanged dump is not read again; a failed one may lack both)."""
    row = (o.ingest.row if o.ingest else {}) or {}
    read = o.ingest is not None and not o.ingest.skipped
    return {
        "source_path": o.source_path,
        "status": o.status,
        "run_id": o.run_id,
        "error": o.error,
        "records_decoded": row.get("records_decoded"),
        "bytes_skipped": row.get("bytes_skipped"),
        "issues": o.issues,
        "data_lost": o.losses,
        "tags": row.get("tags"),
        "replaced": (
            {
                k: (o.ingest.replaced.get(k))
                for k in ("ingest_id", "ingested_at", "source_path", "records_decoded", "bytes_skipped")
            }
            if o.ingest and o.ingest.replaced
            else None
        ),
        "ingest": {"rows": o.ingest.rows_by_table, "seconds": row.get("ingest_seconds")} if read else None,
        "build": common.build_json(o.build) if o.build else None,
    }


def _print_outcome(o: Outcome) -> None:
    if o.status == "failed":
        reason = o.error or ""
        if reason.startswith(f"{o.source_path}: "):  # errors name their file; the dump's is said once
            reason = reason[len(o.source_path) + 2 :]
        common.out.print(f"failed     {o.source_path}: {reason}", highlight=False, markup=False)
        return
    row = o.ingest.row if o.ingest else {}
    detail = ""
    if o.status != "unchanged" and row:
        detail = f" ({row['records_decoded']} records, {row['bytes_skipped']} bytes skipped, {len(o.issues)} issue(s))"
        if o.losses:
            detail += " DATA LOST: " + ", ".join(f"{n} {kind}" for kind, n in sorted(o.losses.items()))
    label = o.label
    if label == "retagged":
        detail = common.RETAGGED
    old = o.ingest.replaced if o.ingest else None
    if old:  # every replacement is said, with what it replaced
        label = "replaced"
        detail += (
            f"; replaced the run ingested {old['ingested_at']:%Y-%m-%d %H:%M:%S} UTC from "
            f"{old['source_path']} ({old['records_decoded']} records, {old['bytes_skipped']} bytes skipped)"
        )
    common.out.print(f"{label:<10} {o.run_id}  {o.source_path}{detail}", highlight=False, markup=False)
    for line in o.issues[:10]:
        common.out.print(f"           - {line}", highlight=False, markup=False)
    if len(o.issues) > 10:
        common.out.print(
            f'           ... {len(o.issues) - 10} more (profetl query "select * from ingest_issues")',
            highlight=False,
            markup=False,
        )
