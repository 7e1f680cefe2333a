"""Synth options that make runs with known differences (a distinct start, a slower op), and
PROF_* dumps whose control files and options are what msprof's parser and profetl expect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.jobs.runner import ingest_dump
from pipeline.synth import prof
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse.store import Warehouse

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


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
    assert len(a.wh.run_index().run_records()) == 2


def test_synth_cli_start_and_op_scale(tmp_path):
    from typer.testing import CliRunner

    from pipeline.cli.main import app

    out = tmp_path / "d"
    r = CliRunner().invoke(
        app, ["synth", str(out), "--start", "2026-03-02T01:00:00", "--op-scale", "relu_3=2", "--json"]
    )
    assert r.exit_code == 0, r.output
    assert '"collectionTimeBegin":"1772413200000000"' in (out / "start_info.0").read_text()
    r = CliRunner().invoke(app, ["synth", str(tmp_path / "e"), "--op-scale", "relu_3"])
    assert r.exit_code == 2 and "OP=FACTOR" in r.stderr


# --- PROF_* control files and options ------------------------------------------------------


def _json(path):
    return json.loads(path.read_text())


@pytest.mark.parametrize("chip", list(prof.CHIPS))
def test_prof_control_files_carry_what_real_ones_carry(tmp_path, chip):
    """The host folder names the host (device 64), sample.json has the AI Vector fields, info.json
    a drvVersion: what msprof's parser needs to take the dump as a real one."""
    truth = prof.generate(tmp_path / "d", prof.ProfConfig(chip=chip))
    root = tmp_path / "d" / truth.root
    assert _json(root / "host" / "info.json")["devices"] == "64"
    assert _json(root / "host" / "sample.json")["devices"] == "64"
    for d in truth.devices:
        ddir = root / f"device_{d.device_id}"
        info, sample = _json(ddir / f"info.json.{d.device_id}"), _json(ddir / "sample.json")
        assert info["devices"] == sample["devices"] == str(d.device_id)
        assert info["drvVersion"] >= 0x072211 and truth.drv_version == info["drvVersion"]
        assert sample["aiv_metrics"] == sample["ai_core_metrics"] == truth.metric_set
        assert sample["aiv_profiling_events"] == sample["ai_core_profiling_events"]
        assert sample["aiv_profiling_mode"] == sample["ai_core_profiling_mode"] == "task-based"


def test_prof_old_driver_writes_no_drv_version(tmp_path):
    cfg = prof.ProfConfig(chip="ascend310p", old_driver=True)
    truth = prof.generate(tmp_path / "d", cfg)
    root = tmp_path / "d" / truth.root
    assert truth.drv_version is None
    infos = [p for p in root.rglob("info.json*") if not p.name.endswith(".done")]
    assert len(infos) == cfg.devices + 1  # each device's and the host's
    assert all("drvVersion" not in _json(p) for p in infos)


@pytest.mark.parametrize("chip", list(prof.CHIPS))
def test_prof_metric_set_is_honoured(tmp_path, chip):
    truth = prof.generate(tmp_path / "d", prof.ProfConfig(chip=chip, metric_set="Memory", devices=1))
    sample = _json(tmp_path / "d" / truth.root / "device_0" / "sample.json")
    assert sample["ai_core_metrics"] == truth.metric_set == "Memory"
    assert sample["ai_core_profiling_events"] == "0x15,0x16,0x31,0x32,0xf,0x10,0x12,0x13"
    assert truth.event_ids == [0x15, 0x16, 0x31, 0x32, 0xF, 0x10, 0x12, 0x13]
    with pytest.raises(ValueError, match="aicorePipeline"):
        prof.generate(tmp_path / "e", prof.ProfConfig(chip=chip, metric_set="aicorePipeline"))


