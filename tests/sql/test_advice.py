"""The advice marts against findings derived from the synthetic events (pipeline/synth/truth.py),
for dumps built to trigger every rule and one built to trigger none; and their thresholds.
advice_instances holds each instance a rule flags, advice one finding per (device, rule, scope)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

import pytest

from pipeline.analysis import advice
from pipeline.errors import UsageError
from pipeline.synth.hiprof import AI_CPU_TASK, HiprofConfig, generate
from pipeline.warehouse.store import Warehouse
from tests.helpers.built import build_dump

MEM_BOUND, COMPUTE_MAX, SCALAR_MIN, LOW_BW_PCT = 1.0, 0.5, 0.5, 50.0
AICPU_PCT, QUEUE_MIN, LAUNCH_TASKS, SHORT_NS, SPAN_MIN = 5.0, 1.0, 8, 20_000, 0.8
MIN_SHARE, HIGH_SHARE = 1.0, 10.0

# every rule fires on one of these (asserted on the oracle below, not on the mart)
TRIGGER = {
    "pipeline": HiprofConfig(devices=2, inferences=4, tasks=10, seed=7, op_scale={"add_2": 0.25}),
    "memory": HiprofConfig(devices=1, inferences=3, tasks=10, seed=3, metric_set="Memory"),
}
# healthy ops: busy cube, little MTE2 and scalar, long kernels, no AI CPU op, no queueing
NONE = HiprofConfig(
    devices=1,
    inferences=3,
    tasks=4,
    seed=5,
    p_waiting=0.0,
    p_pending=0.0,
    memcpy=False,
    op_scale={f"{t}_{j}": 20.0 for j, t in enumerate(["conv2d", "matmul", "add", "relu"])},
    pmu_share={0x0A: 0.8, 0x08: 0.3, 0x09: 0.1, 0x0C: 0.2},
)


def _scope(op_name, stream, task):
    return ("op", op_name) if op_name is not None else ("task", f"stream {stream} task {task}")


def _severity(share):
    return "high" if share >= HIGH_SHARE else "medium"


def expected(truth) -> dict[tuple, tuple]:
    """(device, rule, scope, name) -> (severity, value, share) from the events the generator
    wrote: the instances (share None for an inference)."""
    out = {}
    ev = truth.event_ids
    op_of = {(o.device_id, o.stream_id, o.task_id): o.op_name for o in truth.ops}
    dev = {d.device_id: d for d in truth.devices}

    # PMU rules: sums of counters per op
    sums = defaultdict(lambda: defaultdict(float))
    for p in truth.pmu:
        key = (p.device_id, *_scope(op_of.get((p.device_id, p.stream_id, p.task_id)), p.stream_id, p.task_id))
        s = sums[key]
        s["w"] += p.total_cycles
        for name, e in (
            ("mac", 0x0A),
            ("vec", 0x08),
            ("scalar", 0x09),
            ("mte2", 0x0C),
            ("rd", 0x12),
            ("wr", 0x13),
        ):
            if e in ev:
                s[name] += p.counters[ev.index(e)]
        d = dev[p.device_id]
        s["sec"] += p.total_cycles / d.aic_mhz / p.block_dim * math.ceil(p.block_dim / d.ai_core_num) / 1e6
    dev_w = defaultdict(float)
    best_bw = defaultdict(float)
    for (d, *_), s in sums.items():
        dev_w[d] += s["w"]
        if 0x12 in ev:
            s["bw"] = (s["rd"] + s["wr"]) * 256 * 8 / 2**33 / s["sec"]
            best_bw[d] = max(best_bw[d], s["bw"])
    for (d, scope, name), s in sums.items():
        share = 100 * s["w"] / dev_w[d]
        if share < MIN_SHARE:
            continue
        sev = _severity(share)
        mb = None
        if 0x0C in ev:
            mac, vec = s["mac"] / s["w"], s["vec"] / s["w"]
            mb = s["mte2"] / max(s["mac"], s["vec"]) if max(s["mac"], s["vec"]) else None
            if mb is not None and mb >= MEM_BOUND:
                out[(d, "memory_bound", scope, name)] = (sev, mb, share)
            if mb is not None and mb < MEM_BOUND and max(mac, vec) < COMPUTE_MAX:
                out[(d, "compute_underuse", scope, name)] = (sev, max(mac, vec), share)
            if s["scalar"] / s["w"] >= SCALAR_MIN:
                out[(d, "scalar_heavy", scope, name)] = (sev, s["scalar"] / s["w"], share)
        if "bw" in s and s["bw"] < best_bw[d] * LOW_BW_PCT / 100 and (mb is None or mb >= MEM_BOUND):
            out[(d, "low_main_mem_bw", scope, name)] = (sev, s["bw"], share)

    # task rules: complete instances, msprof's waiting formula
    done = [x for x in truth.instances if x.complete_ns is not None]
    per = defaultdict(lambda: defaultdict(float))
    dev_run = defaultdict(float)
    for x in done:
        key = (x.device_id, *_scope(x.op_name, x.stream_id, x.task_id))
        run = x.complete_ns - x.running_ns
        wait = 0 if x.waiting_ns is None else x.running_ns - x.waiting_ns
        pend = 0 if x.pending_ns is None else x.running_ns - x.pending_ns
        per[key]["run"] += run
        per[key]["wait"] += wait
        per[key]["pend"] += pend
        per[key]["cpu"] = per[key]["cpu"] or x.task_type == AI_CPU_TASK
        dev_run[x.device_id] += run
    for (d, scope, name), s in per.items():
        share = 100 * s["run"] / dev_run[d]
        if share < MIN_SHARE:
            continue
        if s["cpu"] and share >= AICPU_PCT:
            out[(d, "aicpu_critical_path", scope, name)] = (_severity(share), share, share)
        if s["run"] and max(s["wait"], s["pend"]) / s["run"] >= QUEUE_MIN:
            out[(d, "queue_dominant", scope, name)] = (
                _severity(share),
                max(s["wait"], s["pend"]) / s["run"],
                share,
            )

    # launch-bound inferences: window = input start to output end
    for inf in truth.inferences:
        lo, hi = inf.input[0], inf.output[1]
        starts = [
            (x.running_ns, x.complete_ns)
            for x in done
            if x.device_id == inf.device_id and lo <= x.running_ns <= hi
        ]
        launches = [
            (c.start_ns, c.end_ns)
            for c in truth.api_calls
            if c.device_id == inf.device_id
            and c.level == "runtime"
            and "KernelLaunch" in c.name
            and lo <= c.start_ns <= hi
        ]
        if len(starts) < LAUNCH_TASKS or not launches:
            continue
        median = statistics.median(e - s for s, e in starts)
        span = max(e for _, e in starts) - min(s for s, _ in starts)
        ratio = (max(e for _, e in launches) - min(s for s, _ in launches)) / span
        if median <= SHORT_NS and ratio >= SPAN_MIN:
            out[(inf.device_id, "launch_bound", "inference", f"inference {inf.infer_id}")] = (
                "medium",
                ratio,
                None,
            )
    return out


def findings_of(want: dict[tuple, tuple]) -> dict[tuple, dict]:
    """(device, rule, scope) -> the finding the instances make, worked out here: their number,
    the worst three (largest share, then largest value, then the inference number or name),
    the worst's value, the summed share and the severity of that sum."""
    groups = defaultdict(list)
    for (d, rule, scope, name), (_, value, share) in want.items():
        groups[(d, rule, scope)].append((name, value, share))
    out = {}
    for key, items in groups.items():
        number = lambda name: int(name.split()[1]) if name.startswith("inference ") else -1  # noqa: E731
        items.sort(key=lambda x: (-(x[2] if x[2] is not None else -math.inf), -x[1], number(x[0]), x[0]))
        share = None if items[0][2] is None else sum(x[2] for x in items)
        out[key] = {
            "instances": len(items),
            "worst": [x[0] for x in items[:3]],
            "value": items[0][1],
            "share": share,
            "severity": "high" if share is not None and share >= HIGH_SHARE else "medium",
        }
    return out


