"""Control files of one collection directory: its ``devices`` row and its clocks.

A device directory's clock converts device counter ticks to host-monotonic ns
(docs/formats.md#clock-device). The host directory's clock converts host timestamps: cycle counts
when ``info.json`` ``CPU[0].Frequency`` is a positive number, else ns as they are (docs/formats.md#clock-host).
Where ``info.json`` is missing, the HWTS frequency comes from ``ReadOptions`` (the
``PROFETL_HWTS_MHZ`` environment variable) or from ``CHIP_DEFAULT_HWTS_MHZ``, and the
``devices`` row says which (``hwts_freq_source``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.paths import relative
from pipeline.readers import metadata
from pipeline.readers.clock import DeviceClock, host_monotonic_ns
from pipeline.readers.issues import Issue, IssueLog
from pipeline.readers.prof.files import HOST_ID, CollectionDir

# platform_version -> chip name (docs/formats.md#chips); metadata.CHIPS names the common ones
STARS_PLATFORMS = {"5", "7", "8", "9", "11", "15", "16"}
CHIP_PLATFORM = {name.lower(): pv for pv, name in metadata.CHIPS.items()}

# HWTS counter frequency to use when a dump has no info.json. Ascend910A: 100 MHz, the
# hwts_frequency of real Ascend910 info.json.N files (the mindinsight captures of README,
# Development) and the 10 ns per cycle that mindinsight's HWTS parser assumes for MindSpore 0.5 dumps.
CHIP_DEFAULT_HWTS_MHZ = {"Ascend910A": 100.0}
# A profiler_default_tag dump (MindSpore training era) without info.json is taken to be
# from an Ascend910A, the only chip that naming was written for; recorded as assumed.
DEFAULT_TAG_CHIP = "Ascend910A"
FLIP_DRIVER = (
    0x072211  # info.json drvVersion from which batch ids come from flip records (docs/formats.md#batch-ids)
)


@dataclass(frozen=True)
class ReadOptions:
    """What a dump cannot say about itself: the HWTS frequency and the chip."""

    hwts_mhz: float | None = None
    chip: str | None = None  # chip name (Ascend910A) or platform_version ("1")

    @classmethod
    def from_env(cls) -> ReadOptions:
        mhz = os.environ.get("PROFETL_HWTS_MHZ")
        try:
            hwts = float(mhz) if mhz else None
        except ValueError:
            hwts = None
        return cls(hwts if hwts and hwts > 0 else None, os.environ.get("PROFETL_CHIP") or None)

    def platform_version(self) -> str | None:
        if not self.chip:
            return None
        c = self.chip.strip()
        return c if c.isdigit() else CHIP_PLATFORM.get(c.lower())


def generation(platform_version: str | None) -> int | None:
    if platform_version is None:
        return None
    if platform_version == "0":
        return 1
    return 3 if platform_version in STARS_PLATFORMS else 2


def chip_name(platform_version: str | None) -> str | None:
    if platform_version is None:
        return None
    return metadata.CHIPS.get(platform_version, f"platform {platform_version}")


@dataclass(frozen=True)
class HostClock:
    """Host timestamps to ns (docs/formats.md#clock-host)."""

    freq_mhz: float | None
    cntvct: int
    mon_ns: int

    def to_ns(self, ts: np.ndarray) -> np.ndarray:
        t = ts.astype(np.int64)
        f = self.freq_mhz
        if not f:
            return t
        delta = t - np.int64(self.cntvct)
        if float(f).is_integer():
            fi = np.int64(int(f))
            out = np.floor_divide(delta * np.int64(2000) + fi, 2 * fi) + np.int64(self.mon_ns)
        else:
            out = np.rint(delta * (1e3 / f)).astype(np.int64) + np.int64(self.mon_ns)
        return np.maximum(out, 0)  # msprof clamps negative results to 0


@dataclass
class CollectionMeta:
    device_id: int
    row: dict
    clock: DeviceClock | None = None  # device directories
    host_clock: HostClock | None = None  # host directory (and legacy single directories)
    platform_version: str | None = None
    pid: int | None = None
    events: list[int] = field(default_factory=list)
    profiling_mode: str | None = None
    metric_set_raw: str | None = None
    drv_version: int | None = None
    aic_mhz: float | None = None
    start_us: int | None = None  # start_info collectionTimeBegin

    @property
    def uses_flips(self) -> bool:
        return self.drv_version is not None and self.drv_version >= FLIP_DRIVER


def _pick(cd: CollectionDir, kind: str, device_id: int | None):
    by_dev = cd.control[kind]
    if device_id is not None and device_id in by_dev:
        return by_dev[device_id]
    if None in by_dev:
        return by_dev[None]
    return next(iter(by_dev.values()), None) if len(by_dev) == 1 else None


def _drv_version(drv, log: IssueLog, where: str, device_id: int) -> int | None:
    """info.json's drvVersion as a number; a value no driver version can be (not finite, negative,
    beyond 32 bits) is bad_metadata and read as unknown."""
    if isinstance(drv, str) and drv.isdigit() and len(drv) <= 12:
        drv = int(drv)
    if not isinstance(drv, (int, float)) or isinstance(drv, bool):
        return None
    if not (math.isfinite(drv) and 0 <= drv <= 0xFFFFFFFF):
        log.add(
            Issue(
                where,
                "bad_metadata",
                f"drvVersion {str(drv)[:24]} is out of the range of driver versions; read as unknown",
                device_id=device_id,
            )
        )
        return None
    return int(drv)


def _load(reader, path: Path | None, root: Path, log: IssueLog, device_id: int, what: str, required: bool):
    if path is None:
        if required:
            log.add(
                Issue(
                    what,
                    "missing_file",
                    "control file missing; the values it holds are unknown",
                    device_id=device_id,
                )
            )
        return None
    try:
        return reader(path)
    except metadata.MetadataError as e:
        log.add(Issue(relative(root, path), "bad_metadata", str(e), device_id=device_id))
        return None


def collection_meta(
    root: Path,
    cd: CollectionDir,
    device_id: int,
    log: IssueLog,
    options: ReadOptions,
    fallback_platform: str | None,
    default_chip: str | None,
) -> CollectionMeta:
    """The devices row and clocks of one collection directory (``device_id`` resolved by the caller)."""
    host = device_id == HOST_ID
    where = (cd.rel + "/") if cd.rel else ""
    suffix = "" if host else f".{device_id}"
    info_p = _pick(cd, "info", None if host else device_id)
    info = _load(
        metadata.read_info, info_p, root, log, device_id, f"{where}info.json{suffix}", not default_chip
    )
    sample = _load(
        metadata.read_sample,
        _pick(cd, "sample", None if host else device_id),
        root,
        log,
        device_id,
        f"{where}sample.json",
        not default_chip and not host,
    )
    start = _load(
        metadata.read_start_info,
        _pick(cd, "start_info", None if host else device_id),
        root,
        log,
        device_id,
        f"{where}start_info{suffix}",
        False,
    )
    host_sync = _load(
        metadata.read_sync_log,
        _pick(cd, "host_start", None if host else device_id),
        root,
        log,
        device_id,
        f"{where}host_start.log{suffix}",
        True,
    )
    dev_sync = None
    if not host:
        dev_sync = _load(
            metadata.read_sync_log,
            _pick(cd, "dev_start", device_id),
            root,
            log,
            device_id,
            f"{where}dev_start.log{suffix}",
            not default_chip,
        )

    pv = info.platform_version if info else None
    pv_source = "info.json" if pv is not None else None
    if pv is None and options.platform_version():
        pv, pv_source = options.platform_version(), "option"
    if pv is None and fallback_platform is not None:
        pv, pv_source = fallback_platform, "another collection directory of the dump"
    if pv is None and default_chip is not None:
        pv, pv_source = (
            CHIP_PLATFORM.get(default_chip.lower()),
            f"assumed ({default_chip}: profiler_default_tag naming)",
        )
    chip = chip_name(pv)

    dinfo = info.device_info[0] if info and info.device_info else None
    host_freq = info.host_freq_mhz if info else None
    meta = CollectionMeta(device_id, {}, platform_version=pv, pid=info.pid_int if info else None)
    drv = (info.model_extra or {}).get("drvVersion") if info else None
    meta.drv_version = _drv_version(drv, log, f"{where}info.json{suffix}", device_id)

    mon = None
    if host_sync is not None and host_sync.clock_monotonic_raw is not None:
        mon = host_monotonic_ns(host_sync.clock_monotonic_raw, host_sync.cntvct_diff, host_freq)
    hwts, hwts_source = None, None
    dev_cntvct = None
    if host:
        cnt = host_sync.cntvct if host_sync is not None and host_sync.cntvct is not None else 0
        meta.host_clock = HostClock(host_freq, cnt, mon or 0)
        if host_freq and (host_sync is None or host_sync.cntvct is None or mon is None):
            log.add(
                Issue(
                    relative(root, info_p),
                    "bad_metadata",
                    "host timestamps are counter cycles but host_start.log gives no cntvct/clock_monotonic_raw: "
                    "they are counted from counter 0",
                    device_id=device_id,
                )
            )
    else:
        if dinfo is not None and dinfo.hwts_mhz:
            hwts, hwts_source = dinfo.hwts_mhz, "info.json"
        elif options.hwts_mhz:
            hwts, hwts_source = options.hwts_mhz, "option"
        elif chip in CHIP_DEFAULT_HWTS_MHZ:
            hwts, hwts_source = CHIP_DEFAULT_HWTS_MHZ[chip], f"default for {chip}"
        if info is not None and dinfo is None:
            log.add(
                Issue(
                    relative(root, info_p), "bad_metadata", "info.json has no DeviceInfo", device_id=device_id
                )
            )
        if hwts is None:
            log.add(
                Issue(
                    where or ".",
                    "bad_metadata",
                    "no HWTS frequency (info.json, option PROFETL_HWTS_MHZ or a chip default): device times stay NULL",
                    device_id=device_id,
                )
            )
        elif hwts_source != "info.json":
            log.add(
                Issue(
                    where or ".",
                    "assumed_value",
                    f"HWTS frequency {hwts:g} MHz from {hwts_source}",
                    device_id=device_id,
                )
            )
        if dev_sync is not None and dev_sync.cntvct is not None and mon is not None:
            dev_cntvct = dev_sync.cntvct
            meta.clock = DeviceClock(hwts, dev_cntvct, mon)
        else:
            # no sync point: ticks are converted from counter 0 and stay on the device's own timeline
            log.add(
                Issue(
                    where or ".",
                    "bad_metadata",
                    "no device/host sync point (dev_start.log cntvct and host_start.log clock_monotonic_raw): "
                    "device times are counted from counter 0, not on the host timeline",
                    device_id=device_id,
                )
            )
            meta.clock = DeviceClock(hwts, 0, 0)
            mon = None

    events: list[int] = []
    if sample is not None:
        try:
            events = sample.event_ids()
        except metadata.MetadataError as e:
            log.add(
                Issue(
                    relative(root, _pick(cd, "sample", device_id)),
                    "bad_metadata",
                    str(e),
                    device_id=device_id,
                )
            )
    meta.events = events
    meta.profiling_mode = sample.ai_core_profiling_mode if sample else None
    meta.metric_set_raw = sample.ai_core_metrics if sample else None
    meta.aic_mhz = dinfo.aic_mhz if dinfo else None
    wall = None
    if (
        start is not None
        and start.collection_time_begin_us is not None
        and start.clock_monotonic_raw_ns is not None
    ):
        wall = start.collection_time_begin_us * 1000 - start.clock_monotonic_raw_ns
    if start is not None:
        meta.start_us = start.collection_time_begin_us
    meta.row = {
        "device_id": [device_id],
        "source_file": [relative(root, info_p) if info_p else None],
        "platform_version": [pv],
        "chip": [chip],
        "hwts_freq_mhz": [hwts],
        "aic_freq_mhz": [meta.aic_mhz],
        "ai_core_num": [dinfo.ai_core_num if dinfo else None],
        "host_freq_mhz": [host_freq],
        "host_mon_ns": [mon],
        "dev_cntvct": [dev_cntvct],
        "wall_offset_ns": [wall],
        "pid": [meta.pid],
        "ai_core_profiling_mode": [meta.profiling_mode],
        "metric_set": [metadata.normalise_metric_set(meta.metric_set_raw)],
        "metric_set_raw": [meta.metric_set_raw],
        "pmu_event_ids": [events],
        "collection_dir": [cd.rel],
        "platform_source": [pv_source],
        "hwts_freq_source": [hwts_source],
        "aic_freq_source": [None],  # set by the reader once it knows whether lpmFreqConv is there
        "drv_version": [meta.drv_version],
        "batch_id_source": [None],
    }
    return meta
