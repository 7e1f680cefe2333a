"""compare: a run against another run or the median of earlier runs, with values from synth's truth."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pipeline.analysis.compare import compare
from pipeline.cli.main import app
from pipeline.errors import ExitCode, UsageError
from tests.helpers import oracle
from tests.helpers.history import build_history, median, op_mean

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

runner = CliRunner()
SLOW_OP = "conv2d_0"


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """Five nights of one workload (same seed); conv2d_0 is 30% slower in the last one,
    slightly off in nights 1-3 so that the median differs from any single run; a sixth
    night runs only six ops per inference (other random draws too)."""
    return build_history(
        tmp_path_factory.mktemp("cmp"),
        [
            {"seed": 1, "devices": 2},
            {"seed": 1, "devices": 2, "op_scale": {SLOW_OP: 1.04}},
            {"seed": 1, "devices": 2, "op_scale": {SLOW_OP: 0.98}},
            {"seed": 1, "devices": 2, "op_scale": {SLOW_OP: 1.02}},
            {"seed": 1, "devices": 2, "op_scale": {SLOW_OP: 1.3}},
            {"seed": 1, "devices": 2, "tasks": 6},
        ],
    )


def _row(cmp, name):
    return next(c for c in cmp.rows if c.name == name)


def test_an_op_made_30_percent_slower_is_reported_with_its_ratio(nights):
    wh, n = nights
    cmp = compare(wh, n[4].run_id, against=n[0].run_id, threshold_pct=10)
    row = _row(cmp, SLOW_OP)
    expected = op_mean(n[4].truth, SLOW_OP) / op_mean(n[0].truth, SLOW_OP)
    assert row.ratio == pytest.approx(expected, rel=1e-12)
    assert row.ratio == pytest.approx(1.3, abs=0.01)  # scaled durations stay on the 10 ns tick
    assert row.before == pytest.approx(op_mean(n[0].truth, SLOW_OP))
    assert row.after == pytest.approx(op_mean(n[4].truth, SLOW_OP))
    assert row.change == pytest.approx(row.after - row.before)
    assert row.status == "slower" and row.regression
    assert [c.name for c in cmp.regressions] == [SLOW_OP]
    assert cmp.rows[0].name == SLOW_OP  # regressions first
    for other in ("matmul_1", "add_2", "relu_3", "cast_4", "transdata_5"):
        assert _row(cmp, other).ratio == 1.0 and _row(cmp, other).status == "same"


def test_new_and_vanished_entries(nights):
    wh, n = nights
    cmp = compare(wh, n[5].run_id, against=n[0].run_id)
    assert {c.name for c in cmp.rows if c.status == "vanished"} == {"conv2d_6", "matmul_7"}
    vanished = _row(cmp, "matmul_7")
    assert vanished.after is None and vanished.ratio is None and not vanished.regression
    back = compare(wh, n[0].run_id, against=n[5].run_id)
    assert {c.name for c in back.rows if c.status == "new"} == {"conv2d_6", "matmul_7"}


def test_median_of_the_last_n_runs_of_the_workload(nights):
    wh, n = nights
    cmp = compare(wh, n[4].run_id, last=3)
    assert cmp.baseline_run_ids == [x.run_id for x in n[1:4]]
    row = _row(cmp, SLOW_OP)
    expected_before = median([op_mean(x.truth, SLOW_OP) for x in n[1:4]])
    assert row.before == pytest.approx(expected_before, rel=1e-12)
    assert row.ratio == pytest.approx(op_mean(n[4].truth, SLOW_OP) / expected_before, rel=1e-12)
    # more than there are: all earlier runs, and a warning says so
    wide = compare(wh, n[4].run_id, last=10)
    assert wide.baseline_run_ids == [x.run_id for x in n[:4]] and wide.warnings


def test_default_baseline_is_the_previous_run_of_the_workload(nights):
    wh, n = nights
    cmp = compare(wh, n[2].run_id)
    assert cmp.baseline_run_ids == [n[1].run_id]
    assert cmp.workload == "hiprof_result_dir/Ascend310/resnet50"
    with pytest.raises(UsageError, match="no run of workload"):
        compare(wh, n[0].run_id)


def test_threshold_and_noise_floor(nights):
    wh, n = nights
    assert not compare(wh, n[4].run_id, against=n[0].run_id, threshold_pct=40).regressions
    assert not compare(wh, n[4].run_id, against=n[0].run_id, threshold_pct=10, min_value=1e9).regressions


def test_by_api_and_task_type_and_total(nights):
    wh, n = nights
    api = compare(wh, n[5].run_id, against=n[0].run_id, by="api", stat="count")
    launches = _row(api, "rtKernelLaunch")
    assert launches.level == "runtime" and launches.ratio == pytest.approx(6 / 8)
    assert launches.status == "fewer"
    assert _row(api, "aclmdlExecute").level == "acl"
    tt = compare(wh, n[4].run_id, against=n[0].run_id, by="task_type", stat="total")
    before, after = _running_by_task_type(n[0].truth), _running_by_task_type(n[4].truth)
    assert (
        {c.name for c in tt.rows} == set(before) == set(after) >= {"kernel AI core task", "memory copy task"}
    )
    for c in tt.rows:
        assert (c.before, c.after) == (pytest.approx(before[c.name]), pytest.approx(after[c.name])), c
    assert _row(tt, "kernel AI core task").after > _row(tt, "kernel AI core task").before  # conv2d_0 x1.3
    with pytest.raises(UsageError):
        compare(wh, n[4].run_id, by="kernel")


def _running_by_task_type(truth) -> dict[str, int]:
    """Running time (COMPLETE - RUNNING, 0 without RUNNING) summed by task type, from the
    states synth wrote: what compare --by task_type --stat total compares."""
    instances, _ = oracle.task_instances_from_states(truth)
    out: dict[str, int] = {}
    for i in instances:
        name = oracle.TASK_TYPE_NAMES[i["task_type"]]
        out[name] = out.get(name, 0) + (i["complete"] - i["running"] if i["running"] is not None else 0)
    return out


def _iteration_mean(truth) -> float:
    d = [x.step[1] - x.step[0] for x in truth.inferences if x.step is not None]
    return sum(d) / len(d)


def test_by_iteration_times_the_step_trace_iterations(nights):
    """Iteration Time per model: the step-trace iterations (MODEL_START to MODEL_END) synth
    wrote, over both devices; inference runs have no FP, BP or all-reduce records, so no
    other part."""
    wh, n = nights
    cmp = compare(wh, n[5].run_id, against=n[0].run_id, by="iteration")
    assert [(c.level, c.name) for c in cmp.rows] == [("1", "Iteration Time")]
    (row,) = cmp.rows
    assert row.before == pytest.approx(_iteration_mean(n[0].truth))
    assert row.after == pytest.approx(_iteration_mean(n[5].truth))
    assert row.after < row.before and row.status == "faster"  # six tasks per inference instead of eight
    assert row.after_count == len(n[5].truth.inferences) == 2 * 3
    r = runner.invoke(
        app,
        ["compare", n[5].run_id, "--against", n[0].run_id, "--by", "iteration", "--warehouse", str(wh.path)],
    )
    assert r.exit_code == 0, r.output
    assert "Model ID" in r.stdout and "Iteration Time" in r.stdout


def test_one_device(nights):
    wh, n = nights
    cmp = compare(wh, n[4].run_id, against=n[0].run_id, devices=[1])
    dev1 = [
        x.complete_ns - x.running_ns
        for x in n[4].truth.instances
        if x.op_name == SLOW_OP and x.device_id == 1
    ]
    assert _row(cmp, SLOW_OP).after == pytest.approx(sum(dev1) / len(dev1))


def test_cli_exit_code_json_and_csv(nights):
    wh, n = nights
    args = ["compare", n[4].run_id, "--against", n[0].run_id, "--warehouse", str(wh.path)]
    r = runner.invoke(app, args + ["--threshold", "10"])
    assert r.exit_code == ExitCode.REGRESSION == 4, r.output
    assert "SLOWER (regression)" in r.stdout and "1 regression(s) at 10%" in r.stdout
    r = runner.invoke(app, args + ["--threshold", "40"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, args + ["--threshold", "10", "--json"])
    assert r.exit_code == 4
    got = json.loads(r.stdout)
    lib = compare(wh, n[4].run_id, against=n[0].run_id, threshold_pct=10).as_dict()
    assert got == json.loads(json.dumps(lib))
    r = runner.invoke(app, args + ["--format", "csv"])
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0] == "level,name,before,after,change,ratio,before_count,after_count,status,regression"
    assert any(line.startswith(f",{SLOW_OP},") for line in lines)


def test_cli_without_a_baseline_is_a_usage_error(nights):
    wh, n = nights
    r = runner.invoke(app, ["compare", n[0].run_id, "--warehouse", str(wh.path)])
    assert r.exit_code == 2 and "no run of workload" in r.stderr