def _instances(rows) -> dict[tuple, tuple]:
    return {
        (r["device_id"], r["rule_id"], r["scope"], r["scope_name"]): (r["severity"], r["value"])
        for r in rows("advice_instances")
    }


def _check(tmp_path, cfg):
    truth = generate(tmp_path / "dump", cfg)
    _, rows = build_dump(tmp_path / "wh", tmp_path / "dump")
    want, got = expected(truth), _instances(rows)
    assert sorted(got) == sorted(want)
    for k, (sev, value, _) in want.items():
        assert got[k][0] == sev, k
        assert got[k][1] == pytest.approx(value, rel=1e-9), k
    # one finding per (device, rule, scope), naming its worst instances
    found = {(r["device_id"], r["rule_id"], r["scope"]): r for r in rows("advice")}
    assert len(found) == len(rows("advice"))
    findings = findings_of(want)
    assert sorted(found) == sorted(findings)
    for k, f in findings.items():
        r = found[k]
        assert (r["instances"], r["worst"].split(", "), r["severity"]) == (
            f["instances"],
            f["worst"],
            f["severity"],
        ), k
        assert r["value"] == pytest.approx(f["value"], rel=1e-9), k
        assert (r["share_pct"] is None) == (f["share"] is None), k
        if f["share"] is not None:
            assert r["share_pct"] == pytest.approx(f["share"], rel=1e-9), k
    return want, rows


