"""Expected report tables computed in plain Python from a synthetic dump's ground truth.

Nothing here touches SQL or the readers: every value comes from the events ``synth``
decided to write (``pipeline.synth.truth.Truth``) and the rules in the headers of
``sql/marts/*.sql`` (msprof's algorithms, docs/formats.md part 2), re-implemented
independently so that a test compares two computations, never one with itself.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from tests.helpers.oracle_prof import metrics_row

TASK_TYPE_NAMES = {0: "kernel AI core task", 1: "kernel AI cpu task", 5: "memory copy task"}
ACL_TYPE_NAMES = {1: "ACL_OP", 2: "ACL_MODEL", 3: "ACL_RTS", 4: "ACL_OTHERS"}


def runtime_api_summary(truth) -> list[dict]:
    groups = defaultdict(list)
    for c in truth.api_calls:
        if c.level == "runtime":
            groups[(c.device_id, c.name, c.stream_id)].append(c.end_ns - c.start_ns)
    totals = Counter()
    for (dev, _, _), durs in groups.items():
        totals[dev] += sum(durs)
    rows = []
    for (dev, name, stream), durs in groups.items():
        rows.append(
            {
                "device_id": dev,
                "api_name": name,
                "stream_id": stream,
                "time_pct": 100.0 * sum(durs) / totals[dev],
                "time_ns": sum(durs),
                "calls": len(durs),
                "avg_ns": sum(durs) / len(durs),
                "min_ns": min(durs),
                "max_ns": max(durs),
            }
        )
    return rows


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


def task_instances_from_states(truth) -> tuple[list[dict], Counter]:
    """msprof's state machine over the written state records (docs/formats.md#rule-task-states)."""
    by_key = defaultdict(list)
    for s in truth.states:
        if s.state in (1, 2, 3, 4):
            by_key[(s.device_id, s.kind, s.stream_id, s.task_id)].append(s)
    instances, dropped = [], Counter()
    for (dev, kind, stream, task), rows in by_key.items():
        rows.sort(key=lambda s: (s.ts_ns, s.state))
        latest, seen = {}, Counter()
        for s in rows:
            if s.state == 3:
                instances.append(
                    {
                        "device_id": dev,
                        "kind": kind,
                        "stream_id": stream,
                        "task_id": task,
                        "task_type": s.task_type,
                        "waiting": latest.get(1),
                        "pending": latest.get(4),
                        "running": latest.get(2),
                        "complete": s.ts_ns,
                    }
                )
                dropped[dev] += max(max(seen.values(), default=0) - 1, 0)
                latest, seen = {}, Counter()
            else:
                latest[s.state] = s.ts_ns
                seen[s.state] += 1
        if seen:
            dropped[dev] += max(seen.values())
    return instances, dropped


def _start(i: dict) -> int:
    return next(v for v in (i["running"], i["pending"], i["waiting"], i["complete"]) if v is not None)


def _launch_api(truth, i: dict) -> str | None:
    best = None
    for c in truth.api_calls:
        if (
            c.level == "runtime"
            and c.device_id == i["device_id"]
            and c.stream_id == i["stream_id"]
            and i["task_id"] in c.task_ids
            and c.start_ns <= _start(i)
        ):
            if best is None or c.start_ns > best.start_ns:
                best = c
    return best.name if best else None


def _op_name(truth, dev: int, stream: int, task: int) -> str | None:
    names = [o.op_name for o in truth.ops if (o.device_id, o.stream_id, o.task_id) == (dev, stream, task)]
    return names[0] if names else None


def task_scheduler(truth) -> list[dict]:
    instances, _ = task_instances_from_states(truth)
    groups = defaultdict(list)
    for i in instances:
        key = (
            i["device_id"],
            TASK_TYPE_NAMES[i["task_type"]],
            _launch_api(truth, i),
            i["task_id"],
            _op_name(truth, i["device_id"], i["stream_id"], i["task_id"]),
            i["stream_id"],
        )
        groups[key].append(i)
    rows = []
    for (dev, ttype, api, task, op, stream), xs in groups.items():
        running = [x["complete"] - x["running"] if x["running"] is not None else 0 for x in xs]
        waiting = []
        for x in xs:
            if x["waiting"] is None:
                waiting.append(0)
            elif x["running"] is None or x["running"] < x["waiting"]:
                waiting.append(x["complete"] - x["waiting"])
            else:
                waiting.append(x["running"] - x["waiting"])
        pending = [x["complete"] - x["pending"] if x["pending"] is not None else 0 for x in xs]
        durs = [
            x["complete"] - x["running"]
            if x["running"] is not None
            else (x["complete"] - x["pending"] if x["pending"] is not None else None)
            for x in xs
        ]
        durs = [d for d in durs if d is not None]
        rows.append(
            {
                "device_id": dev,
                "time_ns": sum(running),
                "task_count": len(xs),
                "avg_ns": sum(durs) / len(durs) if durs else None,
                "min_ns": min(durs, default=None),
                "max_ns": max(durs, default=None),
                "waiting_ns": sum(waiting),
                "running_ns": sum(running),
                "pending_ns": sum(pending),
                "task_type": ttype,
                "api_name": api,
                "task_id": task,
                "op_name": op,
                "stream_id": stream,
            }
        )
    totals = Counter()
    for r in rows:
        totals[r["device_id"]] += r["time_ns"]
    for r in rows:
        r["time_pct"] = 100.0 * r["time_ns"] / totals[r["device_id"]] if totals[r["device_id"]] else None
    return rows