def test_synth_cli_metric_set_with_layout_prof(tmp_path):
    from typer.testing import CliRunner

    from pipeline.cli.main import app

    r = CliRunner().invoke(
        app,
        [
            "synth",
            "--layout",
            "prof",
            "--chip",
            "ascend910b",
            "--metric-set",
            "Memory",
            "--json",
            str(tmp_path / "d"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["metric_set"] == "Memory"
    r = CliRunner().invoke(
        app, ["synth", "--layout", "prof", "--metric-set", "aicoreMemoryBandwidth", str(tmp_path / "e")]
    )
    assert r.exit_code == 2 and "PipeUtilization, Memory" in r.stderr
    r = CliRunner().invoke(app, ["synth", "--old-driver", str(tmp_path / "f")])
    assert r.exit_code == 2 and "--layout prof" in r.stderr


@pytest.mark.parametrize("chip", list(prof.CHIPS))
def test_prof_synth_dumps_ingest_clean(tmp_path, chip):
    """A 4-device dump of each chip: no byte skipped, no issue. The records of documented types no
    table uses are written only on request; then they are the bytes the reader counts as skipped."""
    sizes = {"ascend910a": 40 + 2 * 64, "ascend310p": 40 + 2 * 64, "ascend910b": 40 + 64 + 128}
    for other, skipped in ((False, 0), (True, 4 * sizes[chip])):
        out = tmp_path / f"d{int(other)}"
        truth = prof.generate(out, prof.ProfConfig(chip=chip, devices=4, other_records=other))
        wh = Warehouse(tmp_path / f"wh{int(other)}")
        with wh.writer():
            o = ingest_dump(wh, out / truth.root, then_build=False)
        run = wh.run_index().run_record(o.run_id)
        assert run["bytes_skipped"] == skipped and run["bytes_decoded"] == run["data_bytes"] - skipped
        if other:
            assert o.issues and all(": counted_tag: " in line for line in o.issues)
        else:
            assert o.issues == [] and run["issues"] == 0


def test_prof_task_ids_wrap_at_16_bits_and_every_task_is_counted(tmp_path):
    """More than 65,535 tasks on one stream: the ids wrap to 0 as the hardware's 16-bit ids do,
    with a flip record, and the built tables hold every task with its own op and times."""
    from collections import Counter

    from typer.testing import CliRunner

    from pipeline.cli.main import app
    from pipeline.outputs.export import fetch

    out = tmp_path / "d"
    r = CliRunner().invoke(
        app,
        [
            "synth",
            "--layout",
            "prof",
            "--chip",
            "ascend910b",
            "--devices",
            "1",
            "--streams",
            "1",
            "--inferences",
            "1",
            "--tasks",
            "65540",
            # slices of 1 MB, not synth's 4 KB: the ids are what this test is about, and 15,000
            # small files would make it a test of many files as well
            "--slice-bytes",
            "1048576",
            "--truth",
            str(tmp_path / "t.json"),
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    launches = _json(tmp_path / "t.json")["launches"]
    assert len(launches) == 65_541 and len({x["stream_id"] for x in launches}) == 1
    assert max(x["task_id"] for x in launches) == 0xFFFF  # the ids a u16 holds, and no more
    assert sorted(x["task_id"] for x in launches if x["task_id"] < 5) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        o = ingest_dump(wh, next(out.iterdir()))
    assert o.status == "built" and not o.issues, o.error or o.issues
    _, t = fetch(wh, "op_summary", [o.run_id])
    got = Counter(
        (x["op_name"], x["task_id"], x["stream_id"], x["start_ns"], x["dur_ns"]) for x in t.to_pylist()
    )
    assert got == Counter(
        (x["op_name"], x["task_id"], x["stream_id"], x["start_ns"], x["end_ns"] - x["start_ns"])
        for x in launches
    )
    _, t = fetch(wh, "task_scheduler", [o.run_id])
    assert sum(t.column("task_count").to_pylist()) == len(launches)


def test_hiprof_refuses_more_task_ids_than_16_bits_hold(tmp_path):
    from typer.testing import CliRunner

    from pipeline.cli.main import app

    r = CliRunner().invoke(app, ["synth", "--tasks", "65535", str(tmp_path / "d")])
    assert r.exit_code == 2, r.output
    assert (
        r.stderr.startswith("profetl: error: --tasks 65535: at most 65534 with --layout hiprof")
        and not (tmp_path / "d").exists()
    )


@pytest.mark.parametrize(
    "layout", [["--layout", "hiprof"], ["--layout", "prof", "--chip", "ascend910b", "--devices", "1"]]
)
def test_synth_mb_writes_a_dump_of_about_that_size(tmp_path, layout):
    """--mb 3: about 3 MB on disk, the dump the options describe repeated along its timeline,
    every copy's tasks in the built tables."""
    from typer.testing import CliRunner

    from pipeline.cli.main import app
    from pipeline.outputs.export import fetch

    out = tmp_path / "d"
    r = CliRunner().invoke(app, ["synth", *layout, "--mb", "3", "--json", str(out)])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    on_disk = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert abs(on_disk - 3_000_000) <= 0.05 * 3_000_000, on_disk
    # one copy: the same options without --mb
    one = json.loads(CliRunner().invoke(app, ["synth", *layout, "--json", str(tmp_path / "one")]).stdout)
    tasks_per_copy = (
        one["task_instances"] if "task_instances" in one else one["device_logs"] // 2
    )  # a start and an end log
    assert got["copies"] > 10
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        o = ingest_dump(wh, Path(got.get("dump", out)))
    assert o.status == "built" and not o.issues, o.error or o.issues
    _, t = fetch(wh, "task_scheduler", [o.run_id])
    assert sum(t.column("task_count").to_pylist()) == got["copies"] * tasks_per_copy
    r = CliRunner().invoke(
        app, ["synth", *layout, "--mb", "3", "--truth", str(tmp_path / "t.json"), str(tmp_path / "e")]
    )
    assert r.exit_code == 2 and "--truth" in r.stderr
