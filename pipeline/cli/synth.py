"""profetl synth: write a synthetic dump with known content."""

from __future__ import annotations

import json
import tempfile
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli import common
from pipeline.errors import UsageError
from pipeline.outputs.formats import check_out_file
from pipeline.synth import prof as synth_prof
from pipeline.synth.hiprof import METRIC_SET_EVENTS, HiprofConfig, generate
from pipeline.synth.scale import copies_for, scale

# devices of one dump: PROF_* dumps number the host 64, after the devices 0-63
MAX_DEVICES = 64
SLICE_BYTES = 4096  # small slices, so that a small dump exercises reading across slices
SCALED_SLICE_BYTES = 64 << 20  # a dump of --mb N: slices of the size real collections write


def command(
    out_dir: Annotated[
        Path, typer.Argument(help="Directory to create (must not exist or be empty).", show_default=False)
    ],
    layout: Annotated[
        str,
        typer.Option(
            "--layout",
            help="Layout to write: hiprof (generation 1 result_dir) or prof (msprof PROF_* trees, generations 2 and 3).",
        ),
    ] = "hiprof",
    chip: Annotated[
        str, typer.Option("--chip", help=f"With --layout prof: {', '.join(synth_prof.CHIPS)}.")
    ] = "ascend910a",
    processes: Annotated[
        int,
        typer.Option(
            "--processes",
            help="With --layout prof: PROF_* directories of the job (devices split between them).",
        ),
    ] = 1,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed writes the same bytes.")] = 0,
    devices: Annotated[
        int | None, typer.Option(help="Devices (default 1 for hiprof, 2 for prof).", show_default=False)
    ] = None,
    streams: Annotated[int, typer.Option(help="Streams per device.")] = 2,
    inferences: Annotated[int, typer.Option(help="Inferences per device.")] = 3,
    tasks: Annotated[int, typer.Option(help="Kernel tasks per inference.")] = 8,
    slice_bytes: Annotated[
        int | None,
        typer.Option(
            "--slice-bytes",
            help=f"Slice size in bytes (default {SLICE_BYTES}; with --mb {SCALED_SLICE_BYTES >> 20} MiB).",
            show_default=False,
        ),
    ] = None,
    mb: Annotated[
        float | None,
        typer.Option(
            "--mb",
            metavar="N",
            help="Write a dump of about N MB (10^6 bytes): the dump the other options describe, repeated along its timeline as often as that takes (as bench/run.py sizes its dumps); the counts printed are of one copy.",
            show_default=False,
        ),
    ] = None,
    aicore: Annotated[
        bool, typer.Option("--aicore/--no-aicore", help="Write aicore.data (AI Core PMU).")
    ] = True,
    metric_set: Annotated[
        str | None,
        typer.Option(
            "--metric-set",
            help=f"AI Core metric set. hiprof: one of {', '.join(METRIC_SET_EVENTS)} (default aicorePipeline); prof: one of {', '.join(synth_prof.METRIC_SETS)} (default: the chip's, PipeUtilization or Memory on ascend310p).",
            show_default=False,
        ),
    ] = None,
    old_driver: Annotated[
        bool,
        typer.Option(
            "--old-driver",
            help="With --layout prof: info.json without drvVersion, as drivers before 0x072211 wrote (batch ids from task-id wrap-around).",
        ),
    ] = False,
    drop_complete: Annotated[
        int, typer.Option("--drop-complete", help="Task instances to write without COMPLETE.")
    ] = 0,
    names: Annotated[
        str, typer.Option(help="slice (<name>.<dev>.slice_N) or legacy (older <name>.<dev>.<n>).")
    ] = "slice",
    truth: Annotated[
        Path | None, typer.Option("--truth", help="Also write every event as JSON to this file.")
    ] = None,
    start: Annotated[
        datetime | None,
        typer.Option(
            "--start",
            metavar="DATETIME",
            help="Collection start (UTC); dumps with different starts are different runs. Default 2026-01-01T00:00:00.",
            show_default=False,
        ),
    ] = None,
    op_scale: Annotated[
        list[str] | None,
        typer.Option(
            "--op-scale",
            metavar="OP=FACTOR",
            help="OP=FACTOR: multiply the running time of op OP (e.g. conv2d_0=1.3); repeatable.",
            show_default=False,
        ),
    ] = None,
    fmt: common.TableOrJsonOpt = None,
    json_: common.AliasJsonOpt = False,
) -> None:
    """Write a complete, consistent synthetic dump, and optionally its ground truth.

    Ops are named <type>_<n>: conv2d_0, matmul_1, add_2, relu_3, cast_4, transdata_5, ...

    Example: profetl synth --layout hiprof --devices 2 --inferences 5 --start 2026-03-02T01:00 --op-scale conv2d_0=1.3 dump

    Example: profetl synth --layout prof --chip ascend910b --devices 4 --processes 2 job

    Example: profetl synth --layout prof --chip ascend910b --devices 1 --mb 300 big
    """
    json_ = common.wants_json(fmt, json_)
    with common.errors():
        if layout not in ("hiprof", "prof"):
            raise UsageError(f"layout {layout!r}; this version writes: hiprof, prof")
        counts = {
            "--devices": devices,
            "--streams": streams,
            "--inferences": inferences,
            "--tasks": tasks,
            "--processes": processes,
            "--slice-bytes": slice_bytes,
        }
        for option, n in counts.items():
            if n is not None and n < 1:
                raise UsageError(f"{option} {n}: give 1 or more")
        if devices is not None and devices > MAX_DEVICES:
            raise UsageError(f"--devices {devices}: at most {MAX_DEVICES} (a host's device ids)")
        if drop_complete < 0:
            raise UsageError(f"--drop-complete {drop_complete}: give 0 or more")
        if truth is not None:
            check_out_file(truth)  # before the dump is written, not after
        if out_dir.exists() and any(out_dir.iterdir()):
            raise UsageError(f"{out_dir} exists and is not empty")
        if mb is not None:
            if mb <= 0:
                raise UsageError(f"--mb {mb:g}: the size must be above 0")
            if truth:
                raise UsageError(
                    "--truth holds the events of one copy of the base, not of the dump --mb writes"
                )
            if names != "slice":
                raise UsageError("--mb writes slice names (<name>.<dev>.slice_N), not --names legacy")
        # with --mb the dump the options describe is a base, written with every stream in one
        # slice, then repeated along its timeline to the size (pipeline.synth.scale, as the bench does)
        with tempfile.TemporaryDirectory(prefix="profetl-synth-") if mb is not None else nullcontext() as tmp:
            dest = Path(tmp) / "base" if tmp else out_dir
            each = 1 << 40 if tmp else slice_bytes or SLICE_BYTES
            if layout == "prof":
                t = _prof(
                    dest,
                    chip,
                    processes,
                    seed,
                    devices,
                    streams,
                    inferences,
                    tasks,
                    each,
                    start,
                    op_scale,
                    metric_set,
                    old_driver,
                )
            else:
                t = _hiprof(
                    dest,
                    seed,
                    devices,
                    streams,
                    inferences,
                    tasks,
                    each,
                    aicore,
                    metric_set,
                    old_driver,
                    drop_complete,
                    names,
                    start,
                    op_scale,
                )
            if truth:
                truth.write_text(json.dumps(t.as_dict()))
            copies = 1
            if tmp:
                copies = copies_for(dest, mb * 1e6)
                scale(dest, out_dir, copies, slice_bytes=slice_bytes or SCALED_SLICE_BYTES)
    size = sum(p.stat().st_size for p in out_dir.rglob("*") if p.is_file())
    sized = {"copies": copies} if mb is not None else {}
    of = f": {copies} copies of" if mb is not None else ","
    if layout == "prof":
        dump = out_dir / t.root if t.root else out_dir
        if json_:
            common.print_json(
                {
                    "out": str(out_dir),
                    "dump": str(dump),
                    "chip": t.chip,
                    "metric_set": t.metric_set,
                    "bytes": size,
                    **sized,
                    "devices": len(t.devices),
                    "api_calls": len(t.api_calls),
                    "device_logs": len(t.logs),
                    "pmu_records": len(t.pmu),
                }
            )
            return
        common.out.print(
            f"wrote {dump} ({t.chip}, {t.metric_set}, {len(t.devices)} devices, {size} bytes{of} "
            f"{len(t.logs)} device task logs, {len(t.api_calls)} API calls)",
            highlight=False,
        )
        return
    if json_:
        common.print_json(
            {
                "out": str(out_dir),
                "bytes": size,
                **sized,
                "task_states": len(t.states),
                "api_calls": len(t.api_calls),
                "task_instances": len(t.instances),
                "ops": sorted({o.op_name for o in t.ops}),
            }
        )
        return
    common.out.print(
        f"wrote {out_dir} ({size} bytes{of} {len(t.states)} task states, {len(t.api_calls)} API calls)",
        highlight=False,
    )


