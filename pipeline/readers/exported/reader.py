"""Read an export dump: pick the most detailed source for each canonical table, read it, say what was used.

Preference per table (the issue's order: database, then event timeline, then summary CSV; a
source is only a candidate for the tables it holds):

| table        | database          | timeline                               | summary CSV                              |
|--------------|-------------------|----------------------------------------|------------------------------------------|
| api_calls    | CANN_API / API    | CANN events of trace_view / msprof_*   | -- (api_statistic holds totals only)     |
| task_runs    | TASK              | Ascend Hardware events                 | kernel_details, op_summary, task_time    |
| task_ops     | COMPUTE_TASK_INFO | (timeline names only: after the CSVs)  | kernel_details, op_summary, task_time    |
| task_metrics | TASK_PMU_INFO     | --                                     | kernel_details, op_summary               |
| step_trace   | STEP_TIME         | ProfilerStep / Iteration events        | --                                       |
| comm_ops     | COMMUNICATION_OP  | HCCL hcom_* events                     | --                                       |
| comm_tasks   | COMMUNICATION_TASK_INFO | HCCL task events (hccl_*.json first) | --                                 |

Where the export holds no events for a table, the exporter's totals of them stand in
(docs/formats.md#export-totals); the step breakdown is read beside the step events too, as the
reference profetl's recomputation is compared with (docs/formats.md#export-step-breakdown):

| table        | events of                     | totals read when those filled no row           |
|--------------|-------------------------------|------------------------------------------------|
| api_totals   | api_calls                     | api_statistic CSV                              |
| step_times   | step_trace                    | analysis.db StepTraceTime, step_trace_time CSV |

task_ops and task_metrics rows name the execution they describe by (device, stream, task,
start_ns), so a task from the timeline and its op and PMU values from kernel_details meet
exactly in staging. The run's ``sources`` lists the choice per table, its ``notes`` what no
source could supply and why.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.errors import InputError
from pipeline.paths import relative
from pipeline.readers import metadata
from pipeline.readers.exported import csvs, db, timeline_json
from pipeline.readers.exported.context import ExportContext, SourceResult
from pipeline.readers.exported.files import ExportDump, ExportFile, nested_runs, not_read_reason, scan
from pipeline.readers.exported.keys import KeyCheck
from pipeline.readers.hiprof.files import MAX_DEVICE_ID
from pipeline.readers.hiprof.reader import RunMeta, Sink
from pipeline.readers.issues import Issue, IssueLog

DB_KINDS = ("msprof_db", "pytorch_db", "report_db")
# several databases of one kind are several ranks / devices and are all read; the pre-2024
# report_*.db beside an msprof_*.db is the same run in an older schema and is not
DATABASES = [("msprof_db", "pytorch_db"), ("report_db",)]
# table -> candidate kinds, most detailed first; each entry is one alternative
# Timeline kinds are alternatives of their own: torch_npu's trace_view.json holds the CANN and
# Ascend Hardware events of msprof's msprof_*.json (the same run exported twice), and msprof's
# per-iteration timeline/msprof_<dev>_<model>_<iter>.json holds every task of task_time_* and the
# iteration of step_trace_* (each step_trace_* file repeats all iterations): reading two of them
# would count every task and step twice.
TIMELINES = [("trace_view",), ("msprof_json",)]
PREFERENCE: dict[str, list[tuple[str, ...]]] = {
    "api_calls": [*DATABASES, *TIMELINES],
    "task_runs": [
        *DATABASES,
        *TIMELINES,
        ("task_time_json",),
        ("kernel_details",),
        ("op_summary",),
        ("task_time_csv",),
    ],
    "task_ops": [
        *DATABASES,
        ("kernel_details",),
        ("op_summary",),
        ("task_time_csv",),
        *TIMELINES,
        ("task_time_json",),
    ],
    "task_metrics": [*DATABASES, ("kernel_details",), ("op_summary",)],
    "step_trace": [*DATABASES, *TIMELINES, ("step_trace_json",)],
    "comm_ops": [*DATABASES, *TIMELINES, ("hccl_json",)],
    # msprof's hccl_<dev>_<model>_<iter>.json holds the HCCL events of msprof_<dev>_<model>_<iter>.json
    # (the same tasks): the file made for them is read, and msprof_*.json where there is none
    "comm_tasks": [*DATABASES, ("trace_view",), ("hccl_json",), ("msprof_json",)],
    "aicpu_tasks": [("aicpu",)],
}
# table of totals -> (the events table they stand in for, candidate kinds, most detailed first)
FALLBACKS: dict[str, tuple[str, list[tuple[str, ...]]]] = {
    "api_totals": ("api_calls", [("api_statistic",)]),
    "step_times": ("step_trace", [("analysis_db",), ("step_trace_time",)]),
}
WHY_MISSING = {
    "api_calls": "no API events in this export (a database CANN_API table or timeline CANN events); "
    "Runtime API, AscendCL and top-down API rows are empty",
    "task_runs": "no device task executions in this export",
    "task_ops": "no operator descriptions in this export: op names and types are NULL",
    "task_metrics": "no AI Core PMU values in this export (collected without aic-metrics, or a database "
    "level without TASK_PMU_INFO): AI Core metrics are empty",
    "step_trace": "no step or iteration boundaries in this export: top-down has no per-step rows",
    "comm_ops": "no communication ops in this export (a database COMMUNICATION_OP table or timeline HCCL "
    "hcom_* events): the communication columns of the recomputed step breakdown are NULL",
    "comm_tasks": "no communication tasks in this export (a database COMMUNICATION_TASK_INFO table or "
    "timeline HCCL task events): comm_iteration_ops and comm_iteration_links are empty",
    "aicpu_tasks": "no AI CPU task summary in this export (msprof's aicpu_*.csv): aicpu_ops is empty",
}
FALLBACK_MART = {"api_totals": "api_statistic", "step_times": "step_trace_summary"}
# totals read also where their events were read: the exporter's values, kept beside profetl's
# recomputation from the events and compared with it (build_issues export_step_breakdown_differs)
READ_BESIDE_EVENTS = {"step_times"}
ALWAYS_MISSING = [
    "task_states: exported outputs carry no TS task states, so Task Scheduler waiting_ns and pending_ns are NULL",
    "pmu_counters: exported outputs carry computed metrics (task_metrics), not the 8 raw counters",
]


def _group_label(f: ExportFile) -> str:
    return {"database": "database", "timeline": "event timeline", "summary": "summary CSV"}[f.group]


def _first_available(dump: ExportDump, alternatives) -> dict[str, list[ExportFile]]:
    """For each table, the files of the first of its kinds (most detailed first) the dump has."""
    chosen: dict[str, list[ExportFile]] = {}
    for table, kinds_in_order in alternatives.items():
        for kinds in kinds_in_order:
            files = dump.of(*kinds)
            if files:
                chosen[table] = files
                break
    return chosen


def choose_fallbacks(dump: ExportDump) -> dict[str, list[ExportFile]]:
    """For each table of totals, the files of its most detailed available kind: read only when
    the events table it stands in for filled no row."""
    return _first_available(
        dump, {table: alternatives for table, (_events, alternatives) in FALLBACKS.items()}
    )


def choose(dump: ExportDump) -> dict[str, list[ExportFile]]:
    """For each table, the files of its most detailed available source kind."""
    return _first_available(dump, PREFERENCE)


def read_export(
    root: Path,
    sink: Sink,
    log: IssueLog,
    layout: str | None = None,
    workdir: Path | None = None,
    scanned: ExportDump | None = None,
) -> RunMeta:
    """Every file is read as the scan measured it, never further (docs/formats.md#live-dumps):
    text files up to their size then, a database from a copy of those bytes taken in
    ``workdir`` (the system's temporary folder without one) only while the file is still as
    measured; bytes written after the scan are reported, not read."""
    root = Path(root)
    dump = scanned or scan(root, layout)
    if not any(f.group != "control" for f in dump.files):
        raise InputError(
            "holds no exported profiling file (msprof_*.db, trace_view.json, kernel_details.csv, ...)",
            path=str(root),
        )
    meta = RunMeta(layout_generation=4, layout=dump.layout)
    default_device = _default_device(dump, log)
    chosen = choose(dump)
    by_file: dict[Path, set[str]] = {}
    for table, files in chosen.items():
        for f in files:
            by_file.setdefault(f.path, set()).add(table)

    fallbacks = choose_fallbacks(dump)
    # every file of a kind of totals waits until the events it totals are read
    totals_kinds = {table: [k for kinds in alts for k in kinds] for table, (_e, alts) in FALLBACKS.items()}
    deferred = {f.path for kinds in totals_kinds.values() for f in dump.of(*kinds) if f.path not in by_file}
    keys = KeyCheck(sink, _row_offsets(dump))

    results: dict[Path, SourceResult] = {}

    def read_file(f: ExportFile, tables: set[str]) -> None:
        ctx = ExportContext(
            root,
            keys,
            log,
            frozenset(tables),
            f.device_id if f.device_id is not None else default_device,
            workdir,
        )
        res = _read_one(f, ctx)
        # every byte of a file chosen as a source, as the scan measured it, is decoded (the
        # reader calls log.decoded) or reported skipped (an issue of a BYTE_KINDS kind), also
        # when the reader gives up on it
        meta.data_bytes += f.size or 0
        _grown(f, log, relative(root, f.path))
        if res is not None:
            results[f.path] = res

    def not_read(f: ExportFile) -> None:
        why = not_read_reason(f.path.name) or "a more detailed source of the same data was read instead"
        log.add(Issue(relative(root, f.path), "not_read", why, device_id=f.device_id))

    for f in dump.files:
        tables = by_file.get(f.path)
        if f.group == "control" or f.path in deferred:
            continue
        if not tables:
            not_read(f)
            continue
        read_file(f, tables)
    # the exporter's totals, where the events they total filled no row (FALLBACKS)
    for table, kinds in totals_kinds.items():
        events = FALLBACKS[table][0]
        filled = sum(results[f.path].rows.get(events, 0) for f in chosen.get(events, []) if f.path in results)
        used = {f.path for f in fallbacks.get(table, [])}
        for f in dump.of(*kinds):
            if f.path not in deferred:
                continue
            if filled and table not in READ_BESIDE_EVENTS:
                not_read(f)
            elif f.path in used:
                read_file(f, {table})
            else:  # totals of a less detailed kind than the one read
                why = "a more detailed source of the same totals was read instead"
                log.add(Issue(relative(root, f.path), "not_read", why, device_id=f.device_id))
    keys.report(log)
    runs = nested_runs(dump)
    for p in dump.nested:
        if p in runs:
            why = (
                "msprof's raw data of the same collection: a run of its own, which `profetl run` finds "
                "beside this folder (`profetl ingest` takes it by its path)"
            )
        else:
            why = (
                "no raw data left: msprof's export of what ASCEND_PROFILER_OUTPUT holds, not a run of its "
                "own (`profetl ingest` that folder to read msprof's export as a separate run)"
            )
        log.add(Issue(relative(root, p), "not_read", why))
    for p in dump.others:
        why = not_read_reason(p.name)
        log.add(
            Issue(
                relative(root, p),
                "not_read" if why else "unknown_file",
                why or "not a file profetl reads: left alone",
            )
        )

    _run_level(meta, dump, {**chosen, **fallbacks}, results, default_device, sink, root, log)
    return meta


def _row_offsets(dump: ExportDump):
    """(source_file, seq) -> the byte offset of that data row of a summary CSV (None elsewhere:
    a database row or a timeline event has no offset of its own)."""
    csv_files = {relative(dump.root, f.path): f for f in dump.files if f.group == "summary"}

    def offset(source_file: str, seq: int) -> int | None:
        f = csv_files.get(source_file)
        return None if f is None or f.size is None else csvs.data_row_offset(f.path, f.size, seq)

    return offset


def _read_one(f: ExportFile, ctx: ExportContext) -> SourceResult | None:
    if f.group == "database":
        return db.read_db(f.path, ctx, f.size, f.mtime_ns)
    if f.group == "timeline":
        return timeline_json.read_timeline(f.path, f.kind, ctx, f.size)
    if f.kind in csvs.TOTALS_KINDS:
        return csvs.read_totals(f.path, f.kind, ctx, f.size)
    return csvs.read_summary(f.path, f.kind, ctx, f.size)


def _grown(f: ExportFile, log: IssueLog, rel: str) -> None:
    """Bytes written to a source file after the scan measured it: not read, and reported
    (``grown_while_read``; not a loss: the dump's fingerprint has changed, so the next run
    reads the file again)."""
    if f.size is None:
        return
    try:
        now = f.path.stat().st_size
    except OSError:
        return
    if now > f.size:
        log.add(
            Issue(
                rel,
                "grown_while_read",
                f"{now - f.size} bytes were written to it after the ingest "
                "measured it; not read (the dump counts as changed, the next run reads them)",
                device_id=f.device_id,
                byte_offset=f.size,
                byte_length=now - f.size,
            )
        )


def _default_device(dump: ExportDump, log: IssueLog) -> int | None:
    """The device of a single-rank export whose files do not name one: torch_npu's profiler_info
    holds the rank; the device folder (device_N) wins where there is one. (A collection end out
    of range, which leaves the run's id without a start, is reported here too.)"""
    for f in dump.of("profiler_info"):
        try:
            info = json.loads(metadata.read_text(f.path))
        except (metadata.MetadataError, ValueError):
            log.add(Issue(relative(dump.root, f.path), "bad_metadata", "not JSON: rank and device unknown"))
            continue
        end = info.get("end_info") if isinstance(info, dict) else None
        end = end.get("collectionTimeEnd") if isinstance(end, dict) else None
        if (
            isinstance(end, (int, float))
            and not isinstance(end, bool)
            and not 0 <= end // 1000 <= metadata.MAX_TIME_US
        ):
            log.add(
                Issue(
                    relative(dump.root, f.path),
                    "bad_metadata",
                    f"end_info.collectionTimeEnd {format(end, '.3e')} "
                    "ns is out of the range of times: the collection start is unknown",
                )
            )
        rank = info.get("rank_id") if isinstance(info, dict) else None
        if isinstance(rank, int) and not isinstance(rank, bool) and rank > MAX_DEVICE_ID:
            log.add(
                Issue(
                    relative(dump.root, f.path),
                    "bad_metadata",
                    f"rank_id {format(rank, '.3e')} is out of the range of device ids: rank and device unknown",
                )
            )
            continue
        if isinstance(rank, int) and rank >= 0:
            return rank
    return None


def _run_level(
    meta: RunMeta,
    dump: ExportDump,
    chosen: dict[str, list[ExportFile]],
    results: dict[Path, SourceResult],
    default_device: int | None,
    sink: Sink,
    root: Path,
    log: IssueLog,
) -> None:
    devices: set[int] = set()
    starts = [r.start_ns for r in results.values() if r.start_ns is not None]
    for r in results.values():
        devices |= {d for d in r.devices if d != 64}
        meta.chip = meta.chip or r.chip
        meta.notes.extend(n for n in r.notes if n not in meta.notes)
    if not devices and default_device is not None:
        devices = {default_device}
    meta.devices = sorted(devices)
    if starts:
        meta.collection_start_us = min(starts) // 1000
    monotonic = sorted((relative(root, path), r.monotonic_first_ns) for path, r in results.items()
                       if r.monotonic_first_ns is not None)  # fmt: skip
    if monotonic:
        names = [name for name, _ in monotonic]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        meta.notes.append(
            f"event times are not wall clock in {len(names)} timeline file(s) (a monotonic clock: "
            f"{monotonic[0][0]} starts at {monotonic[0][1]} ns): the collection start is not taken "
            f"from them: {shown}"
        )
    for table in (*PREFERENCE, *FALLBACKS):
        files = chosen.get(table, [])
        filled = sum(results[f.path].rows.get(table, 0) for f in files if f.path in results)
        if files and filled:
            names = sorted({relative(root, f.path) for f in files})
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            meta.sources.append(f"{table}: {_group_label(files[0])} {shown}")
            events_filled = table in FALLBACKS and any(
                results[f.path].rows.get(FALLBACKS[table][0], 0)
                for f in chosen.get(FALLBACKS[table][0], [])
                if f.path in results
            )
            if table in FALLBACKS and not events_filled:
                meta.notes.append(
                    f"{table}: the export holds no {FALLBACKS[table][0]} events, so "
                    f"{FALLBACK_MART[table]} is built from the exporter's totals ({shown})"
                )
        elif table in PREFERENCE:
            meta.notes.append(f"{table}: {WHY_MISSING[table]}")
    meta.notes.extend(ALWAYS_MISSING)
    control = _device_control(dump, log)
    for d in meta.devices:
        row = {"device_id": [d], "source_file": [""], "chip": [meta.chip], "platform_source": ["export"]}
        row.update(control.get(d, {}))
        meta.chip = meta.chip or row["chip"][0]
        meta.platform_version = meta.platform_version or (row.get("platform_version") or [None])[0]
        sink.write("devices", row)
    starts_us = [c["start_us"][0] for c in control.values() if c.get("start_us", [None])[0] is not None]
    if starts_us and meta.collection_start_us is None:
        meta.collection_start_us = min(starts_us)


def _device_control(dump: ExportDump, log: IssueLog) -> dict[int, dict]:
    """What the device folders' info.json.N and start_info.N still say beside an export (msprof
    keeps them): chip, frequencies, core count, pid, and the monotonic-to-wall offset."""
    from pipeline.readers.prof.meta import chip_name

    out: dict[int, dict] = {}
    for f in dump.of("info_json", "start_info"):
        dev = f.device_id if f.device_id is not None else _suffix_device(f.path.name)
        if dev is None:
            continue
        row = out.setdefault(dev, {})
        try:
            if f.kind == "info_json":
                info = metadata.read_info(f.path)
                di = info.device_info[0] if info.device_info else None
                row.update(
                    {
                        "source_file": [relative(dump.root, f.path)],
                        "platform_version": [info.platform_version],
                        "chip": [chip_name(info.platform_version)],
                        "platform_source": ["info.json"],
                        "pid": [info.pid_int],
                        "host_freq_mhz": [info.host_freq_mhz],
                        "hwts_freq_mhz": [di.hwts_mhz if di else None],
                        "aic_freq_mhz": [di.aic_mhz if di else None],
                        "ai_core_num": [di.ai_core_num if di else None],
                        "hwts_freq_source": ["info.json" if di and di.hwts_mhz else None],
                    }
                )
            else:
                start = metadata.read_start_info(f.path)
                row["start_us"] = [start.collection_time_begin_us]
                if start.collection_time_begin_us is not None and start.clock_monotonic_raw_ns is not None:
                    row["wall_offset_ns"] = [
                        start.collection_time_begin_us * 1000 - start.clock_monotonic_raw_ns
                    ]
                    row["host_mon_ns"] = [start.clock_monotonic_raw_ns]
        except metadata.MetadataError as e:
            log.add(Issue(relative(dump.root, f.path), "bad_metadata", str(e), device_id=dev))
    return out


def _suffix_device(name: str) -> int | None:
    tail = name.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else None


def session_start_us(dump: ExportDump) -> int | None:
    """Collection start from the first database's session table, for the run id; None without one."""
    for f in dump.of(*DB_KINDS):
        ns = db.session_start_ns(f.path)
        if ns is not None:
            return ns // 1000
    return None


def profiler_info_start_us(dump: ExportDump) -> int | None:
    """Collection start from torch_npu's profiler_info*.json: its wall-clock end
    (end_info.collectionTimeEnd, ns) less the monotonic time between start and end."""
    for f in dump.of("profiler_info"):
        try:
            info = json.loads(metadata.read_text(f.path))
            end = info["end_info"]
            wall_end = int(end["collectionTimeEnd"])
            elapsed = int(end["MonotonicTimeEnd"]) - int(info["start_info"]["start_monotonic"])
        except (metadata.MetadataError, ValueError, KeyError, TypeError, OverflowError):
            continue
        if elapsed >= 0 and 0 <= (wall_end - elapsed) // 1000 <= metadata.MAX_TIME_US:  # else no start known
            return (wall_end - elapsed) // 1000
    return None
