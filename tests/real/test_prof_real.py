"""Real generation-2 data (through the ``real_data`` fixture).

JOB3 is a MindSpore 0.5 training dump of an Ascend910 in the ``profiler_default_tag``
naming, without info.json: one HWTS file of 4,022,208 bytes (62,847 records of 64 bytes),
a binary ``training_trace`` file and a text ``task_desc_info``. The expected values below
were worked out by hand from the bytes quoted next to them (docs/formats.md#hwts-log: byte 0 bits
0-2 log type, 4-7 counter; task id u16 @6; syscnt u64 @8; stream u32 @16; 100 MHz, so one
tick is 10 ns; no dev_start.log, so ticks count from 0).

The PROF_* directories are real msprof metadata of a two-process Ascend910 job (one
PROF_* per device, no data/ folder).
"""

from __future__ import annotations

import json

import pytest

from pipeline.jobs.dumps import detect
from pipeline.readers.metadata import read_info, read_start_info
from tests.helpers.built import build_dump
from tests.real.job3 import JOB3

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

PROFILER = "mindspore-ai+mindinsight/tests/utils/resource/profiler"
HWTS = "hwts.log.data.45.dev.profiler_default_tag.1.slice_0"


def _ingest(tmp_path, dump):
    return build_dump(tmp_path / "wh", dump)


def test_job3_is_generation_2_with_assumed_chip_and_default_frequency(real_data, job3):
    run, rows = job3
    assert detect(real_data / JOB3) == "profiler_default_tag"
    assert (run["layout_generation"], run["layout"], run["chip"], run["devices"]) == (
        2,
        "profiler_default_tag",
        "Ascend910A",
        [1],
    )
    (dev,) = rows("devices")
    assert dev["hwts_freq_mhz"] == 100.0 and dev["hwts_freq_source"] == "default for Ascend910A"
    assert dev["platform_source"].startswith("assumed") and dev["dev_cntvct"] is None
    assert dev["batch_id_source"] == "task id wrap-around per stream"  # no drvVersion: no flips
    kinds = {i["kind"] for i in rows("ingest_issues")}
    assert {"assumed_value", "bad_metadata"} <= kinds


def test_job3_every_hwts_record_is_decoded_or_accounted_for(real_data, job3):
    run, rows = job3
    size = (real_data / JOB3 / HWTS).stat().st_size
    assert size == 4_022_208 == 62_847 * 64
    runs = rows("task_runs")
    with_start = sum(1 for r in runs if r["start_ns"] is not None)
    issues = [i for i in rows("ingest_issues") if i["source_file"] == HWTS]
    orphans = sum(i["count"] for i in issues if i["kind"] == "start_without_end")
    assert 2 * with_start + (len(runs) - with_start) + orphans == 62_847
    assert (len(runs), with_start, orphans) == (31_385, 31_385, 77)  # 31,462 starts and 31,385 ends
    assert run["bytes_skipped"] == 0 and run["bytes_decoded"] == run["data_bytes"]
    assert all(r["start_ns"] <= r["end_ns"] for r in runs)  # 1,243 end in the same tick as they start