def _hiprof(
    out_dir,
    seed,
    devices,
    streams,
    inferences,
    tasks,
    slice_bytes,
    aicore,
    metric_set,
    old_driver,
    drop_complete,
    names,
    start,
    op_scale,
):
    """--layout hiprof: a result_dir written by pipeline.synth.hiprof; returns its truth."""
    if old_driver:
        raise UsageError("--old-driver is for --layout prof")
    if names not in ("slice", "legacy"):
        raise UsageError("--names takes slice or legacy")
    metric_set = metric_set or "aicorePipeline"
    if metric_set not in METRIC_SET_EVENTS:
        raise UsageError(f"metric set {metric_set!r}; use one of {', '.join(METRIC_SET_EVENTS)}")
    extra = {"op_scale": _scales(op_scale or []), **_start(start)}
    cfg = HiprofConfig(
        seed=seed,
        devices=devices or 1,
        streams=streams,
        inferences=inferences,
        tasks=tasks,
        slice_bytes=slice_bytes,
        aicore=aicore,
        metric_set=metric_set,
        drop_complete=drop_complete,
        names=names,
        **extra,
    )
    return generate(out_dir, cfg)


def _start(start) -> dict:
    """--start as the config's ``start_us`` (a time without a zone is UTC); none: the default."""
    if start is None:
        return {}
    utc = start if start.tzinfo else start.replace(tzinfo=UTC)
    return {"start_us": int(utc.timestamp()) * 1_000_000 + utc.microsecond}


