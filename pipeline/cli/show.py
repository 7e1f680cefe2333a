"""profetl show: a run's tables in the terminal, shaped like the profiling tool's result views."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.errors import UnknownRun, UsageError
from pipeline.outputs.export import table_contract, unbuilt_runs
from pipeline.outputs.sections import TABLES, VIEWS, sections
from pipeline.warehouse.store import Warehouse


def print_run(
    wh: Warehouse,
    run_ref: str,
    table: str | None,
    limit: int | None,
    as_json: bool = False,
    devices: list[int] | None = None,
) -> None:
    run = wh.run_index().resolve_run(run_ref)
    tables = [table] if table else [t for t, _ in VIEWS]
    marts = [c for c in map(table_contract, tables) if c.layer == "marts"]
    if marts:  # a mart of a run not built: say so rather than show it empty
        unbuilt_runs(wh, marts[0], [run["run_id"]])
    found = [s for t in tables for s in sections(wh, run["run_id"], t, limit, devices=devices)]
    if as_json:
        common.print_json(
            [
                {"table": s.table, "headers": s.headers, "rows": s.rows, "total_rows": s.total_rows}
                for s in found
            ]
        )
        return
    devices = ",".join(map(str, run["devices"] or [])) or "N/A"
    common.out.print(
        f"Run {run['run_id']}  ({run['chip'] or 'N/A'}, devices {devices}, {run['source_path']})",
        highlight=False,
    )
    for line in run.get("sources") or []:
        common.out.print(f"  read: {line}", highlight=False, markup=False)
    for line in run.get("notes") or []:
        common.out.print(f"  not available: {line}", highlight=False, markup=False)
    for s in found:
        more = (
            f"{s.total_rows - len(s.rows)} more row(s): --limit 0 shows all"
            if len(s.rows) < s.total_rows
            else None
        )
        if not s.total_rows:
            common.out.print(f"\n{s.title}: no rows for this run", highlight=False)
            continue
        # what a row is about (names, ids, type) before its numbers, when not every column fits
        about = [
            i for i, h in enumerate(s.headers) if "Name" in h or h.endswith(" ID") or h in ("Type", "API")
        ]
        common.print_table(
            s.title,
            s.headers,
            s.rows,
            caption=more,
            priority=about + [i for i in range(len(s.headers)) if i not in about],
            see_all=f"profetl show {run['run_id']} {s.table} --json, or profetl export, shows all",
        )


def command(
    run: common.RunArg = "latest",
    table: Annotated[
        str | None,
        typer.Argument(
            autocompletion=lambda incomplete: [t for t in TABLES if t.startswith(incomplete)],
            help=f"One of: {', '.join(TABLES)}. Default: the five result views.",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Rows per table (0: all).")] = 50,
    device: common.DeviceOpt = None,
    warehouse: common.WarehouseOpt = None,
    fmt: common.TableOrJsonOpt = None,
    json_: common.AliasJsonOpt = False,
) -> None:
    """Show a run's Runtime API, Task Scheduler, AI Core, AscendCL and top-down tables.

    Each table is shaped like the profiling tool's figure: its column headers, one block
    per device, N/A for a value the run cannot have; metrics the run's event set cannot
    fill are left out.

    Example: profetl show latest task_scheduler --limit 10
    """
    json_ = common.wants_json(fmt, json_)
    if table is not None and table not in TABLES:
        common.err.print(
            f"profetl: error: no table {table!r}; use one of {', '.join(TABLES)}", highlight=False
        )
        raise typer.Exit(2)
    wh = common.warehouse(warehouse)
    with common.errors():
        if table is None and run in TABLES:  # `show task_scheduler`: a table where the run goes
            try:
                wh.run_index().resolve_run(run)
            except UnknownRun:
                raise UsageError(
                    f"{run!r} is a table, not a run: the run comes first, e.g. profetl show latest {run}"
                ) from None
        print_run(wh, run, table, limit or None, json_, device)