def test_job3_tasks_worked_out_by_hand(job3):
    _, rows = job3
    runs = rows("task_runs")

    def first(task):
        return min((r for r in runs if r["task_id"] == task), key=lambda r: r["end_ns"])

    # records 0 and 1 (bytes 0-127):
    #   00 00 d3 6b 00 00 62 ea | 75 b1 de 05 09 00 00 00 | 01 02 00 00  start, task 0xea62 = 60002,
    #       syscnt 0x0905deb175 = 38,753,186,165, stream 0x0201 = 513
    #   11 00 d3 6b 00 00 62 ea | 76 b1 de 05 09 00 00 00 | 01 02 00 00  end (type 1, cnt 1), syscnt + 1
    r = first(60002)
    assert (r["stream_id"], r["start_syscnt"], r["end_syscnt"]) == (513, 38_753_186_165, 38_753_186_166)
    assert (r["start_ns"], r["end_ns"]) == (387_531_861_650, 387_531_861_660)
    assert (r["seq"], r["source_file"], r["task_type_name"]) == (1, HWTS, "AI_CORE")
    # records 13 and 14 (bytes 832-959):
    #   d0 00 d3 6b 00 00 8c 75 | f8 5a 17 33 0a 00 00 00 | 07 02 00 00  start, cnt 13, task 0x758c = 30092,
    #       syscnt 0x0a33175af8 = 43,806,841,592, stream 0x0207 = 519
    #   e1 00 d3 6b 00 00 8c 75 | 02 5c 17 33 0a 00 00 00 | 07 02 00 00  end, cnt 14, syscnt 43,806,841,858
    r = first(30092)
    assert (r["stream_id"], r["start_ns"], r["end_ns"]) == (519, 438_068_415_920, 438_068_418_580)
    assert r["end_ns"] - r["start_ns"] == 2_660  # 266 ticks
    # records 4352 and 4353 (bytes 278528-278655):
    #   00 00 d3 6b 00 00 c1 7e | bd 10 c9 34 0a 00 00 00 | 1d 02 00 00  start, task 0x7ec1 = 32449,
    #       syscnt 0x0a34c910bd = 43,835,265,213, stream 0x021d = 541
    #   11 00 d3 6b 00 00 c1 7e | 34 32 c9 34 0a 00 00 00 | 1d 02 00 00  end, syscnt 43,835,273,780
    r = first(32449)
    assert (r["stream_id"], r["start_ns"], r["end_ns"]) == (541, 438_352_652_130, 438_352_737_800)
    # the last record (bytes 4022144-): e1 00 d3 6b 00 00 8c 79 | ... end, task 0x798c = 31116, stream 0x022d = 557
    last = max(runs, key=lambda r: r["seq"])
    assert (last["seq"], last["task_id"], last["stream_id"]) == (62_846, 31_116, 557)


def test_job3_op_names_from_task_desc_text(job3):
    _, rows = job3
    ts = rows("task_scheduler")
    # task_desc_info line 1: "Default/AssignAdd-op414 1 30092 3"; graph_desc_info: op_type:AssignAdd.
    # The text's stream 3 is the device's stream 519: the join is on the task id (as mindinsight's).
    (row,) = [r for r in ts if r["task_id"] == 30092]
    assert (row["op_name"], row["stream_id"], row["task_type"]) == ("Default/AssignAdd-op414", 519, "AI_CORE")
    assert row["waiting_ns"] is None and row["pending_ns"] is None and row["api_name"] is None
    execs = [r for r in rows("task_runs") if r["task_id"] == 30092]
    assert row["task_count"] == len(execs) == 15
    assert row["time_ns"] == sum(r["end_ns"] - r["start_ns"] for r in execs)
    (row,) = [r for r in ts if r["task_id"] == 32449]  # line 199: "... Adam-op202 31 32449 25"
    assert (
        row["op_name"] == "Default/network-TrainStepWrap/optimizer_d-Adam/Adam-op202"
        and row["stream_id"] == 541
    )
    ops = {(r["task_id"], r["op_name"]): r for r in rows("task_ops")}
    assert len(ops) == 199
    assert ops[(30092, "Default/AssignAdd-op414")]["op_type"] == "AssignAdd"
    assert ops[(32449, "Default/network-TrainStepWrap/optimizer_d-Adam/Adam-op202")]["block_dim"] == 31
    assert sum(1 for r in ts if r["op_name"] is not None) == 199  # every described task ran and is named


