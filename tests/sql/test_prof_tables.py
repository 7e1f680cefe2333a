"""The five tables of generation-2/3 dumps equal values computed from the events synth wrote.

One case set per chip family: Ascend910A and Ascend310P (HWTS chips, layout generation 2)
and Ascend910B (STARS, generation 3), with several devices, task ids that start again
after a flip, lost and spurious start logs, aged slices and a job of several PROF_*.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.jobs.runner import ingest_dump
from pipeline.outputs.export import fetch
from pipeline.synth.prof import ProfConfig, ProfTruth, generate
from pipeline.warehouse.store import Warehouse
from tests.helpers import oracle, oracle_prof

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

CASES = {
    "910a": {"chip": "ascend910a"},
    "910a_lost_starts": {
        "chip": "ascend910a",
        "drop_start": 2,
        "extra_start": 2,
        "seed": 1,
        "slice_bytes": 97,
    },
    "310p": {"chip": "ascend310p", "seed": 2},
    "310p_three_devices_old_driver": {
        "chip": "ascend310p",
        "devices": 3,
        "inferences": 4,
        "seed": 3,
        "drop_start": 1,
        "old_driver": True,
    },
    "910b": {"chip": "ascend910b", "seed": 4},
    "910b_aged": {"chip": "ascend910b", "aged_records": 5, "seed": 5, "extra_start": 1},
    "910b_job": {"chip": "ascend910b", "devices": 3, "processes": 2, "seed": 6},
    "910a_job": {"chip": "ascend910a", "devices": 2, "processes": 2, "seed": 7, "streams": 3, "tasks": 9},
}


@dataclass
class ProfRun:
    truth: ProfTruth
    dump: Path
    wh: Warehouse
    run_id: str
    outcome: object

    def rows(self, table: str) -> list[dict]:
        _, t = fetch(self.wh, table, [self.run_id])
        return [{k: v for k, v in r.items() if k != "run_id"} for r in t.to_pylist()]


def _make(where: Path, **kwargs) -> ProfRun:
    out = where / f"synth-{len(list(where.iterdir()))}"
    truth = generate(out, ProfConfig(**kwargs))
    dump = out / truth.root if truth.root else out
    wh = Warehouse(where / "wh")
    with wh.writer():
        outcome = ingest_dump(wh, dump)
    assert outcome.status == "built", outcome.error
    return ProfRun(truth, dump, wh, outcome.run_id, outcome)


@pytest.fixture
def prof_run(tmp_path):
    """Factory: a dump of the given config, ingested and built in the test's own folder."""
    return lambda **kwargs: _make(tmp_path, **kwargs)


@pytest.fixture(scope="session", params=list(CASES))
def run(request, tmp_path_factory):
    """Each case built once per test process and shared by every test that reads it (in this
    module and the ones importing the fixture): read it, never change it."""
    return _make(tmp_path_factory.mktemp(f"prof-{request.param}"), **CASES[request.param])


def test_runtime_api_summary(run):
    oracle.assert_same_rows(
        run.rows("runtime_api_summary"),
        oracle_prof.runtime_api_summary(run.truth),
        ("device_id", "api_name", "stream_id"),
    )
    assert all(r["stream_id"] is None for r in run.rows("runtime_api_summary"))  # no stream id in the record


def test_acl_api(run):
    assert run.rows("acl_api") == oracle_prof.acl_api(run.truth)  # order too


def test_task_scheduler(run):
    got = run.rows("task_scheduler")
    oracle.assert_same_rows(
        got,
        oracle_prof.task_scheduler(run.truth),
        ("device_id", "task_type", "api_name", "task_id", "op_name", "stream_id"),
    )
    assert all(r["waiting_ns"] is None and r["pending_ns"] is None for r in got)
    for dev in {r["device_id"] for r in got}:
        pct = [r["time_pct"] for r in got if r["device_id"] == dev]
        assert pct == sorted(pct, reverse=True)
        assert sum(pct) == pytest.approx(100.0)


def test_ai_core_metrics(run):
    got = run.rows("ai_core_metrics")
    expected = oracle_prof.ai_core_metrics(run.truth)
    assert len(got) == len(expected) > 0
    oracle.assert_same_rows(got, expected, ("device_id", "ts_ns", "stream_id", "task_id"))
    assert [(r["device_id"], r["ts_ns"]) for r in got] == [(r["device_id"], r["ts_ns"]) for r in expected]


def test_topdown_inference(run):
    assert run.rows("topdown_inference") == oracle_prof.topdown_inference(run.truth)


def test_build_issues_count_what_was_left_out(run):
    lone = sum(1 for x in oracle_prof.executions(run.truth) if x["start"] is None)
    rows = run.rows("build_issues")
    assert sum(r["count"] for r in rows if r["kind"] == "task_runs_without_time") == lone
    assert {r["kind"] for r in rows} <= {"task_runs_without_time"}


