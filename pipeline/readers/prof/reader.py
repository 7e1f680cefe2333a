"""Read a generation-2/3 dump into canonical tables, collection directory by collection directory.

Every directory is read on its own: a device folder whose data is missing or cut short
adds issues and leaves the other devices' data intact.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from pipeline.errors import InputError
from pipeline.layouts import prof as prof_layouts
from pipeline.readers import metadata
from pipeline.readers.hiprof.files import BAD_DEVICE
from pipeline.readers.hiprof.reader import RunMeta, Sink, _read_tlv
from pipeline.readers.hiprof.reader import merge_metas as merge_hiprof_metas
from pipeline.readers.issues import Issue, IssueLog
from pipeline.readers.prof import aicpu as prof_aicpu
from pipeline.readers.prof import device as prof_device
from pipeline.readers.prof import host as prof_host
from pipeline.readers.prof.files import (
    DEVICE_KINDS,
    HOST_ID,
    HOST_KINDS,
    STARS_KINDS,
    CollectionDir,
    ProfDump,
    Stream,
    scan,
)
from pipeline.readers.prof.meta import (
    DEFAULT_TAG_CHIP,
    CollectionMeta,
    ReadOptions,
    chip_name,
    collection_meta,
    generation,
)
from pipeline.readers.prof.pairing import Logs, Pairer, batch_from_flips, batch_from_wraps, task_time
from pipeline.readers.slices import SliceStream, gone_issue

MSPROF_DIRS = {"sqlite", "summary", "timeline", "log", "mindstudio_profiler_output"}
LAYOUT_GENERATION_BY_FILES = {"stars_soc": 3, "ffts_profile": 3, "lpm_freq": 3, "hwts": 2}


def _first_platform(dump: ProfDump) -> str | None:
    for cd in sorted(dump.collections, key=lambda c: c.is_host):
        for p in cd.control["info"].values():
            try:
                return metadata.read_info(p).platform_version
            except metadata.MetadataError:
                continue
    return None


def _device_ids(cd: CollectionDir) -> list[int]:
    if cd.device_id >= 0:
        return [cd.device_id]
    ids = {s.device_id for s in cd.streams} | {d for d in cd.control["info"] if d is not None}
    return sorted(ids) or [0]


def read_prof(
    root: Path,
    sink: Sink,
    log: IssueLog,
    layout: str | None = None,
    options: ReadOptions | None = None,
    collections: list[str] | None = None,
    scanned: ProfDump | None = None,
) -> RunMeta:
    """Read the dump, or only the collection directories ``collections`` of it (a unit of work);
    ``scanned``: its scan, when taken."""
    root = Path(root)
    options = options or ReadOptions.from_env()
    dump = scanned or scan(root, layout)
    if not dump.collections:
        raise InputError("no host/ or device_N/ collection directory", path=str(root))
    meta = RunMeta(layout_generation=0, layout=dump.layout)
    fallback = _first_platform(dump)
    default_chip = DEFAULT_TAG_CHIP if dump.layout == "profiler_default_tag" and not options.chip else None
    devices: set[int] = set()
    prof_devices = _devices_per_prof(dump)
    for cd in dump.collections:
        if collections is not None and cd.rel not in collections:
            continue
        _report_files(cd, log)
        for dev in _device_ids(cd):
            cm = collection_meta(root, cd, dev, log, options, fallback, default_chip)
            _run_level(meta, cm)
            if cd.is_host:
                _read_host(cd, cm, prof_devices.get(_prof_of(cd), []), sink, log, meta)
                sink.write("devices", cm.row)
                continue
            devices.add(dev)
            if not cd.has_data and cd.device_id >= 0:
                log.add(
                    Issue(
                        f"{cd.rel}/data",
                        "missing_file",
                        f"device {dev} has no data/ folder: no device data read",
                        device_id=dev,
                    )
                )
            g = _read_device(cd, dev, cm, sink, log, meta)
            sink.write("devices", cm.row)
            if g:
                meta.device_generations.append(g)
    meta.devices = sorted(devices)
    meta.layout_generation = layout_generation(meta)
    return meta


def layout_generation(meta: RunMeta) -> int:
    """The run's layout generation: the highest its device directories showed, else its platform's."""
    return (
        max(meta.device_generations) if meta.device_generations else (generation(meta.platform_version) or 2)
    )


def merge_metas(metas: list[RunMeta]) -> RunMeta:
    """The run's metadata from its collection directories' parts (hiprof.reader.merge_metas,
    the earliest collection start), and its layout generation from them all."""
    out = merge_hiprof_metas(metas, earliest_start=True)
    out.layout_generation = layout_generation(out)
    return out


def _prof_of(cd: CollectionDir) -> str:
    return cd.rel.rsplit("/", 1)[0] if "/" in cd.rel else ""


def _devices_per_prof(dump: ProfDump) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for cd in dump.collections:
        if not cd.is_host:
            out.setdefault(_prof_of(cd), []).append(cd.device_id)
    return out


def _run_level(meta: RunMeta, cm: CollectionMeta) -> None:
    if meta.platform_version is None and cm.platform_version is not None:
        meta.platform_version = cm.platform_version
        meta.chip = chip_name(cm.platform_version)
    if meta.metric_set_raw is None and cm.metric_set_raw is not None:
        meta.metric_set_raw = cm.metric_set_raw
        meta.metric_set = metadata.normalise_metric_set(cm.metric_set_raw)
        meta.pmu_event_ids = cm.events
        meta.ai_core_profiling_mode = cm.profiling_mode
    if cm.start_us is not None and (
        meta.collection_start_us is None or cm.start_us < meta.collection_start_us
    ):
        meta.collection_start_us = cm.start_us


def _report_files(cd: CollectionDir, log: IssueLog) -> None:
    dev = None if cd.device_id < 0 else cd.device_id
    for rel in cd.unknown:
        log.add(
            Issue(
                rel,
                "unknown_file",
                "not a file the generation-2/3 readers recognise; not read",
                device_id=dev,
            )
        )
    for rel in cd.unread:
        what = (
            "msprof's own output (not raw data)"
            if rel.rstrip("/").rsplit("/", 1)[-1] in MSPROF_DIRS
            else "a known producer file that no canonical table holds"
        )
        log.add(Issue(rel, "unread_file", f"{what}; not read", device_id=dev))
    for rel in cd.not_files:
        log.add(
            Issue(
                rel,
                "unreadable_file",
                "named like data but not a regular file inside the dump; not read",
                device_id=dev,
            )
        )
    for rel in cd.bad_device:
        log.add(Issue(rel, "unreadable_file", BAD_DEVICE, device_id=dev))
    for rel, size, device in cd.gone:
        log.add(gone_issue(rel, size, None if device < 0 else device))
    for kind, _, p in cd.legacy:
        log.add(
            Issue(
                p.name if not cd.rel else f"{cd.rel}/data/{p.name}",
                "unread_file",
                f"legacy host record file ({kind}) inside a generation-2/3 directory; not read by this version",
                device_id=dev,
            )
        )


def _read_host(
    cd: CollectionDir, cm: CollectionMeta, prof_devices: list[int], sink: Sink, log: IssueLog, meta: RunMeta
) -> None:
    by_kind: dict[str, list[Stream]] = {}
    for s in cd.streams:
        by_kind.setdefault(s.kind, []).append(s)
    ctx = prof_host.HostContext(pid=cm.pid, clock=cm.host_clock)
    meta.data_bytes += sum(f.size for s in cd.streams if s.kind in HOST_KINDS for f in s.files)
    for s in by_kind.get("hash_dic", []):
        ctx.hashes.update(prof_host.read_hashes(s, log))
    for s in by_kind.get("type_info_dic", []):
        ctx.types.update(prof_host.read_type_info(s, log))
    ctx.tid_device = prof_host.thread_devices(by_kind.get("task_track", []), log)
    if len(prof_devices) == 1:
        ctx.fallback_device = prof_devices[0]
    for s in by_kind.get("task_track", []):
        for cols in prof_host.task_track_rows(s, ctx, log):
            sink.write("task_ops", cols)
    for s in by_kind.get("node_basic_info", []):
        for cols in prof_host.node_basic_info_rows(s, ctx, log):
            sink.write("task_ops", cols)
    for s in by_kind.get("api_event", []):
        for cols in prof_host.api_event_rows(s, ctx, log):
            sink.write("api_calls", cols)
    for s in by_kind.get("graph_id_map", []):
        for cols in prof_host.graph_id_rows(s, ctx, log):
            sink.write("inferences", cols)
    for kind, streams in by_kind.items():
        if kind in DEVICE_KINDS:
            for s in streams:
                log.add(
                    Issue(s.name, "unread_file", "device data file inside host/; not read", device_id=HOST_ID)
                )
    ctx.flush(log)


def _read_device(
    cd: CollectionDir, dev: int, cm: CollectionMeta, sink: Sink, log: IssueLog, meta: RunMeta
) -> int | None:
    streams = [s for s in cd.streams if s.device_id == dev]
    if cd.device_id >= 0:  # a device_N folder: what is in it is device N's, whatever a file name says
        for s in cd.streams:
            if s.device_id != dev:
                log.add(
                    Issue(
                        s.name,
                        "device_mismatch",
                        f"file names device {s.device_id} inside {cd.rel} of device {dev}; read as device {dev}",
                        device_id=dev,
                    )
                )
                streams.append(s)
    by_kind: dict[str, list[Stream]] = {}
    for s in streams:
        by_kind.setdefault(s.kind, []).append(s)
        if s.kind not in HOST_KINDS:
            meta.data_bytes += sum(f.size for f in s.files)
    for kind in sorted(set(by_kind) & HOST_KINDS):
        for s in by_kind[kind]:
            log.add(
                Issue(
                    s.name, "unread_file", "host data file inside a device directory; not read", device_id=dev
                )
            )
    pv = cm.platform_version
    gen = generation(pv)
    if gen is None:
        gen = max((LAYOUT_GENERATION_BY_FILES.get(k, 0) for k in by_kind), default=0) or None
    clock = cm.clock

    if pv == "0":  # Ascend310 inside a PROF_* tree: TLV streams, as generation 1 reads them
        for kind in ("ts_track", "aicore"):
            for s in by_kind.get(kind, []):
                _read_tlv(SliceStream(s.files, log=log, device_id=dev), dev, clock, sink, log)
        return gen

    flips = None
    for s in by_kind.get("ts_track", []):
        f = prof_device.read_ts_track(s, dev, clock, sink, log)
        flips = f if flips is None else {k: np.concatenate([flips[k], f[k]]) for k in f}
    lpm_rows = 0
    for s in by_kind.get("lpm_freq", []):
        lpm_rows += prof_device.read_lpm(s, dev, clock, sink, log)
    cm.row["aic_freq_source"] = [
        "lpmFreqConv (info.json aic_frequency before the first sample)"
        if lpm_rows
        else ("info.json" if cm.aic_mhz else None)
    ]
    for kind, reader, names, by_time in (
        ("hwts", prof_device.read_hwts, prof_layouts.HWTS_SQE_TYPES, False),
        ("stars_soc", prof_device.read_stars, prof_layouts.STARS_SQE_TYPES, True),
    ):
        for s in by_kind.get(kind, []):
            stream, chunks = reader(s, dev, log)
            _write_runs(stream, chunks, by_time, flips, cm, dev, clock, names, kind, sink, log, s)
    sample_based = (cm.profiling_mode or "").strip().lower() == "sample-based"
    for s in by_kind.get("aicore", []):
        prof_device.read_aicore(s, dev, clock, sink, log, sample_based)
    for s in by_kind.get("ffts_profile", []):
        prof_device.read_ffts(s, dev, clock, sink, log)
    for s in by_kind.get("training_trace", []):
        prof_device.read_training_trace(s, dev, clock, sink, log)
    for s in by_kind.get("aicpu", []):
        prof_aicpu.read_aicpu(s, dev, clock, sink, log)
    op_types: dict[str, str] = {}
    for s in by_kind.get("ms_graph_desc", []):
        op_types.update(prof_device.read_ms_graph_desc(s, log))
    for s in by_kind.get("ms_task_desc", []):
        prof_device.read_ms_task_desc(s, dev, op_types, sink, log)
    if gen is None and set(by_kind) & STARS_KINDS:
        gen = 3
    return gen


def _write_runs(
    stream,
    chunks: Iterator[list[Logs]],
    by_time: bool,
    flips,
    cm: CollectionMeta,
    dev: int,
    clock,
    names,
    source: str,
    sink: Sink,
    log: IssueLog,
    s: Stream,
) -> None:
    """Pair the start/end logs chunk by chunk and write each chunk's executions as they come.

    Batch ids: wrap-arounds continue across chunks (the count is carried per stream); with flip
    records each chunk's tasks count the flips before them, and the calibration that moves tasks
    just before a flip into its batch looks back within the chunk only (a chunk holds a million
    logs, so only tasks at the very boundary could differ)."""
    pairer = Pairer(by_time)
    wraps: dict[int, tuple[int, int]] = {}
    use_flips = cm.uses_flips and flips is not None and len(flips["ts"])
    lone = 0
    orphans = []
    for parts in chunks:
        if not sum(map(len, parts)):
            continue
        runs = pairer.feed(*parts)
        ts = task_time(runs)
        if use_flips:
            batch = batch_from_flips(
                runs.stream_id,
                runs.task_id,
                ts,
                flips["stream_id"],
                flips["ts"],
                flips["task_id"],
                flips["flip_num"],
            )
            cm.row["batch_id_source"] = ["flip records (drvVersion >= 0x072211)"]
        else:
            batch = batch_from_wraps(runs.stream_id, runs.task_id, ts, wraps)
            cm.row["batch_id_source"] = ["task id wrap-around per stream"]
        if len(runs):
            sink.write("task_runs", prof_device.run_rows(runs, batch, stream, dev, clock, names, source))
        lone += int((runs.start_syscnt < 0).sum())
        orphans.append(runs.orphan_starts)
    orphans.append(pairer.finish())
    orphan_starts = np.concatenate(orphans)
    size = prof_layouts.HWTS_LOG.size
    if lone:
        log.add(
            Issue(
                s.name,
                "end_without_start",
                f"{lone} task end log(s) without a start: executions with start NULL",
                device_id=dev,
                count=lone,
            )
        )
    if len(orphan_starts):
        idx = stream.file_index(orphan_starts)
        for i in np.unique(idx).tolist():
            k = int((idx == i).sum())
            log.add(
                Issue(
                    stream.files[i].rel,
                    "start_without_end",
                    f"{k} task start log(s) that no end closed (replaced by a later start or never ended); "
                    f"not an execution",
                    device_id=dev,
                    byte_length=k * size,
                    count=k,
                )
            )
