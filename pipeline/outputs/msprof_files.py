"""A run's tables as msprof's summary CSV files: its file names, headers, units and its N/A for
a missing value, so that scripts written against msprof's exports read them unchanged, whatever
generation the run was read from (docs/formats.md#msprof-files).

One mapping per msprof file kind (a ``MsprofFile``; ``files_for`` gives a chip's): the mart it
comes from, and for every msprof column its header and the SQL that makes the cell from the
mart's row. Times leave integer ns
as microseconds with exactly 3 decimals (exact: ns are whole); a start or stop time is a
wall-clock microsecond followed by a tab, as msprof writes it; ratios and percentages are
rounded to 3 decimals. A column profetl does not have, and a NULL, is ``N/A``.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pipeline.errors import UsageError
from pipeline.outputs import formats
from pipeline.outputs.export import WALL_CLOCK_NS
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import read_consistent

NA = "N/A"
HOST = 64  # profetl's device id of the host; msprof names no device for it
ITERATION = 1  # msprof puts the iteration in a device file's name; an export of the whole run is iteration 1
SLICE_ROWS = 1_000_000  # msprof starts a new file (_slice_<k>) every this many rows
ASCEND310 = "Ascend310"  # the chip whose task_time file msprof fills with the Task Scheduler


def _text(col: str) -> str:
    return f"coalesce({col}::VARCHAR, '{NA}')"


def _us(col: str) -> str:
    """Integer ns as us with 3 decimals, exactly."""
    return (
        f"CASE WHEN {col} IS NULL THEN '{NA}' ELSE printf('%s%d.%03d', CASE WHEN {col} < 0 THEN '-' ELSE '' END, "
        f"abs({col}) // 1000, abs({col}) % 1000) END"
    )


def _wall_us(col: str) -> str:
    """A time point in ns as wall-clock us with 3 decimals and msprof's trailing tab: the
    run's clock plus the device's offset to the Unix epoch (none for a time already on the
    wall clock, or when the offset is unknown)."""
    wall = f"({col} + CASE WHEN {col} >= {WALL_CLOCK_NS} THEN 0 ELSE coalesce(_wall_offset_ns, 0) END)"
    return f"CASE WHEN {col} IS NULL THEN '{NA}' ELSE {_us(wall)} || chr(9) END"


def _avg_us(total: str, count: str) -> str:
    """total / count ns as us with 3 decimals, rounded half away from zero, exactly."""
    q = f"(CASE WHEN {total} < 0 THEN -1 ELSE 1 END * ((2 * abs({total}::HUGEINT) + {count}) // (2 * {count})))::BIGINT"
    return f"CASE WHEN {count} > 0 THEN {_us(q)} ELSE '{NA}' END"


def _r3(col: str, scale: str = "") -> str:
    """A float rounded to 3 decimals (``scale``: an expression to apply first, e.g. ``/ 1000``)."""
    return f"CASE WHEN isfinite(({col}){scale}) THEN printf('%.3f', ({col}){scale}) ELSE '{NA}' END"


def _device() -> str:
    return f"CASE WHEN device_id = {HOST} THEN 'host' ELSE device_id::VARCHAR END"


@dataclass(frozen=True)
class MsprofFile:
    """One msprof file kind: made from ``table``, a file per device, ``columns`` in msprof's
    order as (msprof header, SQL over the table's row), rows in ``order``."""

    kind: str
    table: str
    columns: tuple[tuple[str, str], ...]
    order: str

    @property
    def header(self) -> list[str]:
        return [h for h, _ in self.columns]


OP_SUMMARY = MsprofFile(
    "op_summary",
    "op_summary",
    (
        ("Device_id", _device()),
        ("Model ID", _text("model_id")),
        ("Task ID", _text("task_id")),
        ("Stream ID", _text("stream_id")),
        ("Op Name", _text("op_name")),
        ("OP Type", _text("op_type")),
        ("OP State", _text("op_state")),
        ("Task Type", _text("task_type")),
        ("Task Start Time(us)", _wall_us("start_ns")),
        ("Task Duration(us)", _us("dur_ns")),
        ("Task Wait Time(us)", _us("wait_ns")),
        ("Block Num", _text("block_dim")),
        ("Mix Block Num", _text("mix_block_dim")),
        ("HF32 Eligible", f"'{NA}'"),
        ("Input Shapes", _text("input_shapes")),
        ("Input Data Types", _text("input_data_types")),
        ("Input Formats", _text("input_formats")),
        ("Output Shapes", _text("output_shapes")),
        ("Output Data Types", _text("output_data_types")),
        ("Output Formats", _text("output_formats")),
        ("Context ID", _text("context_id")),
        ("aicore_time(us)", _r3("aicore_time_us")),
        ("total_cycles", _text("total_cycles::BIGINT")),
        ("vec_ratio", _r3("vec_ratio")),
        ("mac_ratio", _r3("mac_ratio")),
        ("scalar_ratio", _r3("scalar_ratio")),
        ("mte2_ratio", _r3("mte2_ratio")),
        ("memory_bound", _r3("memory_bound")),
        ("cube_utilization(%)", _r3("cube_utilization_pct")),
    ),
    "start_ns, stream_id, task_id, context_id NULLS FIRST",
)

OP_STATISTIC = MsprofFile(
    "op_statistic",
    "op_statistic",
    (
        ("Device_id", _device()),
        ("OP Type", _text("op_type")),
        ("Core Type", _text("core_type")),
        ("Count", _text("count")),
        ("Total Time(us)", _us("total_ns")),
        ("Min Time(us)", _us("min_ns")),
        ("Avg Time(us)", _avg_us("total_ns", "count")),
        ("Max Time(us)", _us("max_ns")),
        ("Ratio(%)", _r3("ratio_pct")),
    ),
    "total_ns DESC, op_type, core_type NULLS FIRST",
)

API_STATISTIC = MsprofFile(
    "api_statistic",
    "api_statistic",
    (
        ("Device_id", _device()),
        ("Level", _text("level")),
        ("API Name", _text("api_name")),
        ("Time(us)", _us("time_ns")),
        ("Count", _text("count")),
        ("Avg(us)", _avg_us("time_ns", "count")),
        ("Min(us)", _us("min_ns")),
        ("Max(us)", _us("max_ns")),
        ("Variance", _r3("variance_us2")),
    ),
    "api_name, level",
)

# every chip but Ascend310: one row per kernel execution
TASK_TIME = MsprofFile(
    "task_time",
    "op_summary",
    (
        ("Device_id", _device()),
        ("kernel_name", _text("op_name")),
        ("kernel_type", _text("task_type")),
        ("stream_id", _text("stream_id")),
        ("task_id", _text("task_id")),
        ("task_time(us)", _us("dur_ns")),
        ("task_start(us)", _wall_us("start_ns")),
        ("task_stop(us)", _wall_us("start_ns + dur_ns")),
    ),
    "start_ns, stream_id, task_id, context_id NULLS FIRST",
)

# Ascend310: msprof's task_time file is the Task Scheduler table
TASK_TIME_ASCEND310 = MsprofFile(
    "task_time",
    "task_scheduler",
    (
        ("Device_id", _device()),
        ("Time(%)", _r3("time_pct")),
        ("Time(us)", _us("time_ns")),
        ("Count", _text("task_count")),
        ("Avg(us)", _r3("avg_ns", " / 1000")),
        ("Min(us)", _us("min_ns")),
        ("Max(us)", _us("max_ns")),
        ("Waiting(us)", _us("waiting_ns")),
        ("Running(us)", _us("running_ns")),
        ("Pending(us)", _us("pending_ns")),
        ("Type", _text("task_type")),
        ("API", _text("api_name")),
        ("Task ID", _text("task_id")),
        ("Op Name", _text("op_name")),
        ("Stream ID", _text("stream_id")),
    ),
    "time_pct DESC, time_ns DESC, task_id, stream_id, task_type, api_name NULLS FIRST, op_name NULLS FIRST",
)


# msprof's aicpu summary as mindstudio_profiler_output holds it (Device_id first, as msprof adds
# it to every merged summary): one row per AI CPU task record (docs/formats.md#rule-aicpu); its
# Total_time is msprof's after-run - submit from the ticks, its Dispatch_time the written one
AICPU = MsprofFile(
    "aicpu",
    "aicpu_ops",
    (
        ("Device_id", _device()),
        ("Timestamp(us)", _wall_us("start_ns")),
        ("Node", _text("op_name")),
        ("Compute_time(us)", _us("compute_ns")),
        ("Memcpy_time(us)", _us("memcpy_ns")),
        ("Task_time(us)", _us("task_ns")),
        ("Dispatch_time(us)", _us("dispatch_ns")),
        ("Total_time(us)", _us("coalesce(total_recomputed_ns, total_ns)")),
        ("Stream ID", _text("stream_id")),
        ("Task ID", _text("task_id")),
    ),
    "start_ns, source_file, seq",
)


def files_for(chip: str | None) -> tuple[MsprofFile, ...]:
    """The file kinds of a run of ``chip``, in the order they are written."""
    task_time = TASK_TIME_ASCEND310 if chip == ASCEND310 else TASK_TIME
    return (OP_SUMMARY, OP_STATISTIC, API_STATISTIC, task_time, AICPU)


def file_name(kind: str, device: int, stamp: str, slice_no: int | None = None) -> str:
    """msprof's name of a summary file: ``<kind>_<device>_<iteration>[_slice_<k>]_<stamp>.csv``;
    the host's file names no device and no iteration."""
    name = kind if device == HOST else f"{kind}_{device}_{ITERATION}"
    if slice_no is not None:
        name += f"_slice_{slice_no}"
    return f"{name}_{stamp}.csv"


def stamp_of(run: dict) -> str:
    """The time in the files' names: the run's collection start, UTC, as msprof's
    YYYYmmddHHMMSS (msprof uses the time of the export; a run's start keeps the names the
    same on every export of the run)."""
    us = run.get("collection_start_us")
    if us is None:
        return "00000000000000"
    return datetime.fromtimestamp(us / 1e6, UTC).strftime("%Y%m%d%H%M%S")


@dataclass
class MsprofExport:
    """What ``export_msprof`` wrote: each file with its kind, device and rows."""

    run_id: str
    files: list[tuple[Path, str, int, int]]  # (path, kind, device, rows)

    @property
    def rows(self) -> int:
        return sum(f[3] for f in self.files)


def _select(f: MsprofFile) -> str:
    """The cells of one device's file, in order: the rows are sorted in a subquery and the
    cells made by a projection over it, which keeps its order (so ORDER BY never meets a
    header that names a column too, as Count and count do)."""
    items = ", ".join(f'{sql} AS "{header}"' for header, sql in f.columns)
    rows = (
        f"SELECT {f.table}.*, _dev.wall_offset_ns AS _wall_offset_ns FROM {f.table} "
        f"LEFT JOIN (SELECT device_id AS _dev_id, max(wall_offset_ns) AS wall_offset_ns FROM devices "
        f"WHERE run_id = $run GROUP BY device_id) AS _dev ON _dev._dev_id = {f.table}.device_id "
        f"WHERE run_id = $run AND device_id = $device ORDER BY {f.order}"
    )
    return f"SELECT {items} FROM ({rows}) AS _row"


def export_msprof(
    wh: Warehouse, run_id: str, out_dir: Path, devices: list[int] | None = None
) -> MsprofExport:
    """Write every file kind of ``files_for`` the run's chip, a file per device that has rows
    (only ``devices`` when given), into the existing folder ``out_dir``. Every file is written
    under a temporary name and all are renamed once the last is complete: the export appears
    whole or not at all."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        why = "is not a folder" if out_dir.exists() else "does not exist"
        raise UsageError(f"cannot write into {out_dir}: it {why} (profetl does not create folders for --out)")
    run = wh.run_index().run_record(run_id)
    kinds = files_for(run.get("chip"))
    stamp = stamp_of(run)
    tables = {f.table for f in kinds} | {"devices"}
    token = secrets.token_hex(4)

    def write(con) -> list[tuple[Path, str, int, int]]:
        temps: list[tuple[Path, Path, str, int, int]] = []  # (tmp, final, kind, device, rows)
        try:
            for f in kinds:
                present = [
                    d
                    for (d,) in con.sql(
                        f"SELECT DISTINCT device_id FROM {f.table} WHERE run_id = $run ORDER BY 1",
                        params={"run": run_id},
                    ).fetchall()
                ]
                for device in present:
                    if devices and device not in devices:
                        continue
                    reader = con.sql(_select(f), params={"run": run_id, "device": device}).to_arrow_reader(
                        100_000
                    )
                    temps += _write_slices(reader, f, device, stamp, out_dir, token)
            for tmp, final, _, _, _ in temps:
                os.replace(tmp, final)
        finally:
            for tmp, *_ in temps:
                tmp.unlink(missing_ok=True)
        return [(final, kind, device, n) for _, final, kind, device, n in temps]

    return MsprofExport(run_id, read_consistent(wh, write, [run_id], tables))


def _write_slices(
    reader, f: MsprofFile, device: int, stamp: str, out_dir: Path, token: str
) -> list[tuple[Path, Path, str, int, int]]:
    """One device's rows of ``f`` in files of at most ``SLICE_ROWS`` rows, under temporary
    names; their final names are known once the rows are counted (one file: no slice number)."""
    parts = formats.csv_slices(
        reader,
        formats.csv_header(f.header),
        SLICE_ROWS,
        lambda k: out_dir / f".{f.kind}_{device}.{k}.{token}.tmp",
        formats.text_csv_records,
    )
    if len(parts) == 1:
        return [(parts[0][0], out_dir / file_name(f.kind, device, stamp), f.kind, device, parts[0][1])]
    return [
        (tmp, out_dir / file_name(f.kind, device, stamp, k), f.kind, device, n)
        for k, (tmp, n) in enumerate(parts)
    ]