def test_job3_iterations_from_training_trace(job3):
    _, rows = job3
    steps = rows("step_trace")
    assert len(steps) == 167_440 // 20
    starts = sorted((r for r in steps if r["tag_id"] == 0), key=lambda r: r["ts_ns"])
    ends = sorted((r for r in steps if r["tag_id"] == 1), key=lambda r: r["ts_ns"])
    assert len(starts) == len(ends) == 322
    # record 0:  1a 27 00 00 00 00 00 00 | 91 75 | 07 02 | f2 6d 17 33 0a 00 00 00  tag 10010 (job id, a step
    #            start), task 30097, stream 519, syscnt 0x0a33176df2 = 43,806,846,450
    # record 25: ff 00 00 00 00 00 00 00 | c2 7e | 1d 02 | 61 41 c9 34 0a 00 00 00  tag 255 (step end),
    #            task 32450, stream 541, syscnt 0x0a34c94161 = 43,835,277,665
    assert (starts[0]["raw_tag_id"], starts[0]["ts_ns"], starts[0]["model_id"], starts[0]["index_id"]) == (
        10010,
        438_068_464_500,
        10010,
        1,
    )
    assert (ends[0]["raw_tag_id"], ends[0]["ts_ns"], ends[0]["index_id"]) == (255, 438_352_776_650, 1)
    td = [r for r in rows("topdown_inference") if r["module_name"] == "Task Scheduler"]
    assert [r["infer_id"] for r in td] == list(range(1, len(td) + 1))
    # iteration 2 holds the tasks ending after iteration 1's end and at or before its own
    second = [r for r in rows("task_runs") if 438_352_776_650 < r["end_ns"] <= ends[1]["ts_ns"]]
    assert td[1]["start_ns"] == min(r["start_ns"] for r in second)
    assert td[1]["dur_ns"] == max(r["end_ns"] for r in second) - td[1]["start_ns"]


def test_job3_hwts_frequency_option(real_data, tmp_path, monkeypatch):
    monkeypatch.setenv("PROFETL_HWTS_MHZ", "50")
    run, rows = _ingest(tmp_path, real_data / JOB3)
    (dev,) = rows("devices")
    assert (dev["hwts_freq_mhz"], dev["hwts_freq_source"]) == (50.0, "option")
    r = min((r for r in rows("task_runs") if r["task_id"] == 30092), key=lambda r: r["end_ns"])
    assert (r["start_ns"], r["end_ns"]) == (876_136_831_840, 876_136_837_160)  # 20 ns per tick


def test_real_prof_metadata_parses_without_loss(real_data, tmp_path):
    parent = real_data / PROFILER
    # device folders keep metadata and per-iteration timelines only: an export (generation 4)
    assert detect(parent) == "msprof_export"
    run, rows = _ingest(tmp_path, parent)
    texts = json.loads(run["metadata_json"])
    files = sorted(
        p
        for p in parent.rglob("*")
        if p.is_file()
        and p.name.split(".")[0] in ("info", "start_info", "end_info")
        and not p.name.endswith(".done")
    )
    assert len(files) == 6
    kept = {p.relative_to(parent).as_posix(): p.read_text() for p in files}
    assert {k: v for k, v in texts.items() if k in kept} == kept  # every byte kept
    for p in (p for p in files if not p.name.startswith("end_info")):  # profetl reads no end_info
        raw = json.loads(p.read_text())
        reader = {"info": read_info, "start_info": read_start_info}[p.name.split(".")[0]]
        model = reader(p).model_dump(by_alias=True)
        assert set(raw) <= set(model)  # nothing dropped
        if "DeviceInfo" in raw:
            assert set(raw["DeviceInfo"][0]) <= set(model["DeviceInfo"][0])
            assert model["cycleToTime"] == raw["cycleToTime"] and model["netCard"] == raw["netCard"]
    devices = {d["device_id"]: d for d in rows("devices")}
    assert sorted(devices) == run["devices"] == [0, 1]
    for dev, pid, start_us, mon in (
        (0, 10036, 1692340024324979, 56579931060630),
        (1, 10044, 1692340024570093, 56580176176190),
    ):
        d = devices[dev]
        assert (
            d["chip"],
            d["platform_version"],
            d["hwts_freq_mhz"],
            d["aic_freq_mhz"],
            d["ai_core_num"],
        ) == ("Ascend910A", "1", 100.0, 1000.0, 32)
        assert (d["pid"], d["host_freq_mhz"]) == (pid, 1000.0)
        assert d["wall_offset_ns"] == start_us * 1000 - mon  # start_info.N (docs/formats.md#clock-wall)
    assert run["collection_start_us"] == 1692340024324979
    assert (run["layout"], run["layout_generation"], run["chip"]) == ("msprof_export", 4, "Ascend910A")
    assert {r["device_id"] for r in rows("task_runs")} == {0, 1}
