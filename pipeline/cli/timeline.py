"""profetl timeline: a run as a Chrome trace JSON for Perfetto UI or chrome://tracing."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.outputs.trace import write_trace


def command(
    run: common.RunArg = "latest",
    out_path: Annotated[
        str,
        typer.Option(
            "--out",
            "-o",
            metavar="FILE",
            help="Trace file (.json, or .json.gz gzipped), or - for standard output.",
        ),
    ] = "-",
    start: Annotated[
        str | None,
        typer.Option(
            "--start",
            metavar="OFFSET",
            show_default=False,
            help="Window start after the run's first event: 250us, 3ms, 1.5s (plain numbers are ns).",
        ),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            "--end",
            metavar="OFFSET",
            show_default=False,
            help="Window end after the run's first event (same forms as --start).",
        ),
    ] = None,
    inference: Annotated[
        int | None,
        typer.Option(
            "--inference",
            metavar="N",
            show_default=False,
            help="Only the span of inference N on each device (its input start to output end there).",
        ),
    ] = None,
    device: common.DeviceOpt = None,
    speedscope: Annotated[
        bool,
        typer.Option(
            "--speedscope",
            help="Write no args: speedscope takes a slice's args as part of its function's name, so only then do its Left Heavy and Sandwich views merge the calls of one API and the instances of one op.",
        ),
    ] = False,
    warehouse: common.WarehouseOpt = None,
    memory_limit: common.MemoryOpt = None,
    threads: common.ThreadsOpt = 0,
) -> None:
    """Write RUN as a Chrome trace (Trace Event JSON) that Perfetto UI and chrome://tracing open.

    One process per device with a track per host thread whose API calls (AscendCL, model,
    node, runtime) nest as they nest in time, inferences (each holding its input, infer and
    output phases), tasks per stream (each inside its inference), and one track per task
    state (waiting, pending, running) per stream. A slice's name is its function (the API,
    the op, the phase); inference numbers, ids and seq are in its args. A slice that would
    cross another on a track, or touch it, goes to its next lane (#2, ...; a task's
    inference is repeated there); arrows lead from a Runtime API call to the tasks it launched. ts is in microseconds after
    the run's first event, exact to the ns (ts * 1000 + otherData.ts_origin_ns = start_ns in
    the tables; otherData.clock names the clock). Events overlapping the window are kept whole. Events are written as they are made, so memory does not grow with the
    run; a whole run of millions of tasks still makes a file of about 160 bytes per event
    (a gigabyte for a 500 MB dump): choose a window or an inference for Perfetto UI.

    Example: profetl timeline latest --inference 2 --out run.json   (then open it at https://ui.perfetto.dev;
    with --speedscope at https://www.speedscope.app)
    """
    wh = common.warehouse(warehouse)
    with common.errors():
        run_id, n = write_trace(
            wh,
            out_path,
            run,
            start,
            end,
            inference,
            device,
            memory_limit,
            threads or None,
            instance_args=not speedscope,
        )
    if out_path != "-":
        common.err.print(f"wrote {n} event(s) of run {run_id} to {out_path}", highlight=False, markup=False)