@pytest.fixture(scope="module")
def triggered(tmp_path_factory):
    return {name: _check(tmp_path_factory.mktemp(name), cfg)[0] for name, cfg in TRIGGER.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TRIGGER))
def test_findings_match_the_events(triggered, name):
    assert triggered[name]


@pytest.mark.slow
def test_every_rule_is_triggered(triggered):
    rules = {k[1] for found in triggered.values() for k in found}
    assert rules == {
        "memory_bound",
        "compute_underuse",
        "scalar_heavy",
        "low_main_mem_bw",
        "aicpu_critical_path",
        "queue_dominant",
        "launch_bound",
    }


@pytest.mark.slow
def test_a_healthy_dump_has_no_finding(tmp_path):
    assert _check(tmp_path, NONE)[0] == {}


@pytest.mark.slow
def test_many_inferences_are_one_finding_and_their_instances_sort_by_number(tmp_path):
    """A run of 120 inferences: the launch-bound ones (from the events) are one finding with
    their number, and advice_instances lists each, by inference number (not 1, 10, 100, 11)."""
    want, rows = _check(tmp_path, HiprofConfig(devices=1, inferences=120, tasks=10, seed=7))
    numbers = sorted(int(k[3].split()[1]) for k in want if k[1] == "launch_bound")
    assert len(numbers) >= 10 and numbers[0] < 10 <= numbers[-1]  # text order would differ
    found = [r for r in rows("advice") if r["rule_id"] == "launch_bound"]
    assert [(r["scope"], r["instances"]) for r in found] == [("inference", len(numbers))]
    listed = [r for r in rows("advice_instances") if r["rule_id"] == "launch_bound"]
    assert [r["scope_key"] for r in listed] == numbers
    assert [r["scope_name"] for r in listed] == [f"inference {n}" for n in numbers]
    assert sorted(r["rank"] for r in listed) == list(range(1, len(numbers) + 1))


@pytest.mark.slow
def test_thresholds_from_advice_toml(tmp_path):
    generate(tmp_path / "dump", TRIGGER["pipeline"])
    wh = Warehouse(tmp_path / "wh")
    wh.path.mkdir()
    (wh.path / advice.ADVICE_FILE).write_text("[advice]\nscalar_ratio_min = 2\nmin_share_pct = 12.5\n")
    _, rows = build_dump(wh.path, tmp_path / "dump")
    found = rows("advice_instances")
    assert found and not any(r["rule_id"] == "scalar_heavy" for r in found)  # a ratio never reaches 2
    assert all(r["share_pct"] >= 12.5 for r in found if r["scope"] != "inference")


def test_defaults_are_the_sql_ones():
    d = advice.defaults()
    assert d["memory_bound_min"] == MEM_BOUND and d["scalar_ratio_min"] == SCALAR_MIN
    assert d["launch_min_tasks"] == LAUNCH_TASKS and d["short_task_ns"] == SHORT_NS and len(d) == 11


