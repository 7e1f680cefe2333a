"""Software versions on real dumps (the ``real_data`` fixture: PROFETL_REAL_DATA): every dump
found gets what its control files record, NULL where they record nothing. The expected values
are read here with json.load from the files themselves, not through profetl's readers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.jobs.dumps import find_dumps, scan_dump
from pipeline.jobs.runner import ingest_dump
from pipeline.readers.versions import software_versions
from pipeline.warehouse.store import Warehouse

TORCH = (
    "hicann+oam-tools/experiment/task-book/msprof_tool_experience_imaginationhh/perf-data/"
    "hdspace-32g-outer-17_59186_20260601142437309_ascend_pt"
)
MINDINSIGHT = "mindspore-ai+mindinsight/tests/utils/resource/profiler"

pytestmark = pytest.mark.slow  # reads real data and ingests real dumps (docs/testing.md)


def _expected(dump: Path, control: list[str]) -> dict:
    """What the dump's control files record, read with json.load: profiler_info's cann_version
    and torch_npu_version, info.json's cannVersion and drvVersion."""
    cann, driver, framework = [], [], []
    for rel in sorted(control):
        name = Path(rel).name
        try:
            d = json.loads((dump / rel).read_text(encoding="utf-8"))
        except ValueError:
            continue
        if re.fullmatch(r"profiler_info(_\d+)?\.json", name):
            cann.append(d.get("cann_version"))
            framework.append(d.get("torch_npu_version") and "torch_npu " + d["torch_npu_version"])
        elif re.fullmatch(r"info\.json(\.\d+)?", name):
            cann.append(d.get("cannVersion"))
            drv = d.get("drvVersion")  # an integer; a JSON true is no version
            driver.append(drv if isinstance(drv, int) and not isinstance(drv, bool) else None)

    def one(values):
        kept = list(dict.fromkeys(str(v) for v in values if v not in (None, "")))
        return ", ".join(kept) or None

    return {"cann_version": one(cann), "driver_version": one(driver), "framework_version": one(framework)}


def test_every_real_dump_gets_the_versions_its_control_files_record(real_data):
    found = [(p, layout) for p, layout in find_dumps(real_data, max_depth=12)]
    assert len(found) >= 5
    recorded = 0
    for path, layout in found:
        dump = scan_dump(path, layout)
        _, texts = dump.identity()
        got = software_versions(texts)
        assert got == _expected(path, list(texts)), path
        recorded += any(got.values())
    assert recorded >= 1  # the torch_npu run of CANN 9.1 records its CANN and torch_npu


def test_a_real_torch_npu_run_records_its_cann_and_torch_npu_versions(real_data, tmp_path):
    dump = real_data / TORCH
    info = json.loads((dump / "profiler_info.json").read_text(encoding="utf-8"))
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        o = ingest_dump(wh, dump, then_build=False, tags={"commit": "abc"})
    run = wh.run_index().run_record(o.run_id)
    assert run["cann_version"] == info["cann_version"]
    assert run["framework_version"] == f"torch_npu {info['torch_npu_version']}"
    assert run["driver_version"] is None  # torch_npu's files record no driver version
    assert dict(run["tags"]) == {"commit": "abc"}


def test_real_prof_metadata_without_versions_reads_null(real_data, tmp_path):
    """The 2023 msprof metadata (info.json.N of MindSpore's runs) records no CANN or driver
    version: NULL, not a guess."""
    infos = [
        i
        for i in sorted((real_data / MINDINSIGHT).glob("PROF_*/device_*/info.json.*"))
        if not i.name.endswith(".done")
    ]
    assert infos, f"no info.json.N under {MINDINSIGHT}"
    for info in infos:
        d = json.loads(info.read_text(encoding="utf-8"))
        assert "cannVersion" not in d and "drvVersion" not in d
        got = software_versions({info.name: info.read_text(encoding="utf-8")})
        assert got == {"cann_version": None, "driver_version": None, "framework_version": None}
