"""Expected report tables of a generation-2/3 synthetic dump, computed in plain Python.

Everything comes from ``pipeline.synth.prof.ProfTruth`` (what synth wrote) and the rules
stated in the SQL headers and docs/formats.md, re-implemented here without SQL or readers:

* executions: the device start/end logs paired per (device, stream, task) in file order,
  a start waiting for the next end (docs/formats.md#rule-pairing; a later start replaces it);
* the op and API of an execution: the launch (host task_track) of the same (device,
  stream, task) that was reported last at or before the execution started (docs/formats.md#rule-association);
* AI Core metrics: the formulas of docs/formats.md#rule-ratios and after, with the op's block dim, the
  frequency in force at the task's end for aicore_time, info.json's for bandwidth;
* top-down: ACL, GE (model-level InputCopy / ModelExecute / OutputCopy), Runtime (calls
  starting inside the ACL call) and Task Scheduler (executions of the first iteration
  ending at or after them).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

ACL_TYPE_NAMES = {1: "ACL_OP", 2: "ACL_MODEL", 3: "ACL_RTS", 4: "ACL_OTHERS"}


def executions(truth) -> list[dict]:
    """Logs paired per (device, stream, task) in file order; start None for an end without a start."""
    out = []
    pending: dict[tuple, int] = {}
    for log in truth.logs:
        key = (log.device_id, log.stream_id, log.task_id)
        if not log.is_end:
            pending[key] = log.ts_ns
            continue
        out.append(
            {
                "device_id": log.device_id,
                "stream_id": log.stream_id,
                "task_id": log.task_id,
                "start": pending.pop(key, None),
                "end": log.ts_ns,
                "type": log.task_type_name,
            }
        )
    return out


def orphan_starts(truth) -> int:
    pending: dict[tuple, int] = {}
    orphans = 0
    for log in truth.logs:
        key = (log.device_id, log.stream_id, log.task_id)
        if log.is_end:
            pending.pop(key, None)
        else:
            orphans += key in pending
            pending[key] = log.ts_ns
    return orphans + len(pending)


def launch_of(truth, device: int, stream: int, task: int, at_ns: int | None):
    """The launch reported last at or before ``at_ns``, else the first one of the key."""
    mine = sorted(
        (x for x in truth.launches if (x.device_id, x.stream_id, x.task_id) == (device, stream, task)),
        key=lambda x: x.track_ns,
    )
    before = [x for x in mine if at_ns is not None and x.track_ns <= at_ns]
    return before[-1] if before else (mine[0] if mine else None)


def runtime_api_summary(truth) -> list[dict]:
    groups = defaultdict(list)
    for c in truth.api_calls:
        if c.level == "runtime":
            groups[(c.device_id, c.name)].append(c.end_ns - c.start_ns)
    totals = Counter()
    for (dev, _), durs in groups.items():
        totals[dev] += sum(durs)
    return [
        {
            "device_id": dev,
            "api_name": name,
            "stream_id": None,
            "time_pct": 100.0 * sum(d) / totals[dev],
            "time_ns": sum(d),
            "calls": len(d),
            "avg_ns": sum(d) / len(d),
            "min_ns": min(d),
            "max_ns": max(d),
        }
        for (dev, name), d in groups.items()
    ]


def acl_api(truth) -> list[dict]:
    calls = sorted((c for c in truth.api_calls if c.level == "acl"), key=lambda c: (c.device_id, c.start_ns))
    return [
        {
            "device_id": c.device_id,
            "api_name": c.name,
            "api_type": ACL_TYPE_NAMES[c.api_type],
            "start_ns": c.start_ns,
            "dur_us": (c.end_ns - c.start_ns) / 1000.0,
            "pid": c.pid,
            "tid": c.tid,
        }
        for c in calls
    ]


def task_scheduler(truth) -> list[dict]:
    groups = defaultdict(list)
    for x in executions(truth):
        if x["start"] is None:
            continue
        launch = launch_of(truth, x["device_id"], x["stream_id"], x["task_id"], x["start"])
        key = (x["device_id"], x["type"], launch.api_name, x["task_id"], launch.op_name, x["stream_id"])
        groups[key].append(x["end"] - x["start"])
    totals = Counter()
    for key, d in groups.items():
        totals[key[0]] += sum(d)
    rows = []
    for (dev, ttype, api, task, op, stream), d in groups.items():
        rows.append(
            {
                "device_id": dev,
                "time_pct": 100.0 * sum(d) / totals[dev],
                "time_ns": sum(d),
                "task_count": len(d),
                "avg_ns": sum(d) / len(d),
                "min_ns": min(d),
                "max_ns": max(d),
                "waiting_ns": None,
                "running_ns": sum(d),
                "pending_ns": None,
                "task_type": ttype,
                "api_name": api,
                "task_id": task,
                "op_name": op,
                "stream_id": stream,
            }
        )
    return rows


def metrics_row(
    events: list[int],
    cyc: int,
    counters: list[int],
    block: int,
    f_time: float,
    f_bw: float,
    cores: int,
    ascend310: bool = False,
) -> dict:
    """One task's AI Core metrics from its counters. Later chips: bandwidth over core-seconds
    (cycles / f_bw), main memory 8*8 bytes per request; ``ascend310``: msprof's rule for that
    chip, over aicore_time in seconds, main memory 256*8 bytes per request."""
    ev = dict(zip(events, counters))
    t_us = cyc / f_time / block * math.ceil(block / cores)
    seconds = t_us / 1e6 if ascend310 else cyc / (f_bw * 1e6)
    main_bytes = 256 * 8 if ascend310 else 8 * 8

    def ratio(e):
        return ev[e] / cyc if e in ev else None

    def bw(e, bytes_per_request):
        return ev[e] * bytes_per_request / seconds / 2**33 if e in ev else None

    r = {
        "vec": ratio(0x8),
        "mac": ratio(0xA),
        "scalar": ratio(0x9),
        "mte1": ratio(0xB),
        "mte2": ratio(0xC),
        "mte3": ratio(0xD),
    }
    row = {"aicore_time_us": t_us, "total_cycles": cyc}
    for k, v in r.items():
        row[f"{k}_time_us"] = v * t_us if v is not None else None
        row[f"{k}_ratio"] = v
    row["icache_miss_rate"] = ev[0x55] / ev[0x54] if ev.get(0x54) else None
    biggest = max(r["mac"], r["vec"]) if r["mac"] is not None and r["vec"] is not None else None
    row["memory_bound"] = r["mte2"] / biggest if biggest else None
    row.update(
        {
            "ub_read_bw_gbps": bw(0x15, 256 * 4),
            "ub_write_bw_gbps": bw(0x16, 256 * 4),
            "l1_read_bw_gbps": bw(0x31, 256 * 16),
            "l1_write_bw_gbps": bw(0x32, 128 * 8),
            "l2_read_bw_gbps": bw(0xF, 256 * 8),
            "l2_write_bw_gbps": bw(0x10, 256 * 8),
            "main_mem_read_bw_gbps": bw(0x12, main_bytes),
            "main_mem_write_bw_gbps": bw(0x13, main_bytes),
        }
    )
    return row


def ai_core_metrics(truth) -> list[dict]:
    devs = {d.device_id: d for d in truth.devices}
    rows = []
    for p in sorted(truth.pmu, key=lambda p: (p.device_id, p.ts_ns)):
        d = devs[p.device_id]
        launch = launch_of(truth, p.device_id, p.stream_id, p.task_id, p.ts_ns)
        row = {
            "device_id": p.device_id,
            "task_id": p.task_id,
            "stream_id": p.stream_id,
            "op_name": launch.op_name,
            "ts_ns": p.ts_ns,
            "block_dim": launch.block_dim,
        }
        row.update(
            metrics_row(
                truth.event_ids,
                p.total_cycles,
                p.counters,
                launch.block_dim,
                p.time_freq_mhz,
                d.aic_mhz,
                d.ai_core_num,
            )
        )
        row["seq"] = [q for q in truth.pmu if q.device_id == p.device_id].index(p)  # written in this order
        rows.append(row)
    return rows


def topdown_inference(truth) -> list[dict]:
    rows = []
    done = [x for x in executions(truth) if x["start"] is not None]
    for dev in sorted({d.device_id for d in truth.devices}):
        its = sorted((i for i in truth.iterations if i.device_id == dev), key=lambda i: i.infer_id)
        for it in its:
            k = it.infer_id
            a0, a1 = it.acl
            rows.append(_td(dev, k, "ACL", "aclmdlExecute", a0, a1 - a0))
            for api, (s, e) in (("Input", it.input), ("Infer", it.infer), ("Output", it.output)):
                rows.append(_td(dev, k, "GE", api, s, e - s))
            inside = [
                c
                for c in truth.api_calls
                if c.device_id == dev
                and c.level == "runtime"
                and c.name in ("KernelLaunch", "CpuKernelLaunch")
                and a0 <= c.start_ns <= a1
            ]
            if inside:
                s = min(c.start_ns for c in inside)
                rows.append(_td(dev, k, "Runtime", None, s, max(c.end_ns for c in inside) - s))
            mine = [
                x
                for x in done
                if x["device_id"] == dev and next((i for i in its if i.step[1] >= x["end"]), None) is it
            ]
            if mine:
                s = min(x["start"] for x in mine)
                rows.append(_td(dev, k, "Task Scheduler", None, s, max(x["end"] for x in mine) - s))
    return rows


def _td(dev, k, module, api, start, dur) -> dict:
    return {
        "device_id": dev,
        "infer_id": k,
        "module_name": module,
        "api_name": api,
        "start_ns": start,
        "dur_ns": dur,
    }


def ai_core_samples(truth) -> list[dict]:
    """Per core and interval (docs/formats.md#rule-pmu-samples): the interval starts at the core's previous sample."""
    devs = {d.device_id: d for d in truth.devices}
    rows = []
    prev: dict[tuple, int] = {}
    keep = (
        "vec_ratio",
        "mac_ratio",
        "scalar_ratio",
        "mte1_ratio",
        "mte2_ratio",
        "mte3_ratio",
        "icache_miss_rate",
        "memory_bound",
        "ub_read_bw_gbps",
        "ub_write_bw_gbps",
        "l1_read_bw_gbps",
        "l1_write_bw_gbps",
        "l2_read_bw_gbps",
        "l2_write_bw_gbps",
        "main_mem_read_bw_gbps",
        "main_mem_write_bw_gbps",
    )
    for s in sorted(truth.samples, key=lambda s: (s.device_id, s.core_id, s.ts_ns)):
        d = devs[s.device_id]
        m = metrics_row(truth.event_ids, s.total_cycles, s.counters, 1, d.aic_mhz, d.aic_mhz, d.ai_core_num)
        row = {
            "device_id": s.device_id,
            "core_id": s.core_id,
            "start_ns": prev.get((s.device_id, s.core_id)),
            "end_ns": s.ts_ns,
            "total_cycles": s.total_cycles,
            "busy_us": s.total_cycles / d.aic_mhz,
        }
        row.update({k: m[k] for k in keep})
        prev[(s.device_id, s.core_id)] = s.ts_ns
        rows.append(row)
    return rows


GE_OP_MODEL_ID = 4294967295  # msprof's model id of an op outside any model


def launch_op(truth, launch) -> dict:
    """The op description msprof gives a launch (TaskInfo): a launch inside a node launch
    (the synth writes a node_basic_info for it: its op type is set) takes the node's op, and
    the model id of the model-level record of its thread that encloses the node; a kernel
    outside any node is named after its kernel, op type included, with block dim 0 and model
    id 4294967295."""
    if not launch.op_type:
        return {
            "model_id": GE_OP_MODEL_ID,
            "op_name": launch.op_name,
            "op_type": launch.op_name,
            "task_type": launch.ge_task_type,
            "block_dim": 0,
        }
    models = [
        c
        for c in truth.api_calls
        if c.device_id == launch.device_id
        and c.level == "model"
        and c.start_ns <= launch.track_ns <= c.end_ns
    ]
    model_id = int(max(models, key=lambda c: c.start_ns).item) if models else GE_OP_MODEL_ID
    return {
        "model_id": model_id,
        "op_name": launch.op_name,
        "op_type": launch.op_type,
        "task_type": launch.ge_task_type,
        "block_dim": launch.block_dim,
    }


def op_summary_ops(truth) -> list[dict]:
    """Per complete execution: its device, stream, task, start and duration with its op."""
    rows = []
    for x in executions(truth):
        if x["start"] is None:
            continue
        launch = launch_of(truth, x["device_id"], x["stream_id"], x["task_id"], x["start"])
        rows.append(
            {
                "device_id": x["device_id"],
                "stream_id": x["stream_id"],
                "task_id": x["task_id"],
                "start_ns": x["start"],
                "dur_ns": x["end"] - x["start"],
                **launch_op(truth, launch),
            }
        )
    return rows


def op_statistic(truth) -> list[dict]:
    """Executions grouped by (device, op type, GE task type); ratio = group total / device total."""
    groups = defaultdict(list)
    for r in op_summary_ops(truth):
        groups[(r["device_id"], r["op_type"], r["task_type"])].append(r["dur_ns"])
    totals = Counter()
    for (dev, _, _), d in groups.items():
        totals[dev] += sum(d)
    return [
        {
            "device_id": dev,
            "op_type": op_type,
            "core_type": core,
            "count": len(d),
            "total_ns": sum(d),
            "min_ns": min(d),
            "avg_ns": sum(d) / len(d),
            "max_ns": max(d),
            "ratio_pct": 100.0 * sum(d) / totals[dev],
        }
        for (dev, op_type, core), d in groups.items()
    ]
