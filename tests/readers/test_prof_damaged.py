"""A PROF_* tree with a device folder whose data is missing and one whose files were cut short.

The rest still ingests, every table equals the truth of what is left, and ingest_issues
says what was missing or cut.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from pipeline.synth.prof import ProfConfig, generate
from tests.helpers import oracle, oracle_prof
from tests.helpers.built import build_dump

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


def _last_slice(data, stem):
    return max(data.glob(f"{stem}.slice_*[0-9]"), key=lambda p: int(p.name.rsplit("_", 1)[1]))


def test_missing_and_cut_device_data(tmp_path):
    truth = generate(
        tmp_path / "synth", ProfConfig(chip="ascend910a", devices=3, seed=11, other_records=True)
    )
    dump = tmp_path / "synth" / truth.root
    shutil.rmtree(dump / "device_1" / "data")  # device 1: nothing but its control files
    d2 = dump / "device_2" / "data"
    hwts, aicore = _last_slice(d2, "hwts.data.2"), _last_slice(d2, "aicore.data.2")
    hwts.write_bytes(hwts.read_bytes()[:-10])  # into the last (log type 3) record
    aicore.write_bytes(aicore.read_bytes()[:-50])  # into the last PMU record

    run, rows = build_dump(tmp_path / "wh", dump)

    issues = rows("ingest_issues")
    assert {(i["device_id"], i["source_file"]) for i in issues if i["kind"] == "missing_file"} == {
        (1, "device_1/data")
    }
    cut = {(i["source_file"], i["byte_length"]) for i in issues if i["kind"] == "truncated_record"}
    assert cut == {(f"device_2/data/{hwts.name}", 54), (f"device_2/data/{aicore.name}", 78)}
    assert run["devices"] == [0, 1, 2] and run["bytes_decoded"] + run["bytes_skipped"] == run["data_bytes"]

    last_pmu = max((p for p in truth.pmu if p.device_id == 2), key=lambda p: p.ts_ns)
    left = dataclasses.replace(
        truth,
        logs=[x for x in truth.logs if x.device_id != 1],
        pmu=[p for p in truth.pmu if p.device_id != 1 and p is not last_pmu],
    )
    oracle.assert_same_rows(
        rows("task_scheduler"),
        oracle_prof.task_scheduler(left),
        ("device_id", "task_type", "api_name", "task_id", "op_name", "stream_id"),
    )
    oracle.assert_same_rows(
        rows("ai_core_metrics"),
        oracle_prof.ai_core_metrics(left),
        ("device_id", "ts_ns", "stream_id", "task_id"),
    )
    assert rows("topdown_inference") == oracle_prof.topdown_inference(left)
    # host data is intact: device 1's API calls are still there, attributed by their thread
    oracle.assert_same_rows(
        rows("runtime_api_summary"),
        oracle_prof.runtime_api_summary(truth),
        ("device_id", "api_name", "stream_id"),
    )
    assert rows("acl_api") == oracle_prof.acl_api(truth)
    assert {r["device_id"] for r in rows("task_runs")} == {0, 2}