def _prof(
    out_dir,
    chip,
    processes,
    seed,
    devices,
    streams,
    inferences,
    tasks,
    slice_bytes,
    start,
    op_scale,
    metric_set,
    old_driver,
):
    """--layout prof: a PROF_* tree (or a job of several) written by pipeline.synth.prof; returns its truth."""
    if chip not in synth_prof.CHIPS:
        raise UsageError(f"chip {chip!r}; use one of {', '.join(synth_prof.CHIPS)}")
    if op_scale:
        raise UsageError("--op-scale is for --layout hiprof")
    if metric_set is not None and metric_set not in synth_prof.METRIC_SETS:
        raise UsageError(
            f"metric set {metric_set!r} for --layout prof; use one of {', '.join(synth_prof.METRIC_SETS)} "
            "(msprof's names, as a PROF_* sample.json carries them)"
        )
    extra = _start(start)
    cfg = synth_prof.ProfConfig(
        chip=chip,
        processes=processes,
        seed=seed,
        devices=devices or 2,
        streams=streams,
        inferences=inferences,
        tasks=tasks,
        slice_bytes=slice_bytes,
        metric_set=metric_set,
        old_driver=old_driver,
        **extra,
    )
    return synth_prof.generate(out_dir, cfg)


def _scales(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, factor = item.partition("=")
        try:
            value = float(factor)
        except ValueError:
            value = -1.0
        if not sep or not name or value <= 0:
            raise UsageError(f"--op-scale takes OP=FACTOR with FACTOR > 0, not {item!r}")
        out[name] = value
    return out
