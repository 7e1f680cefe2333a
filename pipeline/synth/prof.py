"""``profetl synth --layout prof``: msprof ``PROF_*`` trees of HWTS chips and STARS chips.

The generator decides every event on the run timeline (ns) first, then encodes it with
the layouts of ``pipeline.layouts.prof`` (the readers' own definitions). It returns a
``ProfTruth`` holding what it wrote: host API calls, the compact records and their ops,
every device start/end log in file order, PMU records, frequency samples and iterations.

Scenario, per device (one host thread each, ``tid = 7000 + device``): a model load, then
``inferences`` times: ``aclmdlExecute`` (ACL) around InputCopy, ModelExecute and
OutputCopy (MODEL level); inside ModelExecute one node launch per op (NODE level, with its
``node_basic_info``), a runtime ``KernelLaunch`` inside it whose ``task_track`` names the
device task, the task's execution on the device, then a ``StreamSynchronize`` per stream;
then a kernel launched outside any node (named by its task_track kernel name), an
ACL EVENT pair after each inference. Task ids count per stream and start again at 0
after inference ``flip_after`` (a flip record on the device, a FLIP_TASK on the host), and
after 65,535 (16-bit ids wrap, with a flip as well).

Chip families (docs/formats.md#generations): Ascend910A / Ascend310P write ``ts_track`` (40-byte),
``hwts.data`` and 128-byte ``aicore.data``; Ascend910B writes ``ts_track``,
``stars_soc.data``, ``ffts_profile.data`` and ``lpmFreqConv.data``, and its host clock
counts cycles (info.json CPU Frequency 100 MHz, docs/formats.md#clock-host). Every chip's info.json
carries a ``drvVersion`` from which batch ids come from flip records; ``old_driver`` writes
none, as drivers before 0x072211 did (batch ids from task-id wrap-around).

The control files carry what real ones do and msprof's parser relies on: the host
folder's info.json and sample.json name device ``"64"`` (the host), sample.json has the
AI Vector fields (``aiv_metrics``, ``aiv_profiling_events``, ``aiv_profiling_mode``)
beside the AI Core ones.

PMU records fit the task they measure: each block's cycles at the AI Core frequency in
force take at most 95 % of the task's duration divided by the block waves
(``ceil(block_dim / ai_core_num)``), so aicore_time never exceeds the task's duration;
each counter is at most the task's cycles.

Records of documented types that no table uses (an old-style flip record in ts_track,
HWTS log types 2 and 3, a stars_soc record of another func type, an FFTS block PMU record)
are written only with ``other_records``: they exercise the readers' counting, and a real
dump of this scenario would not carry them.

Every time is a multiple of 20 ns, exact on a 50 or 100 MHz counter and a 100 MHz host
clock.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from pipeline.layouts import HOST_MAGIC
from pipeline.layouts import prof as prof_layouts
from pipeline.synth.truth import plain, training_marks

HOST_DEVICE = 64


@dataclass(frozen=True)
class ChipSpec:
    name: str
    platform_version: str
    family: str  # hwts | stars
    hwts_mhz: int
    aic_mhz: int
    ai_core_num: int
    drv_version: int | None
    host_freq_mhz: int | None
    metric_set: str
    events: tuple[int, ...]


CHIPS = {
    "ascend910a": ChipSpec(
        "Ascend910A",
        "1",
        "hwts",
        100,
        1000,
        32,
        0x072211,
        None,
        "PipeUtilization",
        (0x8, 0xA, 0x9, 0xB, 0xC, 0xD, 0x54, 0x55),
    ),
    "ascend310p": ChipSpec(
        "Ascend310P",
        "4",
        "hwts",
        100,
        1080,
        8,
        0x072211,
        None,
        "Memory",
        (0x15, 0x16, 0x31, 0x32, 0xF, 0x10, 0x12, 0x13),
    ),
    "ascend910b": ChipSpec(
        "Ascend910B",
        "5",
        "stars",
        50,
        1800,
        24,
        0x072212,
        100,
        "PipeUtilization",
        (0x8, 0xA, 0x9, 0xB, 0xC, 0xD, 0x54, 0x55),
    ),
}

# metric sets a PROF_* sample.json names (msprof's vocabulary) and their events in slot order
METRIC_SETS = {
    "PipeUtilization": (0x8, 0xA, 0x9, 0xB, 0xC, 0xD, 0x54, 0x55),
    "Memory": (0x15, 0x16, 0x31, 0x32, 0xF, 0x10, 0x12, 0x13),
    "ArithmeticUtilization": (0x49, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F),
}
OP_TYPES = ["Conv2D", "MatMul", "Add", "Relu", "Cast", "TransData"]
TYPE_INFO = {  # (level, type) -> name, as type_info_dic carries them (docs/formats.md#dictionaries)
    (20000, (2 << 16) | 1): "aclmdlLoadFromFile",
    (20000, (2 << 16) | 3): "aclmdlExecute",
    (20000, (3 << 16) | 2): "aclrtMalloc",
    (20000, (3 << 16) | 20): "aclrtSynchronizeStream",
    (15000, 1): "ModelExecute",
    (15000, 2): "ModelLoad",
    (15000, 3): "InputCopy",
    (15000, 4): "OutputCopy",
    (10000, 5): "launch",
    (5000, 0): "KERNEL_AICORE",
    (5000, 1): "KERNEL_AICPU",
    (5000, 98): "FLIP_TASK",
    (5000, 1000): "KernelLaunch",
    (5000, 1001): "CpuKernelLaunch",
    (5000, 1030): "MemAlloc",
    (5000, 1050): "StreamSynchronize",
}
API_TYPE = {name: key for key, name in TYPE_INFO.items()}
COMPACT_TASK_TRACK_TYPE, NODE_BASIC_INFO_TYPE = (
    4,
    0,
)  # compact header types (the former not given in the repo)
GE_AI_CORE, GE_AI_CPU = 0, 1
HASH_BASE = 0xF000_0000_0000_0000  # hash ids above 2^63: u64 ids must survive as u64


@dataclass
class ProfConfig:
    chip: str = "ascend910a"
    seed: int = 0
    devices: int = 2
    processes: int = 1  # PROF_* directories of the job (devices split between them)
    streams: int = 2
    inferences: int = 3
    tasks: int = 6  # ops launched per inference
    flip_after: int = 2  # task ids start again at 0 after this inference (0: never)
    slice_bytes: int = 1000  # device slices (records straddle them); host slices hold whole records
    drop_start: int = 0  # executions whose start log is not written
    extra_start: int = 0  # executions preceded by a spurious start log (replaced by the real one)
    aged_records: int = 0  # STARS: the oldest stars_soc slices deleted, ending this many records + 7 bytes in
    sample_based: bool = (
        False  # HWTS chips: aicore.data holds per-interval, per-core samples (docs/formats.md#aic-sample)
    )
    sample_interval_ns: int = 20_000
    sample_cores: int = 3
    start_us: int = 1_767_225_600_000_000  # collection start (2026-01-01T00:00:00Z)
    metric_set: str | None = None  # a METRIC_SETS name; None: the chip's own (ChipSpec.metric_set)
    old_driver: bool = False  # info.json without drvVersion (batch ids from task-id wrap-around)
    other_records: bool = False  # also write documented records no table uses (see the module docstring)
    training: bool = False  # step trace also has FP, BP and all-reduce records (truth.training_marks)
    # step trace also has a STEP_START / STEP_END pair (tags 60000 / 60001) per iteration and one
    # lone STEP_START after the last (truth.step_marks; docs/formats.md#rule-step-marks)
    step_marks: bool = False
    # HWTS chips: also an AI CPU task record per AI CPU execution and one outside every execution
    # (truth.aicpu; docs/formats.md#aicpu-text, #aicpu-binary): "" none, "text" or "binary"
    aicpu: str = ""


@dataclass
class AicpuRecord:
    """One AI CPU task record written (ProfConfig.aicpu), with the times it holds."""

    device_id: int
    stream_id: int | None  # binary records only
    task_id: int | None
    launch: int | None  # index into truth.launches of the execution it was written for; None: none
    node_name: str | None  # the Node record written before it (text); None: none
    node_marks: int  # 0 (no Node record), 3 or 6 marks
    thread: int
    submit_ns: int
    schedule_ns: int
    before_ns: int
    after_ns: int
    dispatch_us: int  # as written: whole us
    total_us: int
    compute_us: int | None  # binary records and six-mark Node records
    memcpy_us: int | None


@dataclass
class ApiRecord:
    device_id: int  # the device its thread launches on
    level: str
    name: str
    api_type: int | None  # AscendCL tag (type >> 16); None for other levels
    pid: int
    tid: int
    start_ns: int
    end_ns: int
    item: str | None
    kind: str = "api"  # api | event_pair


@dataclass
class Launch:
    """One op launch: its host records, and the device task it names."""

    device_id: int
    infer_id: int
    stream_id: int
    task_id: int
    batch_id: int
    op_name: str
    op_type: str
    ge_task_type: str
    block_dim: int
    api_name: str
    task_type_name: str  # device task type (HWTS / STARS SQE name)
    start_ns: int
    end_ns: int
    track_ns: int


@dataclass
class DeviceLog:
    device_id: int
    stream_id: int
    task_id: int
    is_end: bool
    ts_ns: int
    task_type_name: str


@dataclass
class PmuRecord:
    device_id: int
    stream_id: int
    task_id: int
    total_cycles: int
    counters: list[int]
    ts_ns: int  # the task's end
    time_freq_mhz: float  # AI Core frequency in force at ts_ns


@dataclass
class Sample:
    device_id: int
    core_id: int
    ts_ns: int  # end of the interval
    total_cycles: int
    counters: list[int]


@dataclass
class Iteration:
    device_id: int
    infer_id: int
    model_id: int
    acl: tuple[int, int]
    input: tuple[int, int]
    infer: tuple[int, int]
    output: tuple[int, int]
    step: tuple[int, int]
    marks: list[tuple[int, int, int]] = field(default_factory=list)  # training records: (tag, stream, ns)


@dataclass
class DeviceSpec:
    device_id: int
    hwts_mhz: int
    aic_mhz: int
    ai_core_num: int
    host_mon_ns: int
    dev_cntvct: int
    prof_dir: str


@dataclass
class ProfTruth:
    layout: str
    chip: str
    platform_version: str
    family: str
    metric_set: str
    event_ids: list[int]
    root: str  # what to ingest, relative to the synth output folder ("" = the folder itself)
    prof_dirs: list[str] = field(default_factory=list)
    devices: list[DeviceSpec] = field(default_factory=list)
    api_calls: list[ApiRecord] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    logs: list[DeviceLog] = field(default_factory=list)  # per device, in file order
    pmu: list[PmuRecord] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    iterations: list[Iteration] = field(default_factory=list)
    freq: list[tuple[int, int, int]] = field(default_factory=list)  # (device, ts_ns, MHz)
    # (device, index_id, tag, ns) of the STEP_START / STEP_END records written (ProfConfig.step_marks)
    step_marks: list[tuple[int, int, int, int]] = field(default_factory=list)
    aicpu: list[AicpuRecord] = field(default_factory=list)  # in file order per device
    pid: int = 4321
    drv_version: int | None = None  # info.json drvVersion written (None: none)

    def as_dict(self) -> dict:
        return plain(self)


def _r20(x: int) -> int:
    return (x // 20) * 20


def _utc_text(us: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)).strftime("%Y-%m-%d %H:%M:%S.%f")


def _write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, separators=(",", ":")) + "\n")


def _prof_name(i: int, start_us: int) -> str:
    t = datetime(1970, 1, 1) + timedelta(microseconds=start_us + i * 250_000)
    return f"PROF_{i + 1:06d}_{t.strftime('%Y%m%d%H%M%S')}{t.microsecond // 1000:03d}_SYNTH{chr(65 + i)}"


class _Host:
    """Host records of one PROF_* directory, encoded at the end."""

    def __init__(self, spec: ChipSpec, mon_ns: int, cntvct: int):
        self.spec = spec
        self.mon_ns = mon_ns
        self.cntvct = cntvct
        self.api: list[tuple] = []  # (level, type, tid, request, begin, end, item)
        self.tracks: list[tuple] = []  # (ts, device, stream, task, batch, task type, kernel hash, tid)
        self.nodes: list[tuple] = []  # (ts, op hash, ge type, op type hash, block, tid)
        self.graphs: list[tuple] = []  # (ts, model name hash, graph id, model id, tid)
        self.hashes: dict[int, str] = {}
        self._ids: dict[str, int] = {}

    def h(self, name: str) -> int:
        if name not in self._ids:
            k = HASH_BASE + 7 * len(self.hashes) + 3
            self.hashes[k] = name
            self._ids[name] = k
        return self._ids[name]

    def units(self, ns: int) -> int:
        """Host timestamp as the host clock writes it (docs/formats.md#clock-host)."""
        f = self.spec.host_freq_mhz
        if not f:
            return ns
        assert (ns - self.mon_ns) * f % 1000 == 0
        return self.cntvct + (ns - self.mon_ns) * f // 1000


def generate(out: Path, cfg: ProfConfig | None = None) -> ProfTruth:
    cfg = cfg or ProfConfig()
    if cfg.chip not in CHIPS:
        raise ValueError(f"chip {cfg.chip!r}; known: {', '.join(CHIPS)}")
    spec = CHIPS[cfg.chip]
    if cfg.metric_set is not None:
        if cfg.metric_set not in METRIC_SETS:
            raise ValueError(
                f"metric set {cfg.metric_set!r} for a PROF_* dump; known: {', '.join(METRIC_SETS)}"
            )
        spec = replace(spec, metric_set=cfg.metric_set, events=METRIC_SETS[cfg.metric_set])
    if cfg.old_driver:
        spec = replace(spec, drv_version=None)
    if cfg.sample_based and spec.family != "hwts":
        raise ValueError("sample-based AI Core data is written for HWTS chips (aicore.data) only")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    nproc = max(1, min(cfg.processes, cfg.devices))
    prof_names = [_prof_name(i, cfg.start_us) for i in range(nproc)]
    truth = ProfTruth(
        "prof",
        spec.name,
        spec.platform_version,
        spec.family,
        spec.metric_set,
        list(spec.events),
        root="" if nproc > 1 else prof_names[0],
        prof_dirs=prof_names,
        drv_version=spec.drv_version,
    )
    host_mon = 4_000_000_000_000
    hosts = [_Host(spec, host_mon, 777_000_000 + 1000 * i) for i in range(nproc)]
    for d in range(cfg.devices):
        p = d % nproc
        _device(out / prof_names[p], cfg, spec, d, hosts[p], truth, prof_names[p])
    for p, host in enumerate(hosts):
        _write_host(out / prof_names[p], cfg, spec, host, truth)
    return truth


def _device(
    prof: Path, cfg: ProfConfig, spec: ChipSpec, d: int, host: _Host, truth: ProfTruth, prof_name: str
) -> None:
    rng = random.Random(cfg.seed * 7919 + d * 31 + len(spec.name))
    dev = DeviceSpec(
        d,
        spec.hwts_mhz,
        spec.aic_mhz,
        spec.ai_core_num,
        host.mon_ns + 20_000 * d,
        1_000_000_000 + 123_460 * d,
        prof_name,
    )
    truth.devices.append(dev)
    tid, pid = 7000 + d, truth.pid
    streams = [3 + 2 * i for i in range(max(1, cfg.streams))]
    ops = []
    for j in range(cfg.tasks):
        cpu = j % 5 == 4
        ops.append(
            (
                f"{OP_TYPES[j % len(OP_TYPES)].lower()}_{j}",
                OP_TYPES[j % len(OP_TYPES)],
                streams[j % len(streams)],
                "AI_CPU" if cpu else "AI_CORE",
                rng.choice([1, 2, 4, 8, 16, 32, 48]),
            )
        )

    def api(level: str, name: str, start: int, end: int, item: str | None = None, kind: str = "api") -> None:
        lv, ty = API_TYPE[name]
        truth.api_calls.append(
            ApiRecord(d, level, name, ty >> 16 if level == "acl" else None, pid, tid, start, end, item, kind)
        )
        if kind == "api":
            item_id = int(item) if level == "model" else (host.h(item) if item else 0)
            host.api.append((lv, ty, tid, 0, host.units(start), host.units(end), item_id))

    t = host.mon_ns + 3_000_000 + d * 2_000_000
    # model load and a malloc before the first inference
    api("acl", "aclmdlLoadFromFile", t, t + 60_000)
    api("model", "ModelLoad", t + 2_000, t + 50_000, "1")
    host.graphs.append((host.units(t + 4_000), host.h("resnet50"), 7, 1, tid))
    api("acl", "aclrtMalloc", t + 70_000, t + 74_000)
    api("runtime", "MemAlloc", t + 71_000, t + 73_000)
    t += 100_000

    flips: list[tuple[int, int, int]] = []  # (stream, ts_ns, flip_num)
    counters = {s: 0 for s in streams}
    stream_free = {s: 0 for s in streams}
    batch = {s: 0 for s in streams}
    logs: list[DeviceLog] = []
    launches: list[Launch] = []

    def next_task_id(s: int, track_ns: int) -> int:
        """The stream's next task id: 16 bits, so after 65,535 it wraps to 0 and the driver
        writes a flip (its batch goes up), as at ``flip_after``."""
        if counters[s] > 0xFFFF:
            batch[s] += 1
            counters[s] = 0
            host.tracks.append((host.units(track_ns - 20), d, s, 0, batch[s], 98, 0, tid))
            flips.append((s, stream_free[s] + 20, batch[s]))  # after the stream's last task, before its next
        counters[s] += 1
        return counters[s] - 1

    for k in range(1, cfg.inferences + 1):
        acl0 = t
        inp = (t + 1_000, t + 6_000)
        api("model", "InputCopy", *inp, "1")
        m0 = t + 7_000
        if cfg.flip_after and k == cfg.flip_after + 1:
            for s in streams:  # the task-id counters start again: a flip per stream
                batch[s] += 1
                counters[s] = 0
                host.tracks.append((host.units(m0 + 60), d, s, 0, batch[s], 98, 0, tid))
                flips.append((s, _r20(m0 + 100), batch[s]))
        cursor = m0 + 1_000
        ends = []
        for name, op_type, s, ge, block in ops:
            node = (cursor, cursor + 4_000)
            api("node", "launch", *node, name)
            host.nodes.append(
                (
                    host.units(cursor + 200),
                    host.h(name),
                    GE_AI_CPU if ge == "AI_CPU" else GE_AI_CORE,
                    host.h(op_type),
                    block,
                    tid,
                )
            )
            rt_name = "CpuKernelLaunch" if ge == "AI_CPU" else "KernelLaunch"
            rt = (cursor + 1_000, cursor + 3_000)
            api("runtime", rt_name, *rt)
            track = cursor + 1_500
            task_id = next_task_id(s, track)
            host.tracks.append(
                (
                    host.units(track),
                    d,
                    s,
                    task_id,
                    batch[s],
                    1 if ge == "AI_CPU" else 0,
                    host.h(f"{name}_kernel"),
                    tid,
                )
            )
            # a stream runs its tasks one after another
            start = max(_r20(rt[1] + 500 + rng.randint(0, 40) * 20), stream_free[s] + 40)
            end = start + rng.randint(50, 1_500) * 20
            stream_free[s] = end
            type_name = "AI_CPU" if ge == "AI_CPU" else "AI_CORE"
            launches.append(
                Launch(
                    d,
                    k,
                    s,
                    task_id,
                    batch[s],
                    name,
                    op_type,
                    ge,
                    block,
                    rt_name,
                    type_name,
                    start,
                    end,
                    track,
                )
            )
            ends.append(end)
            cursor += 5_000
        # a kernel launched outside any node launch: its op name is its task_track kernel name (formats.md#rule-association)
        s = streams[0]
        rt = (cursor, cursor + 2_000)
        api("runtime", "CpuKernelLaunch", *rt)
        task_id = next_task_id(s, cursor + 500)
        host.tracks.append(
            (host.units(cursor + 500), d, s, task_id, batch[s], 1, host.h("DataPrep_kernel"), tid)
        )
        start = max(_r20(rt[1] + 500), stream_free[s] + 40)
        end = start + rng.randint(50, 500) * 20
        stream_free[s] = end
        launches.append(
            Launch(
                d,
                k,
                s,
                task_id,
                batch[s],
                "DataPrep_kernel",
                "",
                "AI_CPU",
                0,
                "CpuKernelLaunch",
                "AI_CPU",
                start,
                end,
                cursor + 500,
            )
        )
        ends.append(end)
        cursor += 3_000
        sync_end = _r20(max(ends + [cursor]) + 1_000)
        for _ in streams:
            api("runtime", "StreamSynchronize", cursor, sync_end)
        m1 = sync_end + 500
        api("model", "ModelExecute", m0, m1, "1")
        outp = (m1 + 500, m1 + 5_500)
        api("model", "OutputCopy", *outp, "1")
        acl1 = outp[1] + 500
        api("acl", "aclmdlExecute", acl0, acl1)
        ev = (acl1 + 1_000, acl1 + 3_000)
        api("acl", "aclrtSynchronizeStream", *ev, kind="event_pair")
        lv, ty = API_TYPE["aclrtSynchronizeStream"]
        host.api.append((lv, ty, tid, k, host.units(ev[0]), prof_layouts.EVENT_FLAG, 0))
        host.api.append((lv, ty, tid, k, host.units(ev[1]), prof_layouts.EVENT_FLAG, 0))
        step = (_r20(m0 + 200), _r20(m1 - 100))
        truth.iterations.append(
            Iteration(
                d, k, 1, (acl0, acl1), inp, (m0, m1), outp, step, training_marks(step) if cfg.training else []
            )
        )
        t = ev[1] + 40_000

    # device logs in time order; some executions lose their start, some get a spurious one
    events = []
    for i, x in enumerate(launches):
        events.append((x.start_ns, 0, i))
        events.append((x.end_ns, 1, i))
    drop = set(rng.sample(range(len(launches)), min(cfg.drop_start, len(launches))))
    extra = set(
        rng.sample(sorted(set(range(len(launches))) - drop), min(cfg.extra_start, len(launches) - len(drop)))
    )
    for i in extra:
        events.append((_r20(launches[i].start_ns - 300), 0, i))
    events.sort()
    for ts, is_end, i in events:
        x = launches[i]
        if not is_end and i in drop and ts == x.start_ns:
            continue
        logs.append(DeviceLog(d, x.stream_id, x.task_id, bool(is_end), ts, x.task_type_name))
    durations = {id(x): x.end_ns - x.start_ns for x in launches}  # before lost starts are blanked
    aicpu = _aicpu_records(cfg, spec, d, launches, len(truth.launches)) if cfg.aicpu else []
    truth.aicpu.extend(aicpu)
    for i in drop:
        launches[i].start_ns = None
    truth.launches.extend(launches)
    if cfg.step_marks:
        truth.step_marks.extend(step_mark_records([it for it in truth.iterations if it.device_id == d]))

    # AI Core frequency (STARS): before the first task, then lower after the first inference
    mine = [it for it in truth.iterations if it.device_id == d]
    freq = (
        [(d, dev.host_mon_ns - 2_000, 1650), (d, mine[0].step[1] + 20, 1500)]
        if spec.family == "stars"
        else []
    )
    truth.freq.extend(freq)

    pmu, samples = [], []
    if cfg.sample_based:
        first, last = min(x.end_ns for x in launches), max(x.end_ns for x in launches)
        for end in range(
            _r20(first) + cfg.sample_interval_ns, last + cfg.sample_interval_ns, cfg.sample_interval_ns
        ):
            for core in range(min(cfg.sample_cores, spec.ai_core_num)):
                cyc = rng.randint(1, cfg.sample_interval_ns * spec.aic_mhz // 1000)
                cnt = [rng.randint(0, cyc) for _ in spec.events]
                samples.append(Sample(d, core, end, cyc, cnt + [0] * (8 - len(cnt))))
    truth.samples.extend(samples)
    for x in sorted(launches, key=lambda x: x.end_ns):
        if x.task_type_name != "AI_CORE" or cfg.sample_based:
            continue
        f = spec.aic_mhz
        for _, ts, mhz in freq:
            if ts <= x.end_ns:
                f = mhz
        cyc = block_cycles(rng, x.block_dim, spec.ai_core_num, durations[id(x)], f)
        cnt = [rng.randint(0, cyc) for _ in spec.events]
        if 0x54 in spec.events and 0x55 in spec.events:
            i54, i55 = spec.events.index(0x54), spec.events.index(0x55)
            cnt[i55] = rng.randint(0, cnt[i54])
        pmu.append(PmuRecord(d, x.stream_id, x.task_id, cyc, cnt + [0] * (8 - len(cnt)), x.end_ns, float(f)))
    truth.pmu.extend(pmu)
    truth.logs.extend(
        logs if not (cfg.aged_records and spec.family == "stars") else logs[cfg.aged_records + 1 :]
    )
    _write_device(prof / f"device_{d}", cfg, spec, dev, logs, pmu, freq, mine, flips, launches, samples)
    if aicpu:
        _write_aicpu(prof / f"device_{d}" / "data", cfg, dev, aicpu)


def _aicpu_records(cfg: ProfConfig, spec: ChipSpec, d: int, launches: list, first: int) -> list[AicpuRecord]:
    """An AI CPU record inside each AI CPU execution (submitted, scheduled, run and ended within
    its span), and one after the last execution, which no execution holds."""
    if spec.family != "hwts":
        return []
    out = []
    spans = [
        (first + i, x.start_ns, x.end_ns, x) for i, x in enumerate(launches) if x.task_type_name == "AI_CPU"
    ]
    last = max(x.end_ns for x in launches)
    spans.append((None, last + 10_000, last + 30_000, None))
    for k, (i, start, end, x) in enumerate(sorted(spans, key=lambda t: t[1])):
        span = end - start
        submit, schedule = start + _r20(span // 10), start + _r20(span // 5)
        before, after = start + _r20(3 * span // 10), end - _r20(span // 10)
        # text: no Node record, one of three marks or of six in turn; the record no execution
        # holds always has one, so that it keeps its own name
        marks = ((0, 3, 6)[k % 3] if x else 3) if cfg.aicpu == "text" else 0
        binary = cfg.aicpu == "binary"
        out.append(
            AicpuRecord(
                d,
                x.stream_id if binary and x else (5 if binary else None),
                x.task_id if binary and x else (7 if binary else None),
                i,
                (x.op_name if x else "Lone_op") if marks else None,
                marks,
                1 + k % 4,
                submit,
                schedule,
                before,
                after,
                (before - submit) // 1000,
                (after - submit) // 1000,
                3 if binary or marks == 6 else None,
                1 if binary or marks == 6 else None,
            )
        )
    return out


def _write_aicpu(data: Path, cfg: ProfConfig, dev: DeviceSpec, recs: list[AicpuRecord]) -> None:
    """DATA_PREPROCESS.dev.AICPU.<dev>.slice_N: text records separated by NULs, or 128-byte records."""
    tick = {id(r): _syscnt(dev, [r.submit_ns, r.schedule_ns, r.before_ns, r.after_ns]).tolist() for r in recs}
    if cfg.aicpu == "binary":
        a = prof_layouts.AICPU_TASK.zeros(len(recs))
        a["magic"], a["tag"] = HOST_MAGIC, prof_layouts.AICPU_TASK_TAG
        for j, r in enumerate(recs):
            submit, schedule, before, after = tick[id(r)]
            a[j]["stream_id"], a[j]["task_id"] = r.stream_id, r.task_id
            a[j]["run_start_us"], a[j]["run_end_us"] = r.before_ns // 1000, r.after_ns // 1000
            a[j]["run_start_syscnt"], a[j]["run_end_syscnt"] = before, after
            a[j]["compute_start_us"] = r.before_ns // 1000
            a[j]["memcpy_start_us"] = r.before_ns // 1000 + r.compute_us
            a[j]["memcpy_end_us"] = r.before_ns // 1000 + r.compute_us + r.memcpy_us
            a[j]["thread_id"], a[j]["device_id"] = r.thread, 0
            a[j]["submit_syscnt"], a[j]["schedule_syscnt"] = submit, schedule
            a[j]["before_run_syscnt"], a[j]["after_run_syscnt"] = before, after
            a[j]["dispatch_us"], a[j]["total_us"] = r.dispatch_us, r.total_us
        raw = a.tobytes()
    else:
        parts = []
        for r in recs:
            submit, schedule, before, after = tick[id(r)]
            b_us, a_us = r.before_ns // 1000, r.after_ns // 1000
            if r.node_marks == 3:
                parts.append(f"Node:{r.node_name}, Run start:{b_us} {before}, Run end:{a_us} {after}")
            elif r.node_marks == 6:
                c, m0, m1 = b_us, b_us + r.compute_us, b_us + r.compute_us + r.memcpy_us
                parts.append(
                    f"Node:{r.node_name}, Run start:{b_us} {before}, Compute start:{c} {before}, "
                    f"Memcpy start:{m0} {before}, Memcpy end:{m1} {before}, Run end:{a_us} {after}"
                )
            parts.append(
                f"Thread[{r.thread:2d}] process device[0]:aicpu[ 0] task end, tickDrvTopHalf={submit},"
                f"tickDrvBottomHalf={schedule}, tickBeforeRun={before},tickAfterRun={after}, "
                f"dispatchTime={r.dispatch_us} us, totalTime={r.total_us} us."
            )
        raw = b"".join(p.encode() + b"\0" for p in parts)
    _write_slices(data, f"DATA_PREPROCESS.dev.AICPU.{dev.device_id}", raw, cfg.slice_bytes)


def block_cycles(rng: random.Random, block_dim: int, ai_core_num: int, duration_ns: int, mhz: float) -> int:
    """Total cycles of a task's ``block_dim`` blocks that fit its duration: ``ceil(block_dim /
    ai_core_num)`` waves of blocks, each block busy 30-95 % of a wave's share of the duration at
    ``mhz``; so total_cycles / f / block_dim * waves (aicore_time) <= 0.95 * duration."""
    blocks = max(1, block_dim)
    waves = -(-blocks // max(1, ai_core_num))
    most = max(1, int(duration_ns * mhz * 95 // (100_000 * waves)))
    return sum(rng.randint(max(1, most * 30 // 95), most) for _ in range(blocks))


# --- encoding -------------------------------------------------------------------------


def _write_slices(data_dir: Path, stem: str, data: bytes, slice_bytes: int, drop_head: int = 0) -> None:
    """``stem.slice_N`` files with ``.done`` markers; ``drop_head`` bytes of the oldest slices aged away."""
    data_dir.mkdir(parents=True, exist_ok=True)
    if not data:
        return
    n = 0
    for pos in range(0, len(data), slice_bytes):
        chunk = data[pos : pos + slice_bytes]
        end = pos + len(chunk)
        n += 1
        if end <= drop_head:
            continue  # deleted by ageing
        chunk = chunk[max(0, drop_head - pos) :]
        path = data_dir / f"{stem}.slice_{n - 1}"
        path.write_bytes(chunk)
        (data_dir / f"{path.name}.done").write_text(f"filesize:{len(chunk)}\n")


def _syscnt(dev: DeviceSpec, ns) -> np.ndarray:
    ns = np.asarray(ns, np.int64)
    return (ns - dev.host_mon_ns) * dev.hwts_mhz // 1000 + dev.dev_cntvct


def _control(
    dirpath: Path,
    suffix: str,
    info: dict,
    sample: dict,
    start_us: int,
    mon: int,
    sync: str,
    dev_start: str | None,
) -> None:
    dirpath.mkdir(parents=True, exist_ok=True)
    _write_json(dirpath / f"info.json{suffix}", info)
    _write_json(dirpath / "sample.json", sample)
    start_mon = mon - 1_000_000
    _write_json(
        dirpath / f"start_info{suffix}",
        {
            "collectionDateBegin": _utc_text(start_us),
            "collectionTimeBegin": str(start_us),
            "clockMonotonicRaw": str(start_mon),
        },
    )
    _write_json(
        dirpath / f"end_info{suffix}",
        {
            "collectionDateEnd": _utc_text(start_us + 60_000_000),
            "collectionTimeEnd": str(start_us + 60_000_000),
            "clockMonotonicRaw": str(start_mon + 60_000_000_000),
        },
    )
    (dirpath / f"host_start.log{suffix}").write_text(sync)
    if dev_start is not None:
        (dirpath / f"dev_start.log{suffix}").write_text(dev_start)
    for name in [f"info.json{suffix}", "sample.json", f"start_info{suffix}", f"end_info{suffix}"]:
        (dirpath / f"{name}.done").write_text(f"filesize:{(dirpath / name).stat().st_size}\n")


def _sample(spec: ChipSpec, devices: str, cfg: ProfConfig) -> dict:
    mode = "sample-based" if cfg.sample_based else "task-based"
    events = ",".join(hex(e) for e in spec.events)
    return {
        "devices": devices,
        "ai_core_profiling": "on",
        "ai_core_profiling_mode": mode,
        "aicore_sampling_interval": cfg.sample_interval_ns // 1000,
        "ai_core_metrics": spec.metric_set,
        "ai_core_profiling_events": events,
        "aiv_profiling": "on",
        "aiv_profiling_mode": mode,
        "aiv_sampling_interval": cfg.sample_interval_ns // 1000,
        "aiv_metrics": spec.metric_set,
        "aiv_profiling_events": events,
        "llc_profiling": "read",
        "hwts_log": "on",
        "ts_timeline": "on",
        "runtimeApi": "on",
        "acl": "on",
    }


def _info(spec: ChipSpec, devices: str, pid: int, device: DeviceSpec | None) -> dict:
    info = {
        "jobInfo": "NA",
        "devices": devices,
        "platform_version": spec.platform_version,
        "pid": str(pid),
        "hostname": "synth",
        "memoryTotal": 16384,
        "netCard": [],
        "version": "1.0",
        "rank_id": 0,
        "CPU": [
            {
                "Id": 0,
                "Name": "synth",
                "Frequency": str(spec.host_freq_mhz) if spec.host_freq_mhz else "",
                "Logical_CPU_Count": 2,
                "Type": "synth",
            }
        ],
    }
    if spec.drv_version is not None:
        info["drvVersion"] = spec.drv_version
    if device is not None:
        info["DeviceInfo"] = [
            {
                "id": device.device_id,
                "hwts_frequency": str(device.hwts_mhz),
                "aic_frequency": str(device.aic_mhz),
                "aiv_frequency": str(device.aic_mhz),
                "ai_core_num": device.ai_core_num,
                "aiv_num": 0,
            }
        ]
    return info


def step_mark_records(iterations: list[Iteration]) -> list[tuple[int, int, int, int]]:
    """(device, index_id, tag, ns): a STEP_START 20 ns after each iteration's start and a STEP_END
    20 ns before its end, index id the iteration's, then a STEP_START without an END (index id one
    past the last iteration's) 20 ns after the last end: a group msprof skips."""
    out = []
    for it in iterations:
        out += [
            (it.device_id, it.infer_id, 60000, it.step[0] + 20),
            (it.device_id, it.infer_id, 60001, it.step[1] - 20),
        ]
    if iterations:
        last = max(iterations, key=lambda it: it.step[1])
        out.append((last.device_id, max(it.infer_id for it in iterations) + 1, 60000, last.step[1] + 20))
    return out


def _write_device(
    ddir: Path,
    cfg: ProfConfig,
    spec: ChipSpec,
    dev: DeviceSpec,
    logs: list[DeviceLog],
    pmu: list[PmuRecord],
    freq: list,
    iterations: list[Iteration],
    flips: list,
    launches: list,
    samples: list[Sample],
) -> None:
    d = dev.device_id
    _control(
        ddir,
        f".{d}",
        _info(spec, str(d), 4321, dev),
        _sample(spec, str(d), cfg),
        cfg.start_us,
        dev.host_mon_ns,
        f"[Device{d}]\nclock_monotonic_raw: {dev.host_mon_ns}\ncntvct: {dev.dev_cntvct}\ncntvct_diff: 0\n",
        f"clock_monotonic_raw: {dev.host_mon_ns + 17}\ncntvct: {dev.dev_cntvct}\n",
    )
    data = ddir / "data"
    data.mkdir(parents=True, exist_ok=True)

    # ts_track: step trace, flips, a task-type record per launch, one old-style flip (tag 13, skipped)
    recs = []
    # (iteration, tag, stream, ns): MODEL_START, the training records, MODEL_END
    marks = [
        (it, tag, stream, ns)
        for it in iterations
        for tag, stream, ns in [(0, 0, it.step[0]), *it.marks, (1, 0, it.step[1])]
    ]
    # (index id, tag, stream, ns) of every record
    marks = [(it.infer_id, tag, stream, ns) for it, tag, stream, ns in marks]
    if cfg.step_marks:
        marks += [(idx, tag, 0, ns) for _, idx, tag, ns in step_mark_records(iterations)]
        marks.sort(key=lambda m: m[3])
    st = prof_layouts.TS_STEP_TRACE.zeros(len(marks))
    st["mode"], st["tag"], st["buf_size"] = 1, prof_layouts.TS_STEP_TRACE.tag, 40
    st["timestamp"] = _syscnt(dev, [m[3] for m in marks])
    st["index_id"] = [m[0] for m in marks]
    st["model_id"] = 1
    st["tag_id"] = [m[1] for m in marks]
    st["stream_id"] = [m[2] for m in marks]
    recs += [(int(ts), r.tobytes()) for ts, r in zip(st["timestamp"], st)]
    if flips and spec.drv_version is not None:
        f = prof_layouts.TS_FLIP.zeros(len(flips))
        f["mode"], f["tag"], f["buf_size"] = 1, prof_layouts.TS_FLIP.tag, 40
        f["timestamp"] = _syscnt(dev, [x[1] for x in flips])
        f["stream_id"] = [x[0] for x in flips]
        f["flip_num"] = [x[2] for x in flips]
        recs += [(int(ts), r.tobytes()) for ts, r in zip(f["timestamp"], f)]
    tt = prof_layouts.TS_TASK_TYPE.zeros(len(launches))
    tt["mode"], tt["tag"], tt["buf_size"] = 1, prof_layouts.TS_TASK_TYPE.tag, 40
    tt["timestamp"] = _syscnt(dev, [_r20(x.end_ns) for x in launches])
    tt["stream_id"] = [x.stream_id for x in launches]
    tt["task_id"] = [x.task_id for x in launches]
    tt["task_type"] = [1 if x.task_type_name == "AI_CPU" else 0 for x in launches]
    tt["task_state"] = 2
    recs += [(int(ts), r.tobytes()) for ts, r in zip(tt["timestamp"], tt)]
    if cfg.other_records:
        old = np.zeros(1, prof_layouts.TS_HEADER)
        old["mode"], old["tag"], old["buf_size"] = 1, 13, 40
        recs.append((0, old.tobytes()))
    recs.sort(key=lambda x: x[0])
    _write_slices(data, f"ts_track.data.{d}", b"".join(r for _, r in recs), cfg.slice_bytes)

    if spec.family == "hwts":
        h = prof_layouts.HWTS_LOG.zeros(len(logs) + (2 if cfg.other_records else 0))
        for i, x in enumerate(logs):
            h[i]["head"] = (1 if x.is_end else 0) | ((i % 16) << 4)
            h[i]["task_type"] = 1 if x.task_type_name == "AI_CPU" else 0
            h[i]["task_id"], h[i]["stream_id"] = x.task_id, x.stream_id
            h[i]["syscnt"] = _syscnt(dev, x.ts_ns)
        h["magic"] = prof_layouts.DEVICE_MAGIC
        for i in range(len(logs), len(h)):  # log types 2 and 3 (block start / end): counted, not read
            h[i]["head"] = 2 + (i - len(logs))
            h[i]["syscnt"] = _syscnt(dev, logs[-1].ts_ns)
        _write_slices(data, f"hwts.data.{d}", h.tobytes(), cfg.slice_bytes)
        if cfg.sample_based:
            a = prof_layouts.AIC_SAMPLE.zeros(len(samples))
            for i, x in enumerate(samples):
                a[i]["mode"], a[i]["core_id"], a[i]["count_num"] = 1, x.core_id, 1
                a[i]["task_cyc"], a[i]["counters"] = x.total_cycles, x.counters
                a[i]["timestamp"] = _syscnt(dev, x.ts_ns)
        else:
            a = prof_layouts.AIC_PMU.zeros(len(pmu))
            a["magic"] = prof_layouts.DEVICE_MAGIC
            for i, p in enumerate(pmu):
                a[i]["head"] = (i % 16) << 4
                a[i]["task_id"], a[i]["stream_id"] = p.task_id, p.stream_id
                a[i]["total_cycle"], a[i]["counters"] = p.total_cycles, p.counters
        _write_slices(data, f"aicore.data.{d}", a.tobytes(), cfg.slice_bytes)
    else:
        s = prof_layouts.STARS_ACSQ.zeros(len(logs) + (1 if cfg.other_records else 0))
        for i, x in enumerate(logs):
            sqe = 1 if x.task_type_name == "AI_CPU" else 0
            s[i]["head"] = (1 if x.is_end else 0) | ((i % 16) << 6) | (sqe << 10)
            # every other record with the stream's bit 12 set: the task id's bits 13-15 then
            # travel in the stream field (docs/formats.md#stars-ids)
            s[i]["stream_id"] = x.stream_id | (0x1000 | (x.task_id & 0xE000) if i % 2 else 0)
            s[i]["task_id"] = x.task_id
            s[i]["syscnt"] = _syscnt(dev, x.ts_ns)
        s["magic"] = prof_layouts.DEVICE_MAGIC
        if cfg.other_records:
            s[len(logs)]["head"] = 0b000011  # another func type: counted, not read
        raw = s.tobytes()
        drop = cfg.aged_records * prof_layouts.STARS_ACSQ.size + 7 if cfg.aged_records else 0
        _write_slices(data, f"stars_soc.data.{d}", raw, cfg.slice_bytes, drop_head=drop)
        f = prof_layouts.FFTS_PMU.zeros(len(pmu) + (1 if cfg.other_records else 0))
        by_key = {(x.stream_id, x.task_id, x.end_ns): x for x in launches}
        for i, p in enumerate(pmu):
            x = by_key[(p.stream_id, p.task_id, p.ts_ns)]
            f[i]["head"] = prof_layouts.FFTS_CONTEXT_PMU | ((i % 16) << 6)
            f[i]["stream_id"] = p.stream_id | (0x1000 | (p.task_id & 0xE000) if i % 3 == 0 else 0)
            f[i]["task_id"] = p.task_id
            f[i]["total_cycle"], f[i]["counters"] = p.total_cycles, p.counters
            f[i]["start_syscnt"] = _syscnt(dev, x.start_ns if x.start_ns is not None else x.end_ns)
            f[i]["end_syscnt"] = _syscnt(dev, p.ts_ns)
        if cfg.other_records:
            f[len(pmu)]["head"] = prof_layouts.FFTS_BLOCK_PMU  # a block PMU record: counted, not read
        f["magic"] = prof_layouts.DEVICE_MAGIC
        _write_slices(data, f"ffts_profile.data.{d}", f.tobytes(), cfg.slice_bytes)
        lp = prof_layouts.LPM_FREQ.zeros(2)
        lp[0]["count"], lp[1]["count"] = 1, len(freq) - 1
        for i, (_, ts, mhz) in enumerate(freq):
            rec, k = (0, 0) if i == 0 else (1, i - 1)
            lp[rec]["entries"][k] = (_syscnt(dev, ts), mhz, 0)
        _write_slices(data, f"lpmFreqConv.data.{d}", lp.tobytes(), 888)


def _write_host(prof: Path, cfg: ProfConfig, spec: ChipSpec, host: _Host, truth: ProfTruth) -> None:
    hdir = prof / "host"
    devs = str(HOST_DEVICE)  # a host folder's control files name the host, as real ones do
    _control(
        hdir,
        "",
        _info(spec, devs, truth.pid, None),
        _sample(spec, devs, cfg),
        cfg.start_us,
        host.mon_ns,
        f"[Host]\nclock_monotonic_raw: {host.mon_ns}\ncntvct: {host.cntvct}\ncntvct_diff: 0\n",
        None,
    )
    data = hdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "unaging.additional.type_info_dic.slice_0").write_text(
        "".join(f"{lv}_{ty}:{name}\n" for (lv, ty), name in TYPE_INFO.items())
    )
    (data / "unaging.additional.hash_dic.slice_0").write_text(
        "".join(f"{k}:{v}\n" for k, v in host.hashes.items())
    )

    per_slice = lambda size: max(1, cfg.slice_bytes // size) * size  # noqa: E731 - host slices hold whole records
    a = prof_layouts.API_EVENT.zeros(len(host.api))
    a["magic"] = HOST_MAGIC
    for i, (lv, ty, tid, req, b, e, item) in enumerate(host.api):
        a[i]["level"], a[i]["type"], a[i]["tid"], a[i]["request_id"] = lv, ty, tid, req
        a[i]["begin"], a[i]["end"], a[i]["item_id"] = b, e, item
    order = np.argsort(a["begin"], kind="stable")
    _write_slices(data, "aging.api_event.data", a[order].tobytes(), per_slice(prof_layouts.API_EVENT.size))

    t = prof_layouts.TASK_TRACK.zeros(len(host.tracks))
    t["magic"], t["level"], t["type"], t["data_len"] = (
        HOST_MAGIC,
        prof_layouts.RUNTIME_LEVEL,
        COMPACT_TASK_TRACK_TYPE,
        40,
    )
    for i, (ts, dev, s, task, batch, ttype, kernel, tid) in enumerate(host.tracks):
        t[i]["timestamp"], t[i]["device_id"], t[i]["stream_id"], t[i]["task_id"] = ts, dev, s, task
        t[i]["batch_id"], t[i]["task_type"], t[i]["kernel_name"], t[i]["tid"] = batch, ttype, kernel, tid
    _write_slices(data, "aging.compact.task_track", t.tobytes(), per_slice(prof_layouts.TASK_TRACK.size))

    n = prof_layouts.NODE_BASIC_INFO.zeros(len(host.nodes))
    n["magic"], n["level"], n["type"], n["data_len"] = (
        HOST_MAGIC,
        prof_layouts.NODE_LEVEL,
        NODE_BASIC_INFO_TYPE,
        40,
    )
    for i, (ts, op, ge, op_type, block, tid) in enumerate(host.nodes):
        n[i]["timestamp"], n[i]["op_name"], n[i]["task_type"], n[i]["op_type"] = ts, op, ge, op_type
        n[i]["block_num"], n[i]["tid"] = block, tid
    _write_slices(
        data, "unaging.compact.node_basic_info", n.tobytes(), per_slice(prof_layouts.NODE_BASIC_INFO.size)
    )

    g = prof_layouts.GRAPH_ID_MAP.zeros(len(host.graphs))
    g["magic"], g["level"], g["data_len"] = HOST_MAGIC, prof_layouts.MODEL_LEVEL, 16
    for i, (ts, name, graph, model, tid) in enumerate(host.graphs):
        g[i]["timestamp"], g[i]["model_name"], g[i]["graph_id"], g[i]["model_id"], g[i]["tid"] = (
            ts,
            name,
            graph,
            model,
            tid,
        )
    _write_slices(
        data, "unaging.additional.graph_id_map", g.tobytes(), per_slice(prof_layouts.GRAPH_ID_MAP.size)
    )
