"""Synth options that make runs with known differences: a distinct start, a slower op."""

from __future__ import annotations

from pipeline.synth.hiprof import HiprofConfig, generate


def _durations(truth, op_name: str) -> list[int]:
    return [x.complete_ns - x.running_ns for x in truth.instances if x.op_name == op_name]


def test_op_scale_multiplies_one_op_and_leaves_the_rest(tmp_path):
    base = generate(tmp_path / "a", HiprofConfig(seed=4))
    slow = generate(tmp_path / "b", HiprofConfig(seed=4, op_scale={"conv2d_0": 1.3}))
    before, after = _durations(base, "conv2d_0"), _durations(slow, "conv2d_0")
    assert before and len(before) == len(after)
    for b, a in zip(before, after):
        assert a == round(b * 1.3) // 10 * 10  # scaled, kept on the 10 ns device tick
    for op in {o.op_name for o in base.ops} - {"conv2d_0"}:
        assert _durations(base, op) == _durations(slow, op)


def test_start_changes_the_run_id(synth_run):
    a = synth_run()
    b = synth_run(start_us=1_767_312_000_000_000)  # one day later
    assert a.run_id != b.run_id
    assert a.run_id.startswith("20260101T000000") and b.run_id.startswith("20260102T000000")
    assert len(a.wh.runs()) == 2


def test_synth_cli_start_and_op_scale(tmp_path):
    from typer.testing import CliRunner

    from pipeline.cli.main import app

    out = tmp_path / "d"
    r = CliRunner().invoke(app, ["synth", str(out), "--start", "2026-03-02T01:00:00", "--op-scale", "relu_3=2", "--json"])
    assert r.exit_code == 0, r.output
    assert '"collectionTimeBegin":"1772413200000000"' in (out / "start_info.0").read_text()
    r = CliRunner().invoke(app, ["synth", str(tmp_path / "e"), "--op-scale", "relu_3"])
    assert r.exit_code == 2 and "OP=FACTOR" in r.stderr
