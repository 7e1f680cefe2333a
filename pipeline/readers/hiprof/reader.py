"""Read a generation-1 ``result_dir`` into canonical tables, device by device, stream by stream."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from pipeline.errors import InputError
from pipeline.layouts import hiprof as hiprof_layouts
from pipeline.paths import relative
from pipeline.readers import metadata
from pipeline.readers.clock import DeviceClock, host_monotonic_ns
from pipeline.readers.decode import decode_fixed, decode_tlv
from pipeline.readers.hiprof import device as hiprof_device
from pipeline.readers.hiprof import host as hiprof_host
from pipeline.readers.hiprof.files import BAD_DEVICE, Layout1Files, Stream, scan
from pipeline.readers.issues import Issue, IssueLog
from pipeline.readers.names import read_hash_dic
from pipeline.readers.slices import SliceStream, gone_issue


class Sink(Protocol):
    def write(self, table: str, columns: dict) -> None: ...


@dataclass
class RunMeta:
    """What the reader learnt about the run as a whole (becomes its ``runs`` row)."""

    layout_generation: int = 1
    layout: str = "hiprof_result_dir"
    platform_version: str | None = None
    chip: str | None = None
    devices: list[int] = field(default_factory=list)
    metric_set: str | None = None
    metric_set_raw: str | None = None
    pmu_event_ids: list[int] = field(default_factory=list)
    ai_core_profiling_mode: str | None = None
    collection_start_us: int | None = None
    data_bytes: int = 0
    sources: list[str] = field(default_factory=list)  # "table: source" where a run had a choice (exports)
    notes: list[str] = field(default_factory=list)  # what the sources could not supply, and why
    # layout generations the device directories' files showed (generation 2/3 readers); the
    # run's is the highest (prof.reader.layout_generation)
    device_generations: list[int] = field(default_factory=list)


def _rel(root: Path, p: Path) -> str:
    return relative(root, p)


def _pick(files: Layout1Files, kind: str, device_id: int) -> Path | None:
    by_dev = files.control[kind]
    return by_dev.get(device_id) or by_dev.get(None)


def _load(
    reader, path: Path | None, root: Path, log: IssueLog, device_id: int | None, what: str, required: bool
):
    if path is None:
        if required:
            log.add(Issue(what, "missing_file", f"no {what} for device {device_id}", device_id=device_id))
        return None
    try:
        return reader(path)
    except metadata.MetadataError as e:
        log.add(Issue(_rel(root, path), "bad_metadata", str(e), device_id=device_id))
        return None


def _device_row(
    files: Layout1Files, device_id: int, log: IssueLog, meta: RunMeta
) -> tuple[dict, DeviceClock]:
    root = files.root
    info_p = _pick(files, "info", device_id)
    info = _load(metadata.read_info, info_p, root, log, device_id, f"info.json.{device_id}", True)
    sample = _load(
        metadata.read_sample, _pick(files, "sample", device_id), root, log, device_id, "sample.json", True
    )
    start = _load(
        metadata.read_start_info,
        _pick(files, "start_info", device_id),
        root,
        log,
        device_id,
        f"start_info.{device_id}",
        False,
    )
    host_sync = _load(
        metadata.read_sync_log,
        _pick(files, "host_start", device_id),
        root,
        log,
        device_id,
        f"host_start.log.{device_id}",
        True,
    )
    dev_sync = _load(
        metadata.read_sync_log,
        _pick(files, "dev_start", device_id),
        root,
        log,
        device_id,
        f"dev_start.log.{device_id}",
        True,
    )

    dinfo = info.device_info[0] if info and info.device_info else None
    if info is not None and dinfo is None:
        log.add(
            Issue(
                _rel(root, info_p),
                "bad_metadata",
                "info.json has no DeviceInfo: device times cannot be converted",
                device_id=device_id,
            )
        )
    hwts = dinfo.hwts_mhz if dinfo else None
    if dinfo is not None and not hwts:
        log.add(
            Issue(
                _rel(root, info_p),
                "bad_metadata",
                "DeviceInfo has no usable hwts_frequency: device times stay NULL",
                device_id=device_id,
            )
        )
    host_freq = info.host_freq_mhz if info else None
    host_mon = 0
    if host_sync is not None and host_sync.clock_monotonic_raw is not None:
        host_mon = host_monotonic_ns(host_sync.clock_monotonic_raw, host_sync.cntvct_diff, host_freq)
    dev_cntvct = dev_sync.cntvct if dev_sync is not None and dev_sync.cntvct is not None else 0
    if dev_sync is not None and dev_sync.cntvct is None:
        log.add(
            Issue(
                _rel(root, _pick(files, "dev_start", device_id)),
                "bad_metadata",
                "no cntvct: device times are counted from counter 0",
                device_id=device_id,
            )
        )
    clock = DeviceClock(hwts, dev_cntvct, host_mon)

    events: list[int] = []
    if sample is not None:
        try:
            events = sample.event_ids()
        except metadata.MetadataError as e:
            log.add(
                Issue(
                    _rel(root, _pick(files, "sample", device_id)), "bad_metadata", str(e), device_id=device_id
                )
            )
    wall_offset = None
    if (
        start is not None
        and start.collection_time_begin_us is not None
        and start.clock_monotonic_raw_ns is not None
    ):
        wall_offset = start.collection_time_begin_us * 1000 - start.clock_monotonic_raw_ns
        if meta.collection_start_us is None:
            meta.collection_start_us = start.collection_time_begin_us
    if info is not None and meta.platform_version is None:
        meta.platform_version = info.platform_version
        meta.chip = metadata.CHIPS.get(info.platform_version, f"platform {info.platform_version}")
    if sample is not None and meta.metric_set_raw is None:
        meta.metric_set_raw = sample.ai_core_metrics
        meta.metric_set = metadata.normalise_metric_set(sample.ai_core_metrics)
        meta.pmu_event_ids = events
        meta.ai_core_profiling_mode = sample.ai_core_profiling_mode
    row = {
        "device_id": [device_id],
        "source_file": [_rel(root, info_p) if info_p else None],
        "platform_version": [info.platform_version if info else None],
        "chip": [metadata.CHIPS.get(info.platform_version) if info else None],
        "hwts_freq_mhz": [hwts],
        "aic_freq_mhz": [dinfo.aic_mhz if dinfo else None],
        "ai_core_num": [dinfo.ai_core_num if dinfo else None],
        "host_freq_mhz": [host_freq],
        "host_mon_ns": [host_mon],
        "dev_cntvct": [dev_cntvct],
        "wall_offset_ns": [wall_offset],
        "pid": [info.pid_int if info else None],
        "ai_core_profiling_mode": [sample.ai_core_profiling_mode if sample else None],
        "metric_set": [metadata.normalise_metric_set(sample.ai_core_metrics) if sample else None],
        "metric_set_raw": [sample.ai_core_metrics if sample else None],
        "pmu_event_ids": [events],
    }
    return row, clock


def _hashes(streams: list[Stream], kind: str, device_id: int, log: IssueLog, meta: RunMeta) -> dict[int, str]:
    out: dict[int, str] = {}
    for s in streams:
        if s.kind == kind and s.device_id == device_id:
            for f in s.files:
                meta.data_bytes += f.size
                out.update(read_hash_dic(f.path, f.rel, log, device_id))
    return out


def device_ids(files: Layout1Files) -> list[int]:
    return sorted({s.device_id for s in files.streams} | {d for d in files.control["info"] if d is not None})


def read_result_dir(
    root: Path,
    sink: Sink,
    log: IssueLog,
    devices: list[int] | None = None,
    dump_level: bool = True,
    files: Layout1Files | None = None,
) -> RunMeta:
    """Read the dump, or only ``devices`` of it (a unit of work; ``dump_level`` says whether
    this part also reports the files that belong to no device); ``files``: its scan, when taken."""
    root = Path(root)
    files = files or scan(root)
    if not files.streams:
        raise InputError("no generation-1 data files in data/", path=str(root))
    meta = RunMeta()
    if dump_level:
        for rel in files.unknown:
            log.add(Issue(rel, "unknown_file", "not a file the generation-1 readers recognise; not read"))
        for rel in files.not_files:
            log.add(
                Issue(
                    rel,
                    "unreadable_file",
                    "not a regular file inside the dump (a directory, or a link leaving it); not read",
                )
            )
        for rel in files.bad_device:
            log.add(Issue(rel, "unreadable_file", BAD_DEVICE))
        for rel, size, dev in files.gone:
            log.add(gone_issue(rel, size, dev))
    wanted = device_ids(files)
    if devices is not None:
        wanted = [d for d in wanted if d in devices]
    meta.devices = wanted
    for dev in wanted:
        row, clock = _device_row(files, dev, log, meta)
        sink.write("devices", row)
        acl_hash = _hashes(files.streams, "acl_hash", dev, log, meta)
        ge_hash = _hashes(files.streams, "ge_hash", dev, log, meta)
        next_infer = 1
        for s in files.streams:
            if s.device_id != dev or s.kind in ("acl_hash", "ge_hash"):
                continue
            stream = SliceStream(s.files, log=log, device_id=dev)
            meta.data_bytes += stream.total
            if s.kind == "acl":
                for b in decode_fixed(stream, hiprof_layouts.ACL_API, log, dev):
                    sink.write("api_calls", hiprof_host.acl_calls(b, stream, dev, acl_hash, log))
            elif s.kind == "runtime_api":
                for b in decode_fixed(stream, hiprof_layouts.RUNTIME_API, log, dev):
                    sink.write("api_calls", hiprof_host.runtime_calls(b, stream, dev, log))
            elif s.kind == "runtime_track":
                for b in decode_fixed(stream, hiprof_layouts.RUNTIME_TASK_TRACK, log, dev):
                    sink.write("task_ops", hiprof_host.runtime_track_ops(b, stream, dev, log))
            elif s.kind == "ge_task_desc":
                for b in decode_fixed(stream, hiprof_layouts.GE_TASK_DESC, log, dev):
                    sink.write("task_ops", hiprof_host.ge_task_ops(b, stream, dev, ge_hash, log))
            elif s.kind == "ge_model_time":
                for b in decode_fixed(stream, hiprof_layouts.GE_MODEL_TIME, log, dev):
                    sink.write(
                        "inferences", hiprof_host.model_phases(b, stream, dev, ge_hash, log, next_infer)
                    )
                    next_infer += len(b.records)
            elif s.kind == "ge_model_load":
                for b in decode_fixed(stream, hiprof_layouts.GE_MODEL_LOAD, log, dev):
                    sink.write("inferences", hiprof_host.model_loads(b, stream, dev, ge_hash, log))
            elif s.kind in ("ts_track", "aicore"):
                _read_tlv(stream, dev, clock, sink, log)
    return meta


def merge_metas(metas: list[RunMeta], earliest_start: bool = False) -> RunMeta:
    """The run's metadata from its units' parts, read in the dump's order: what the whole read
    takes from the first device that has it, from the first part that has it; the collection
    start the first one (``earliest_start``: the earliest, as the generation-2/3 reader takes it)."""
    out = RunMeta(layout=metas[0].layout)
    for m in metas:
        if m.collection_start_us is not None and (
            out.collection_start_us is None
            or (earliest_start and m.collection_start_us < out.collection_start_us)
        ):
            out.collection_start_us = m.collection_start_us
        if out.platform_version is None and m.platform_version is not None:
            out.platform_version, out.chip = m.platform_version, m.chip
        if out.metric_set_raw is None and m.metric_set_raw is not None:
            out.metric_set_raw, out.metric_set = m.metric_set_raw, m.metric_set
            out.pmu_event_ids, out.ai_core_profiling_mode = m.pmu_event_ids, m.ai_core_profiling_mode
        out.devices = sorted(set(out.devices) | set(m.devices))
        out.device_generations += m.device_generations
        out.data_bytes += m.data_bytes
        out.sources += [x for x in m.sources if x not in out.sources]
        out.notes += [x for x in m.notes if x not in out.notes]
    return out


def _read_tlv(stream: SliceStream, dev: int, clock: DeviceClock, sink: Sink, log: IssueLog) -> None:
    unknown_states = 0
    for by_tag in decode_tlv(stream, hiprof_layouts.DECODED_TAGS, hiprof_layouts.COUNTED_TAGS, log, dev):
        for tag, b in by_tag.items():
            if tag == hiprof_layouts.TIME_LINE.tag:
                cols = hiprof_device.time_line_states(b, stream, dev, clock)
                unknown_states += int(
                    (~np.isin(cols["task_state"], list(hiprof_layouts.KNOWN_TASK_STATES))).sum()
                )
                sink.write("task_states", cols)
            elif tag == hiprof_layouts.TS_MEMCPY.tag:
                cols = hiprof_device.memcpy_states(b, stream, dev, clock)
                unknown_states += int((cols["task_state"] >= 1000).sum())
                sink.write("task_states", cols)
            elif tag == hiprof_layouts.STEP_TRACE.tag:
                sink.write("step_trace", hiprof_device.step_keypoints(b, stream, dev, clock))
            elif tag == hiprof_layouts.EVENT_COUNT.tag:
                sink.write("pmu_counters", hiprof_device.event_counts(b, stream, dev, clock))
    if unknown_states:
        log.add(
            Issue(
                stream.files[0].rel,
                "unknown_state",
                f"{unknown_states} task state record(s) with an unrecognised state were kept but take no part in the Task Scheduler",
                device_id=dev,
                count=unknown_states,
            )
        )
