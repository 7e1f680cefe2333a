"""``profetl synth --layout hiprof``: a complete, consistent generation-1 ``result_dir``.

The generator first decides every event on the run timeline (ns), then encodes it
with the layouts in ``pipeline.layouts.hiprof`` (the readers' own definitions),
cutting each stream into slices at arbitrary byte positions so that records straddle
slice boundaries. It returns a ``Truth`` with every event it wrote.

Clock choices (docs/formats.md#clock-device): hwts 100 MHz, so one device tick is 10 ns and every
device time is a multiple of 10 ns, exactly representable; host structs are ns.

PMU records fit the task they measure (``pipeline.synth.prof.block_cycles``): aicore_time
(total_cycles / f / block_dim * ceil(block_dim / ai_core_num)) is at most 95 % of the
task's running time (RUNNING to COMPLETE), and every counter at most its cycles.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from pipeline.errors import UsageError
from pipeline.layouts import HOST_MAGIC
from pipeline.layouts import hiprof as hiprof_layouts
from pipeline.synth.prof import block_cycles
from pipeline.synth.truth import (
    ApiCall,
    DeviceTruth,
    Inference,
    Op,
    Pmu,
    TaskInstance,
    TaskState,
    Truth,
    training_marks,
)

METRIC_SET_EVENTS = {
    # hiprof's metric-set names and msprof's; docs/formats.md#rule-pmu-slots
    "aicorePipeline": [0x8, 0xA, 0x9, 0xB, 0xC, 0xD, 0x55, 0x54],
    "PipeUtilization": [0x8, 0xA, 0x9, 0xB, 0xC, 0xD, 0x54, 0x55],
    "aicoreMemoryBandwidth": [0x15, 0x16, 0x31, 0x32, 0xF, 0x10, 0x12, 0x13],
    "Memory": [0x15, 0x16, 0x31, 0x32, 0xF, 0x10, 0x12, 0x13],
    "aicoreArithmeticThroughput": [0x49, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F],
    "ArithmeticUtilization": [0x49, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F],
}
MAX_TASK_ID = 0xFFFF  # task ids are 16 bits
OP_TYPES = ["Conv2D", "MatMul", "Add", "Relu", "Cast", "TransData"]
ACL_CATEGORY = {1: "acl_op", 2: "acl_model", 3: "acl_rts", 4: "acl_others"}
HWTS_MHZ, AIC_MHZ, AI_CORE_NUM = 100, 1000, 2
AI_CORE_TASK, AI_CPU_TASK = 0, 1


@dataclass
class HiprofConfig:
    seed: int = 0
    devices: int = 1
    streams: int = 2
    inferences: int = 3
    tasks: int = 8  # kernel tasks per inference (task ids 1..tasks, reused every inference)
    slice_bytes: int = 4096
    aicore: bool = True  # write aicore.data (EVENT_COUNT)
    metric_set: str = "aicorePipeline"
    memcpy: bool = True  # one TS memcpy task per inference
    step_trace: bool = True
    training: bool = False  # step trace also has FP, BP and all-reduce records (truth.training_marks)
    p_waiting: float = 0.7
    p_pending: float = 0.7
    drop_complete: int = 0  # task instances whose COMPLETE record is not written
    late_states: int = 0  # device 0's TIME_LINE records written 1 s later in the file than their time says
    names: str = "slice"  # slice: <name>.<dev>.slice_N; legacy: older infer-style names
    hashed_names: bool = True  # some op/model names go through Framework.hash_dic
    start_us: int = 1_767_225_600_000_000  # collection start (2026-01-01T00:00:00Z); runs differ by it
    op_scale: dict[str, float] = field(default_factory=dict)  # op name -> factor on its running time
    pmu_share: dict[int, float] = field(
        default_factory=dict
    )  # PMU event id -> its counter as a share of the task's cycles (else random)


def _r10(x: int) -> int:
    return (x // 10) * 10


def generate(out: Path, cfg: HiprofConfig | None = None) -> Truth:
    cfg = cfg or HiprofConfig()
    if cfg.metric_set not in METRIC_SET_EVENTS:
        raise ValueError(f"metric set {cfg.metric_set!r}; known: {', '.join(METRIC_SET_EVENTS)}")
    if cfg.tasks + 1 > MAX_TASK_ID:  # the ops' ids and the memcpy's
        raise UsageError(
            f"--tasks {cfg.tasks}: at most {MAX_TASK_ID - 1} with --layout hiprof, whose task ids are "
            "16 bits and name one op each for the whole run (Ascend310 has no batch ids); "
            "--layout prof wraps its ids as newer chips do"
        )
    out = Path(out)
    (out / "data").mkdir(parents=True, exist_ok=True)
    events = METRIC_SET_EVENTS[cfg.metric_set]
    truth = Truth(layout="hiprof", metric_set=cfg.metric_set, event_ids=list(events))
    _write_json(
        out / "sample.json",
        {
            "devices": ",".join(str(d) for d in range(cfg.devices)),
            "ai_core_profiling": "on" if cfg.aicore else "off",
            "ai_core_profiling_mode": "task-based",
            "ai_core_metrics": cfg.metric_set,
            "ai_core_profiling_events": ",".join(hex(e) for e in events),
            "aicore_sampling_interval": 10,
            "llc_profiling": "read",
            "ts_timeline": "on",
            "runtimeApi": "on",
            "acl": "on",
        },
    )
    for d in range(cfg.devices):
        _device(out, cfg, d, truth)
    return truth


def _device(out: Path, cfg: HiprofConfig, d: int, truth: Truth) -> None:
    rng = random.Random(cfg.seed * 7919 + d)
    dev = DeviceTruth(
        d,
        HWTS_MHZ,
        AIC_MHZ,
        AI_CORE_NUM,
        host_mon_ns=5_000_000_000_000 + d * 1_000_000,
        dev_cntvct=1_000_000_000 + d * 123_457,
        pid=4321,
    )
    truth.devices.append(dev)
    tid = 4322
    _control_files(out, dev, cfg.start_us)
    streams = [5 + i for i in range(max(1, cfg.streams))]
    ops = []
    for j in range(cfg.tasks):
        op_type = OP_TYPES[j % len(OP_TYPES)]
        is_cpu = j % 5 == 4
        ops.append(
            Op(
                d,
                streams[j % len(streams)],
                j + 1,
                f"{op_type.lower()}_{j}",
                op_type,
                rng.choice([1, 2, 4, 8]),
                "AI_CPU" if is_cpu else "AI_CORE",
            )
        )
    truth.ops.extend(ops)
    memcpy_task = (streams[0], cfg.tasks + 1)

    acl, rt, states, pmu, infers = [], [], [], [], []
    t = dev.host_mon_ns + 2_000_000
    acl.append(ApiCall(d, "acl", "aclmdlLoadFromFile", 2, dev.pid, tid, None, t, t + 50_000))
    acl.append(ApiCall(d, "acl", "aclrtMalloc", 3, dev.pid, tid, None, t + 60_000, t + 62_000))
    rt.append(ApiCall(d, "runtime", "rtMalloc", None, None, tid, None, t + 60_500, t + 61_500))
    load = (t + 1_000, t + 49_000)
    desc_ts = t + 10_000
    t += 100_000
    instances: list[TaskInstance] = []
    for k in range(1, cfg.inferences + 1):
        inp = (t, t + 20_000)
        infer_start = t + 21_000
        cursor = infer_start + 1_000
        last_end = infer_start
        for op in ops:
            launch = (cursor, cursor + 2_000)
            rt.append(
                ApiCall(
                    d,
                    "runtime",
                    "rtKernelLaunch",
                    None,
                    None,
                    tid,
                    op.stream_id,
                    *launch,
                    task_ids=[op.task_id],
                )
            )
            base = _r10(launch[1] + 500)
            waiting = base if rng.random() < cfg.p_waiting else None
            pending = base + 1_000 if rng.random() < cfg.p_pending else None
            running = base + 2_000 + rng.randint(0, 50) * 10
            run_ns = rng.randint(100, 2_000) * 10
            complete = running + (
                _r10(round(run_ns * cfg.op_scale[op.op_name])) if op.op_name in cfg.op_scale else run_ns
            )
            task_type = AI_CPU_TASK if op.task_type == "AI_CPU" else AI_CORE_TASK
            instances.append(
                TaskInstance(
                    d,
                    k,
                    op.stream_id,
                    op.task_id,
                    task_type,
                    "time_line",
                    op.op_name,
                    waiting,
                    pending,
                    running,
                    complete,
                )
            )
            last_end = max(last_end, complete)
            cursor += 3_000
        if cfg.memcpy:
            launch = (cursor, cursor + 1_500)
            rt.append(
                ApiCall(
                    d,
                    "runtime",
                    "rtMemcpyAsync",
                    None,
                    None,
                    tid,
                    memcpy_task[0],
                    *launch,
                    task_ids=[memcpy_task[1]],
                )
            )
            recv = _r10(launch[1] + 500)
            start = recv + 500
            end = start + rng.randint(50, 500) * 10
            instances.append(
                TaskInstance(
                    d,
                    k,
                    memcpy_task[0],
                    memcpy_task[1],
                    hiprof_layouts.MEMCPY_TASK_TYPE,
                    "ts_memcpy",
                    None,
                    recv,
                    None,
                    start,
                    end,
                )
            )
            last_end = max(last_end, end)
            cursor += 2_000
        infer_end = _r10(max(last_end, cursor) + 5_000)
        for s in streams:
            rt.append(
                ApiCall(d, "runtime", "rtStreamSynchronize", None, None, tid, s, cursor, infer_end - 1_000)
            )
        out_phase = (infer_end + 1_000, infer_end + 16_000)
        step = (_r10(infer_start + 500), _r10(infer_end - 500)) if cfg.step_trace else None
        marks = training_marks(step) if step and cfg.training else []
        infers.append(Inference(d, k, 1, "resnet50", inp, (infer_start, infer_end), out_phase, step, marks))
        acl.append(ApiCall(d, "acl", "aclmdlExecute", 2, dev.pid, tid, None, t + 20_500, out_phase[1] + 500))
        t = out_phase[1] + 50_000

    # Instances whose COMPLETE goes missing (kernel tasks only).
    kernel = [i for i, x in enumerate(instances) if x.kind == "time_line"]
    for i in rng.sample(kernel, min(cfg.drop_complete, len(kernel))):
        instances[i].complete_ns = None

    pmu_rng = random.Random(
        cfg.seed * 7919 + d + 104_729
    )  # PMU values only: the timeline does not depend on them
    for x in instances:
        if x.kind == "ts_memcpy":
            seq = [
                (hiprof_layouts.WAITING, x.waiting_ns),
                (hiprof_layouts.RUNNING, x.running_ns),
                (hiprof_layouts.COMPLETE, x.complete_ns),
            ]
        else:
            seq = [
                (hiprof_layouts.WAITING, x.waiting_ns),
                (hiprof_layouts.PENDING, x.pending_ns),
                (hiprof_layouts.RUNNING, x.running_ns),
            ]
            if x.task_type == AI_CORE_TASK:
                seq.append((hiprof_layouts.AI_CORE_START, x.running_ns + 100))
                if x.complete_ns is not None:
                    seq.append((hiprof_layouts.AI_CORE_DONE, x.complete_ns - 100))
            seq.append((hiprof_layouts.COMPLETE, x.complete_ns))
        for state, ts in seq:
            if ts is not None:
                states.append(TaskState(d, x.stream_id, x.task_id, x.task_type, state, ts, x.kind))
        if cfg.aicore and x.kind == "time_line" and x.task_type == AI_CORE_TASK and x.complete_ns is not None:
            op = next(o for o in ops if (o.stream_id, o.task_id) == (x.stream_id, x.task_id))
            cyc = block_cycles(
                pmu_rng, op.block_dim, dev.ai_core_num, x.complete_ns - x.running_ns, dev.aic_mhz
            )
            counters = [pmu_rng.randint(0, cyc) for _ in truth.event_ids]
            for event, share in cfg.pmu_share.items():  # after the draws: the other values stay as without it
                if event in truth.event_ids:
                    counters[truth.event_ids.index(event)] = int(cyc * share)
            if 0x54 in truth.event_ids and 0x55 in truth.event_ids:
                i54, i55 = truth.event_ids.index(0x54), truth.event_ids.index(0x55)
                counters[i55] = pmu_rng.randint(0, counters[i54])
            counters += [0] * (8 - len(counters))
            pmu.append(Pmu(d, x.stream_id, x.task_id, op.block_dim, cyc, counters, x.complete_ns - 100))
    instances.sort(key=lambda x: (x.running_ns, x.stream_id, x.task_id))
    truth.api_calls.extend(acl + rt)
    truth.states.extend(states)
    truth.instances.extend(instances)
    truth.pmu.extend(pmu)
    truth.inferences.extend(infers)
    _write_host(out, cfg, d, acl, rt, ops, desc_ts, infers, load, rng)
    _write_device(out, cfg, dev, states, pmu, infers)


# --- encoding -------------------------------------------------------------------------


def _write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, separators=(",", ":")) + "\n")


def _utc_text(us: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)).strftime("%Y-%m-%d %H:%M:%S.%f")


def _control_files(out: Path, dev: DeviceTruth, wall0_us: int) -> None:
    d = dev.device_id
    _write_json(
        out / f"info.json.{d}",
        {
            "jobInfo": "NA",
            "devices": str(d),
            "platform_version": "0",
            "pid": str(dev.pid),
            "hostname": "synth",
            "memoryTotal": 16384,
            "netCard": [],
            "version": "1.0",
            "CPU": [{"Id": 0, "Name": "synth", "Frequency": "", "Logical_CPU_Count": 2, "Type": "synth"}],
            "DeviceInfo": [
                {
                    "id": d,
                    "hwts_frequency": str(dev.hwts_mhz),
                    "aic_frequency": str(dev.aic_mhz),
                    "aiv_frequency": str(dev.aic_mhz),
                    "ai_core_num": dev.ai_core_num,
                    "aiv_num": 0,
                }
            ],
        },
    )
    start_mon = dev.host_mon_ns - 1_000_000
    _write_json(
        out / f"start_info.{d}",
        {
            "collectionDateBegin": _utc_text(wall0_us),
            "collectionTimeBegin": str(wall0_us),
            "clockMonotonicRaw": str(start_mon),
        },
    )
    _write_json(
        out / f"end_info.{d}",
        {
            "collectionDateEnd": _utc_text(wall0_us + 60_000_000),
            "collectionTimeEnd": str(wall0_us + 60_000_000),
            "clockMonotonicRaw": str(start_mon + 60_000_000_000),
        },
    )
    # clock_realtime first: the 2022 msprof reader takes these lines by position.
    (out / f"host_start.log.{d}").write_text(
        f"[Device{d}]\nclock_realtime: {wall0_us * 1000 + 1_000_000}\nclock_monotonic_raw: {dev.host_mon_ns}\n"
        f"cntvct: {dev.dev_cntvct}\ncntvct_diff: 0\n"
    )
    (out / f"dev_start.log.{d}").write_text(
        f"clock_realtime: {wall0_us * 1000 + 1_000_000}\nclock_monotonic_raw: {dev.host_mon_ns}\ncntvct: {dev.dev_cntvct}\n"
    )


def _name(cfg: HiprofConfig, stem: str, d: int, legacy_stem: str | None = None) -> callable:
    if cfg.names == "legacy":
        return lambda n: f"{legacy_stem or stem}.{d}.{n}"
    return lambda n: f"{stem}.{d}.slice_{n}"


def _write_slices(out: Path, namer, data: bytes, slice_bytes: int) -> None:
    if not data:
        return
    for n, pos in enumerate(range(0, len(data), slice_bytes)):
        chunk = data[pos : pos + slice_bytes]
        path = out / "data" / namer(n)
        path.write_bytes(chunk)
        (path.parent / (path.name + ".done")).write_text(f"filesize:{len(chunk)}\n")


def _api_bytes(calls: list[ApiCall]) -> bytes:
    a = hiprof_layouts.ACL_API.zeros(len(calls))
    a["magic"], a["data_tag"] = HOST_MAGIC, hiprof_layouts.ACL_API.tag
    for i, c in enumerate(calls):
        a[i]["api_type"], a[i]["begin"], a[i]["end"] = c.api_type, c.start_ns, c.end_ns
        a[i]["pid"], a[i]["tid"], a[i]["api_name"] = c.pid, c.tid, c.name.encode()
    return a.tobytes()


def _runtime_bytes(calls: list[ApiCall]) -> bytes:
    a = hiprof_layouts.RUNTIME_API.zeros(len(calls))
    a["magic"], a["data_tag"] = HOST_MAGIC, hiprof_layouts.RUNTIME_API.tag
    for i, c in enumerate(calls):
        a[i]["tid"], a[i]["entry"], a[i]["exit"] = c.tid, c.start_ns, c.end_ns
        a[i]["api_name"] = c.name.encode()
        a[i]["stream_id"] = hiprof_layouts.NO_STREAM if c.stream_id is None else c.stream_id
        a[i]["task_num"] = len(c.task_ids)
        for j, task in enumerate(c.task_ids):
            a[i]["task_pairs"][j] = (task, 0)
    return a.tobytes()


def _write_host(out, cfg, d, acl, rt, ops, desc_ts, infers, load, rng) -> None:
    hashes: dict[int, str] = {}

    def name_field(rec, field: str, text: str, hashed: bool) -> None:
        if hashed:
            h = 10_000_000_000 + len(hashes) * 7 + d
            hashes[h] = text
            rec[field + "_kind"], rec[field + "_hash"] = 0, h
        else:
            rec[field + "_kind"], rec[field] = 1, text.encode()

    by_cat: dict[int, list[ApiCall]] = {}
    for c in acl:
        by_cat.setdefault(c.api_type, []).append(c)
    for cat, calls in sorted(by_cat.items()):
        _write_slices(
            out, _name(cfg, f"AclModule.{ACL_CATEGORY[cat]}", d), _api_bytes(calls), cfg.slice_bytes
        )
    _write_slices(
        out, _name(cfg, "Runtime.api", d, "Runtime.runtime.data"), _runtime_bytes(rt), cfg.slice_bytes
    )

    g = hiprof_layouts.GE_TASK_DESC.zeros(len(ops))
    g["magic"], g["data_tag"] = HOST_MAGIC, hiprof_layouts.GE_TASK_DESC.tag
    for i, op in enumerate(ops):
        g[i]["task_type"] = 1 if op.task_type == "AI_CPU" else 0
        name_field(g[i], "op_name", op.op_name, cfg.hashed_names and i % 3 == 2)
        name_field(g[i], "op_type", op.op_type, cfg.hashed_names and i % 4 == 3)
        g[i]["timestamp"], g[i]["block_dims"], g[i]["model_id"] = desc_ts + i * 10, op.block_dim, 1
        g[i]["stream_id"], g[i]["task_id"], g[i]["tid"] = op.stream_id, op.task_id, 4322
    _write_slices(out, _name(cfg, "Framework.task_desc_info", d), g.tobytes(), cfg.slice_bytes)

    m = hiprof_layouts.GE_MODEL_TIME.zeros(len(infers))
    m["magic"], m["data_tag"] = HOST_MAGIC, hiprof_layouts.GE_MODEL_TIME.tag
    for i, x in enumerate(infers):
        m[i]["model_id"], m[i]["request_id"], m[i]["tid"] = x.model_id, x.infer_id, 4322
        name_field(m[i], "model_name", x.model_name, cfg.hashed_names and d % 2 == 1)
        m[i]["input_start"], m[i]["input_end"] = x.input
        m[i]["infer_start"], m[i]["infer_end"] = x.infer
        m[i]["output_start"], m[i]["output_end"] = x.output
    _write_slices(out, _name(cfg, "Framework.model_time_info_1_0", d), m.tobytes(), cfg.slice_bytes)

    ld = hiprof_layouts.GE_MODEL_LOAD.zeros(1)
    ld["magic"], ld["data_tag"], ld["model_id"] = HOST_MAGIC, hiprof_layouts.GE_MODEL_LOAD.tag, 1
    name_field(ld[0], "model_name", "resnet50", False)
    ld["start"], ld["end"] = load
    _write_slices(out, _name(cfg, "Framework.model_load_info_1", d), ld.tobytes(), cfg.slice_bytes)

    if hashes:
        text = "".join(f"{k}:{v}\n" for k, v in hashes.items())
        (out / "data" / f"Framework.hash_dic.{d}.slice_0").write_text(text)


def _syscnt(dev: DeviceTruth, ns: np.ndarray) -> np.ndarray:
    # inverse of docs/formats.md#clock-device; exact because every device time is a multiple of 10 ns
    return (ns - dev.host_mon_ns) * dev.hwts_mhz // 1000 + dev.dev_cntvct


def _interleave(parts: list[tuple[np.ndarray, np.ndarray]]) -> bytes:
    """Records of several sizes, each with a sort time, into one byte stream in time order."""
    if not parts:
        return b""
    times = np.concatenate([t for _, t in parts])
    sizes = np.concatenate([np.full(len(r), r.dtype.itemsize, np.int64) for r, _ in parts])
    which = np.concatenate([np.full(len(r), i, np.int64) for i, (r, _) in enumerate(parts)])
    index = np.concatenate([np.arange(len(r)) for r, _ in parts])
    order = np.argsort(times, kind="stable")
    offsets = np.concatenate(([0], np.cumsum(sizes[order])))[:-1]
    buf = np.zeros(int(sizes.sum()), np.uint8)
    for i, (rec, _) in enumerate(parts):
        sel = which[order] == i
        raw = rec.view(np.uint8).reshape(len(rec), rec.dtype.itemsize)[index[order][sel]]
        pos = offsets[sel][:, None] + np.arange(rec.dtype.itemsize)[None, :]
        buf[pos] = raw
    return buf.tobytes()


def _late(ts: np.ndarray, n: int) -> np.ndarray:
    """File-order times: ``n`` records, evenly spread, placed 1 s after their own time (the
    Task Scheduler writes in time order; a late record makes the reader's count give up)."""
    order = ts.copy()
    if n:
        order[np.linspace(0, len(ts) - 1, n).astype(np.int64)] += 1_000_000_000
    return order


def _tlv(layout, n: int):
    a = layout.zeros(n)
    a["mode"], a["tag"], a["buf_size"] = 1, layout.tag, layout.size
    return a


def _write_device(out: Path, cfg: HiprofConfig, dev: DeviceTruth, states, pmu, infers) -> None:
    d = dev.device_id
    tl = [s for s in states if s.kind == "time_line"]
    mc = [s for s in states if s.kind == "ts_memcpy"]
    parts = []
    a = _tlv(hiprof_layouts.TIME_LINE, len(tl))
    if tl:
        ts = np.array([s.ts_ns for s in tl], np.int64)
        a["task_type"] = [s.task_type for s in tl]
        a["task_state"] = [s.state for s in tl]
        a["stream_id"] = [s.stream_id for s in tl]
        a["task_id"] = [s.task_id for s in tl]
        a["timestamp"] = _syscnt(dev, ts)
        a["device_id"] = d
        parts.append((a, _late(ts, cfg.late_states if d == 0 else 0)))
    if mc:
        m = _tlv(hiprof_layouts.TS_MEMCPY, len(mc))
        ts = np.array([s.ts_ns for s in mc], np.int64)
        inverse = {v: k for k, v in hiprof_layouts.MEMCPY_STATE_TO_TASK_STATE.items()}
        m["task_state"] = [inverse[s.state] for s in mc]
        m["stream_id"] = [s.stream_id for s in mc]
        m["task_id"] = [s.task_id for s in mc]
        m["timestamp"] = _syscnt(dev, ts)
        parts.append((m, ts))
    steps = [x for x in infers if x.step is not None]
    if steps:
        # (infer, tag, stream, ns): MODEL_START, the training records, MODEL_END
        recs = [
            (x, tag, stream, ns)
            for x in steps
            for tag, stream, ns in [(0, 0, x.step[0]), *x.marks, (1, 0, x.step[1])]
        ]
        st = _tlv(hiprof_layouts.STEP_TRACE, len(recs))
        ts = np.array([r[3] for r in recs], np.int64)
        st["timestamp"] = _syscnt(dev, ts)
        st["index_id"] = [r[0].infer_id for r in recs]
        st["model_id"] = [r[0].model_id for r in recs]
        st["tag_id"] = [r[1] for r in recs]
        st["stream_id"] = [r[2] for r in recs]
        parts.append((st, ts))
    _write_slices(
        out, _name(cfg, "ts_track.data", d, "ts_track.data.50"), _interleave(parts), cfg.slice_bytes
    )
    if cfg.aicore and pmu:
        e = _tlv(hiprof_layouts.EVENT_COUNT, len(pmu))
        ts = np.array([p.ts_ns for p in pmu], np.int64)
        e["stream_id"] = [p.stream_id for p in pmu]
        e["task_id"] = [p.task_id for p in pmu]
        e["overflow_cycle"] = np.uint64(2**64 - 1)
        e["events"] = np.array([p.counters for p in pmu], np.uint64)
        e["task_cyc"] = [p.total_cycles for p in pmu]
        e["timestamp"] = _syscnt(dev, ts)
        e["block"] = [p.block_dim for p in pmu]
        _write_slices(
            out, _name(cfg, "aicore.data", d, "aicore.data.50"), _interleave([(e, ts)]), cfg.slice_bytes
        )