def test_every_log_is_an_execution_or_an_issue(run):
    """Each start/end log written is in task_runs or counted as a start no end closed."""
    execs = oracle_prof.executions(run.truth)
    runs = run.rows("task_runs")
    assert len(runs) == len(execs)
    issues = [r for r in run.rows("ingest_issues") if r["kind"] == "start_without_end"]
    assert sum(r["count"] for r in issues) == oracle_prof.orphan_starts(run.truth)
    paired = sum(1 for x in execs if x["start"] is not None)
    assert 2 * paired + (len(execs) - paired) + oracle_prof.orphan_starts(run.truth) == len(run.truth.logs)


def test_run_records_chip_generation_and_sources(run):
    t = run.truth
    r = run.wh.run_index().run_record(run.run_id)
    assert r["chip"] == t.chip and r["platform_version"] == t.platform_version
    assert r["layout_generation"] == (3 if t.family == "stars" else 2)
    assert r["layout"] == ("msprof_job" if len(t.prof_dirs) > 1 else "msprof_prof")
    assert r["devices"] == sorted(d.device_id for d in t.devices)
    assert r["bytes_decoded"] + r["bytes_skipped"] == r["data_bytes"]
    for name in (
        "task_scheduler",
        "ai_core_metrics",
        "acl_api",
        "runtime_api_summary",
        "topdown_inference",
        "task_runs",
        "api_calls",
        "task_ops",
    ):
        assert name in r["tables_filled"]
    assert "task_states" in r["tables_filled"]  # TS task-type and flip records
    devices = {d["device_id"]: d for d in run.rows("devices")}
    for d in t.devices:
        row = devices[d.device_id]
        assert row["hwts_freq_source"] == "info.json" and row["hwts_freq_mhz"] == d.hwts_mhz
        assert row["aic_freq_source"].startswith("lpmFreqConv" if t.family == "stars" else "info.json")
        assert row["batch_id_source"].startswith("task id wrap" if t.drv_version is None else "flip records")
    assert 64 in devices and devices[64]["collection_dir"].endswith("host")


def test_batch_ids(run):
    """task_runs.batch_id is the batch synth wrote, from flips (drvVersion) or task-id wrap-around."""
    t = run.truth
    got = {
        (r["device_id"], r["stream_id"], r["task_id"], r["end_ns"]): r["batch_id"]
        for r in run.rows("task_runs")
    }
    expected = {
        (x.device_id, x.stream_id, x.task_id, x.end_ns): x.batch_id
        for x in t.launches
        if (x.device_id, x.stream_id, x.task_id, x.end_ns) in got
    }
    assert expected and all(got[k] == v for k, v in expected.items())
    assert any(v > 0 for v in expected.values())


def test_case_features_present(run):
    t = run.truth
    execs = oracle_prof.executions(t)
    keys = {}
    for x in execs:
        keys.setdefault((x["device_id"], x["stream_id"], x["task_id"]), []).append(x)
    assert any(len(v) > 1 for v in keys.values()), "task ids repeat after the flip"
    assert len({x.device_id for x in t.launches}) == len(t.devices) >= 2
    assert {"AI_CORE", "AI_CPU"} <= {x["type"] for x in execs}
    # a task launched outside any node launch is named by its kernel name (docs/formats.md#rule-association)
    assert "DataPrep_kernel" in {r["op_name"] for r in run.rows("task_scheduler")}


@pytest.mark.parametrize("chip", ["ascend910a", "ascend310p"])
def test_sample_based_ai_core_table(prof_run, chip):
    """sample.json sample-based: aicore.data holds per-core intervals; they fill ai_core_samples, not ai_core_metrics."""
    run = prof_run(chip=chip, sample_based=True, seed=12)
    assert run.truth.samples and not run.truth.pmu
    got = run.rows("ai_core_samples")
    assert got == oracle_prof.ai_core_samples(run.truth) or _close(
        got, oracle_prof.ai_core_samples(run.truth)
    )
    assert run.rows("ai_core_metrics") == []
    oracle.assert_same_rows(
        run.rows("task_scheduler"),
        oracle_prof.task_scheduler(run.truth),
        ("device_id", "task_type", "api_name", "task_id", "op_name", "stream_id"),
    )
    r = run.wh.run_index().run_record(run.run_id)
    assert r["ai_core_profiling_mode"] == "sample-based" and "ai_core_samples" in r["tables_filled"]


def _close(got, expected):
    assert [(r["device_id"], r["core_id"], r["end_ns"]) for r in got] == [
        (r["device_id"], r["core_id"], r["end_ns"]) for r in expected
    ]  # order too
    oracle.assert_same_rows(got, expected, ("device_id", "core_id", "end_ns"))
    return True
