"""Flow arrows of the Chrome trace lead from the runtime API call that launched a task to the
task. Expected arrows come from the generator's truth: each launch's task_track record lies
inside one runtime call of its thread, and the task runs from the launch's start."""

from __future__ import annotations

import pytest

from pipeline.synth.prof import ProfConfig, generate
from pipeline.warehouse.store import Warehouse
from tests.helpers.built import build_dump
from tests.helpers.trace import chrome_trace

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


@pytest.mark.parametrize("chip", ["ascend910b", "ascend910a"])
def test_each_task_gets_one_arrow_from_the_call_that_launched_it(tmp_path, chip):
    truth = generate(tmp_path / "d", ProfConfig(chip=chip, devices=2, inferences=2, tasks=6))
    dump = tmp_path / "d" / truth.root if truth.root else tmp_path / "d"
    run, _ = build_dump(tmp_path / "wh", dump)
    trace = chrome_trace(Warehouse(tmp_path / "wh"), run["run_id"])

    runtime = [c for c in truth.api_calls if c.level == "runtime" and c.kind == "api"]
    want = set()
    for launch in truth.launches:
        call = [
            c
            for c in runtime
            if c.tid == 7000 + launch.device_id and c.start_ns <= launch.track_ns <= c.end_ns
        ]
        assert len(call) == 1  # the generator's own layout: one runtime call around each track record
        want.add((launch.device_id, call[0].start_ns, launch.start_ns))

    starts = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "s"}
    got = set()
    origin = trace["otherData"]["ts_origin_ns"]  # ts: us after the origin
    for f in (e for e in trace["traceEvents"] if e["ph"] == "f"):
        s = starts[f["id"]]
        got.add((f["pid"], round(s["ts"] * 1000) + origin, round(f["ts"] * 1000) + origin))
    assert len(starts) == len(truth.launches)
    assert got == want


def test_an_arrow_leaves_from_the_lane_its_call_was_drawn_on():
    """Two runtime calls of one thread that overlap without one holding the other are drawn on
    two lanes of the thread's track ('Host API (tid 7)' and '... #2'); each launches a task,
    whose arrow must start on the lane of its own call. Hand-made staging rows, so the overlap
    is certain."""
    from pipeline.jobs.transforms import run_layer
    from pipeline.outputs import trace as trace_module
    from tests.helpers.empty_raw import empty_raw_tables

    con = empty_raw_tables()
    run_layer(con, "staging")  # empty staging tables with their real columns
    con.execute("""drop view stg_api_calls; create table stg_api_calls as select * from (values
        (0, 'runtime', 'rtKernelLaunch', null::varchar, 1, 7, 3, 1000, 5000, 4000, 1),
        (0, 'runtime', 'rtKernelLaunch', null::varchar, 1, 7, 3, 2000, 6000, 4000, 2))
        as t(device_id, level, api_name, api_type, pid, tid, stream_id, start_ns, end_ns, dur_ns, seq)""")
    con.execute("""insert into stg_task_launches (device_id, stream_id, task_id, batch_id, api_name, start_ns,
        end_ns, seq, call_device_id, call_tid) values
        (0, 3, 10, 0, 'rtKernelLaunch', 1000, 5000, 1, 0, 7),
        (0, 3, 11, 0, 'rtKernelLaunch', 2000, 6000, 2, 0, 7)""")
    con.execute("""insert into stg_task_instances (device_id, record_kind, stream_id, task_id, instance_no,
        task_type_name, waiting_ns, pending_ns, running_ns, complete_ns, is_complete, has_states,
        dropped_instances) values
        (0, 'time_line', 3, 10, 0, 'AI_CORE', null, null, 6500, 7000, true, true, 0),
        (0, 'time_line', 3, 11, 0, 'AI_CORE', null, null, 7500, 8000, true, true, 0)""")
    con.execute("""insert into stg_task_ops (device_id, stream_id, task_id, valid_from_ns, op_name, op_type)
        values (0, 3, 10, -1, 'a', 'A'), (0, 3, 11, -1, 'b', 'B')""")
    con.execute("set variable task_calls = true")  # as the timeline makes its tables
    run_layer(con, "intermediate")
    events = list(trace_module._events(con, "true", None, [], trace_module._Window(), 0))
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    calls = {e["ts"]: names[(e["pid"], e["tid"])] for e in events if e["ph"] == "X" and e["cat"] == "api"}
    assert calls == {1.0: "Host API (tid 7)", 2.0: "Host API (tid 7) #2"}
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    arrows = {
        e["ts"]: (starts[e["id"]]["ts"], names[(0, starts[e["id"]]["tid"])]) for e in events if e["ph"] == "f"
    }
    assert arrows == {6.5: (1.0, "Host API (tid 7)"), 7.5: (2.0, "Host API (tid 7) #2")}