@pytest.mark.parametrize(
    "text, message",
    [
        ("[advice]\nscalar = 1\n", "unknown advice threshold 'scalar'"),
        ("[advice]\nscalar_ratio_min = 'high'\n", "is not a number"),
        ("[advice\n", "advice.toml"),
    ],
)
def test_a_bad_advice_toml_is_a_usage_error(tmp_path, text, message):
    (tmp_path / advice.ADVICE_FILE).write_text(text)
    with pytest.raises(UsageError, match=message):
        advice.configured(Warehouse(tmp_path))


def test_run_refuses_a_bad_advice_toml_before_any_dump(tmp_path):
    from pipeline.jobs.runner import run_roots

    wh = Warehouse(tmp_path / "wh")
    wh.path.mkdir()
    (wh.path / advice.ADVICE_FILE).write_text("[advice]\nmemory_bound = 1\n")
    generate(tmp_path / "dump", NONE)
    with wh.writer(), pytest.raises(UsageError, match="memory_bound"):
        run_roots(wh, [tmp_path / "dump"])
    assert wh.run_index().run_records() == []


def test_ops_are_named_by_key_or_by_the_asof_join():
    """Hand-made staging rows (tests/sql/test_task_op_keys.py's), through the intermediate layer:
    tasks whose op changes take the description in force when they ran; expected shares worked
    out by hand."""
    from pipeline.jobs.transforms import run_layer, sql_files
    from tests.helpers.empty_raw import empty_raw_tables
    from tests.sql.test_task_op_keys import INSTANCES, OPS, PMU

    con = empty_raw_tables()
    run_layer(con, "staging")
    for seq, (stream, task, name, blocks, valid_from) in enumerate(OPS):
        con.execute(
            "insert into stg_task_ops (device_id, stream_id, task_id, op_name, op_type, ge_task_type, "
            "block_dim, ts_ns, valid_from_ns, seq, source) values (0, ?, ?, ?, ?, 'AI_CPU', ?, 0, ?, ?, 'x')",
            [stream, task, name, name.upper(), blocks, valid_from, seq],
        )
    for stream, task, running, complete in INSTANCES:
        con.execute(
            "insert into stg_task_instances (device_id, record_kind, stream_id, task_id, instance_no, "
            "task_type_name, running_ns, complete_ns, is_complete, has_states, dropped_instances) "
            "values (0, 'task_run', ?, ?, 0, 'AI_CPU', ?, ?, true, false, 0)",
            [stream, task, running, complete],
        )
    for seq, stream, task, ts in PMU:  # every record memory-bound: mte2 900 vs mac and vec 100 of 1000 cycles
        con.execute(
            "insert into stg_pmu_records (device_id, seq, stream_id, task_id, total_cycles, ts_ns, record_kind, "
            "mac_cycles, vec_cycles, mte2_cycles) values (0, ?, ?, ?, 1000, ?, 'ffts_pmu', 100, 100, 900)",
            [seq, stream, task, ts],
        )
    run_layer(con, "intermediate")  # the ops come from int_pmu_records_ops and int_task_executions
    text = next(f for f in sql_files("marts") if f.name == "advice_instances").text
    rows = con.sql(f"select rule_id, scope_name, share_pct, value from ({text})").fetchall()
    # running times: add 10 + 20, conv 5, relu 8 (changes at 200), mul 3 + 7, exp 6, (3, 9) before
    # its only description 2, (2, 5) without one 1, cast 1: 63 ns
    cpu = {name: share for rule, name, share, _ in rows if rule == "aicpu_critical_path"}
    assert cpu == pytest.approx(
        {"add": 3000 / 63, "mul": 1000 / 63, "relu": 800 / 63, "exp": 600 / 63, "conv": 500 / 63}
    )
    # nine PMU records of 1000 cycles; mul has two, a record without a time has no op
    bound = {name: (share, value) for rule, name, share, value in rows if rule == "memory_bound"}
    want = {
        "mul": (200 / 9, 9.0),
        "add": (100 / 9, 9.0),
        "exp": (100 / 9, 9.0),
        "relu": (100 / 9, 9.0),
        "cast": (100 / 9, 9.0),
        "stream 2 task 5": (100 / 9, 9.0),
        "stream 3 task 9": (100 / 9, 9.0),
        "stream 1 task 5": (100 / 9, 9.0),
    }
    assert bound.keys() == want.keys()
    for name, pair in want.items():
        assert bound[name] == pytest.approx(pair), name