def ai_core_metrics(truth) -> list[dict]:
    devs = {d.device_id: d for d in truth.devices}
    rows = []
    for p in sorted(truth.pmu, key=lambda p: (p.device_id, p.ts_ns)):
        d = devs[p.device_id]
        # Ascend310 (every hiprof dump): msprof's rule for that chip (metrics_row's ascend310)
        row = {
            "device_id": p.device_id,
            "task_id": p.task_id,
            "stream_id": p.stream_id,
            "op_name": _op_name(truth, p.device_id, p.stream_id, p.task_id),
            "ts_ns": p.ts_ns,
            "block_dim": p.block_dim,
        }
        row.update(
            metrics_row(
                truth.event_ids,
                p.total_cycles,
                p.counters,
                p.block_dim,
                d.aic_mhz,
                d.aic_mhz,
                d.ai_core_num,
                ascend310=True,
            )
        )
        row["seq"] = record_index(truth.pmu, p)
        rows.append(row)
    return rows


def record_index(pmu: list, record) -> int:
    """The record's index among its device's PMU records, in the order the synth wrote them
    (by time)."""
    return sorted((q for q in pmu if q.device_id == record.device_id), key=lambda q: q.ts_ns).index(record)


def topdown_inference(truth) -> list[dict]:
    rows = []
    for d in truth.devices:
        dev = d.device_id
        execs = sorted(
            (c for c in truth.api_calls if c.device_id == dev and c.name == "aclmdlExecute"),
            key=lambda c: c.start_ns,
        )
        infers = sorted((x for x in truth.inferences if x.device_id == dev), key=lambda x: x.infer_id)
        done = [x for x in truth.instances if x.device_id == dev and x.complete_ns is not None]
        steps = sorted((x for x in infers if x.step is not None), key=lambda x: x.step[1])
        for k, (call, inf) in enumerate(zip(execs, infers), start=1):
            assert inf.infer_id == k
            rows.append(_td(dev, k, "ACL", "aclmdlExecute", call.start_ns, call.end_ns - call.start_ns))
            for api, (s, e) in (("Input", inf.input), ("Infer", inf.infer), ("Output", inf.output)):
                rows.append(_td(dev, k, "GE", api, s, e - s))
            inside = [
                c
                for c in truth.api_calls
                if c.device_id == dev
                and c.level == "runtime"
                and c.name == "rtKernelLaunch"
                and call.start_ns <= c.start_ns <= call.end_ns
            ]
            if inside:
                s = min(c.start_ns for c in inside)
                rows.append(_td(dev, k, "Runtime", None, s, max(c.end_ns for c in inside) - s))
            if steps:
                mine = [x for x in done if next(st for st in steps if st.step[1] >= x.complete_ns) is inf]
            else:
                mine = [x for x in done if call.start_ns <= x.running_ns <= call.end_ns]
            if mine:
                s = min(x.running_ns for x in mine)
                rows.append(_td(dev, k, "Task Scheduler", None, s, max(x.complete_ns for x in mine) - s))
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


def assert_same_rows(got: list[dict], expected: list[dict], key: tuple[str, ...], rel: float = 1e-9) -> None:
    """Every column of every row equal (floats to ``rel``), matched on ``key``."""

    def index(rows):
        out = {}
        for r in rows:
            k = tuple(r[c] for c in key)
            assert k not in out, f"duplicate key {k}"
            out[k] = r
        return out

    g, e = index(got), index(expected)
    assert set(g) == set(e), (
        f"missing {sorted(set(e) - set(g), key=str)[:5]}, unexpected {sorted(set(g) - set(e), key=str)[:5]}"
    )
    for k, exp in e.items():
        row = {c: v for c, v in g[k].items() if c != "run_id"}
        assert set(row) == set(exp), f"columns differ for {k}: {sorted(set(row) ^ set(exp))}"
        for c, v in exp.items():
            if isinstance(v, float):
                assert row[c] == pytest.approx(v, rel=rel), f"{k} {c}: got {row[c]}, expected {v}"
            else:
                assert row[c] == v, f"{k} {c}: got {row[c]!r}, expected {v!r}"
