"""profetl timeline: a run as a Chrome trace JSON for Perfetto UI or chrome://tracing."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.outputs.trace import write_trace


def command(
    run: common.RunArg = "latest",
    out_path: Annotated[str, typer.Option("--out", "-o", metavar="FILE", help="Trace file (.json, or .json.gz gzipped), or - for standard output.")] = "-",
    start: Annotated[str | None, typer.Option("--start", metavar="OFFSET", show_default=False, help="Window start after the run's first event: 250us, 3ms, 1.5s (plain numbers are ns).")] = None,
    end: Annotated[str | None, typer.Option("--end", metavar="OFFSET", show_default=False, help="Window end after the run's first event (same forms as --start).")] = None,
    inference: Annotated[int | None, typer.Option("--inference", metavar="N", show_default=False, help="Only the span of inference N on each device (its input start to output end there).")] = None,
    device: common.DeviceOpt = None,
    warehouse: common.WarehouseOpt = None,
    memory_limit: common.MemoryOpt = None,
    threads: common.ThreadsOpt = 0,
) -> None:
    """Write RUN as a Chrome trace (Trace Event JSON) that Perfetto UI and chrome://tracing open.

    One process per device with tracks for AscendCL and Runtime API calls (per thread),
    inferences, tasks per stream, and one track per task state (waiting, pending, running)
    per stream; slices that would overlap or touch on a track go to its next lane (#2, ...);
    arrows lead from a Runtime API call to the tasks it launched. ts is in microseconds after
    the run's first event, exact to the ns (ts * 1000 + otherData.ts_origin_ns = start_ns in
    the tables; otherData.clock names the clock). Events overlapping the window are kept whole. Events are written as they are made, so memory does not grow with the
    run; a whole run of millions of tasks still makes a file of about 160 bytes per event
    (a gigabyte for a 500 MB dump): choose a window or an inference for Perfetto UI.

    Example: profetl timeline latest --inference 2 --out run.json   (then open it at https://ui.perfetto.dev)
    """
    wh = common.warehouse(warehouse)
    with common.errors():
        run_id, n = write_trace(wh, out_path, run, start, end, inference, device, memory_limit, threads or None)
    if out_path != "-":
        common.err.print(f"wrote {n} event(s) of run {run_id} to {out_path}", highlight=False, markup=False)
