"""Flow arrows of the Chrome trace lead from the runtime API call that launched a task to the
task. Expected arrows come from the generator's truth: each launch's task_track record lies
inside one runtime call of its thread, and the task runs from the launch's start."""

from __future__ import annotations

import pytest

from pipeline.synth.prof import ProfConfig, generate
from pipeline.timeline import chrome_trace
from pipeline.warehouse import Warehouse
from tests.built import build_dump


@pytest.mark.parametrize("chip", ["ascend910b", "ascend910a"])
def test_each_task_gets_one_arrow_from_the_call_that_launched_it(tmp_path, chip):
    truth = generate(tmp_path / "d", ProfConfig(chip=chip, devices=2, inferences=2, tasks=6))
    dump = tmp_path / "d" / truth.root if truth.root else tmp_path / "d"
    run, _ = build_dump(tmp_path / "wh", dump)
    trace = chrome_trace(Warehouse(tmp_path / "wh"), run["run_id"])

    runtime = [c for c in truth.api_calls if c.level == "runtime" and c.kind == "api"]
    want = set()
    for launch in truth.launches:
        call = [c for c in runtime if c.tid == 7000 + launch.device_id and c.start_ns <= launch.track_ns <= c.end_ns]
        assert len(call) == 1  # the generator's own layout: one runtime call around each track record
        want.add((launch.device_id, round(call[0].start_ns / 1000, 3), round(launch.start_ns / 1000, 3)))

    starts = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "s"}
    got = set()
    for f in (e for e in trace["traceEvents"] if e["ph"] == "f"):
        s = starts[f["id"]]
        got.add((f["pid"], round(s["ts"], 3), round(f["ts"], 3)))
    assert len(starts) == len(truth.launches)
    assert got == want
