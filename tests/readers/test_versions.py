"""pipeline/readers/versions.py: the software versions a collection recorded, from control
files this test writes (docs/formats.md#software-versions); NULL where none records one."""

from __future__ import annotations

import json
import shutil

import pytest

from pipeline.jobs.runner import ingest_dump
from pipeline.readers.versions import from_metadata_json, software_versions
from pipeline.warehouse.store import Warehouse

NONE = {"cann_version": None, "driver_version": None, "framework_version": None}


def test_info_json_records_cann_and_driver():
    info = {"platform_version": "5", "cannVersion": "8.0.RC3", "drvVersion": 467734, "version": "1.0"}
    got = software_versions({"PROF_1/device_0/info.json.0": json.dumps(info)})
    assert got == {"cann_version": "8.0.RC3", "driver_version": "467734", "framework_version": None}


def test_profiler_info_records_cann_and_torch_npu():
    info = {"config": {}, "cann_version": "9.1.0", "torch_npu_version": "2.7.1.post2"}
    got = software_versions({"profiler_info_3.json": json.dumps(info)})
    assert got == {
        "cann_version": "9.1.0",
        "driver_version": None,
        "framework_version": "torch_npu 2.7.1.post2",
    }


@pytest.mark.parametrize(
    "texts",
    [
        {},
        {"start_info": '{"collectionTimeBegin": "1"}', "sample.json": '{"devices": "0"}'},
        {"info.json": json.dumps({"platform_version": "1", "version": "1.0"})},  # the file format's version
        {"info.json": json.dumps({"cannVersion": "", "drvVersion": "NA"})},
        {"info.json": json.dumps({"cannVersion": ["8.0"], "drvVersion": True})},
        {"info.json": json.dumps({"drvVersion": 2**32})},  # out of range: unknown
        {"info.json": json.dumps({"drvVersion": -1})},
        {"info.json": "not json"},
        {"info.json": "[1, 2]"},
        {"info.json": "[" * 100_000 + "]" * 100_000},  # nested deeper than the parser goes
        {"profiler_info.json": json.dumps({"cann_version": None, "rank_id": 0})},
        {"other.json": json.dumps({"cannVersion": "8.0", "cann_version": "8.0"})},  # not a control file
    ],
)
def test_null_where_no_control_file_records_a_version(texts):
    assert software_versions(texts) == NONE


def test_info_json_read_by_its_first_line_as_msprof_does():
    text = json.dumps({"cannVersion": "8.1.RC1"}) + "\ntrailing text msprof does not read\n"
    assert software_versions({"info.json": text})["cann_version"] == "8.1.RC1"


def test_driver_version_given_as_digits():
    assert software_versions({"info.json": '{"drvVersion": " 467473 "}'})["driver_version"] == "467473"


def test_devices_that_disagree_keep_each_value_once_in_file_order():
    texts = {
        "PROF_1/device_1/info.json.1": json.dumps({"cannVersion": "8.0.RC2", "drvVersion": 2}),
        "PROF_1/device_0/info.json.0": json.dumps({"cannVersion": "8.0.RC1", "drvVersion": 2}),
        "PROF_1/host/info.json": json.dumps({"cannVersion": "8.0.RC1"}),
    }
    got = software_versions(texts)
    assert got["cann_version"] == "8.0.RC1, 8.0.RC2"
    assert got["driver_version"] == "2"


def test_from_metadata_json():
    texts = {"profiler_info.json": json.dumps({"cann_version": "8.5.0"})}
    assert from_metadata_json(json.dumps(texts))["cann_version"] == "8.5.0"
    assert from_metadata_json(None) == NONE
    assert from_metadata_json("garbage") == NONE
    assert from_metadata_json("[]") == NONE


def test_an_ingested_prof_tree_records_the_versions_of_its_info_json(tmp_path, small_dumps):
    """A PROF_* tree as synth writes it records its driver (drvVersion) but no CANN version:
    NULL. The same tree whose info.json files this test gives cannVersion and another
    drvVersion: the run records them."""
    plain, versioned = tmp_path / "plain", tmp_path / "versioned"
    shutil.copytree(small_dumps / "prof", plain)
    shutil.copytree(small_dumps / "prof", versioned)
    infos = _infos(versioned)
    assert infos
    for p in infos:
        first, sep, rest = p.read_text().partition("\n")
        d = json.loads(first)
        d.update(cannVersion="8.0.RC1", drvVersion=467734)
        p.write_text(json.dumps(d) + sep + rest)
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        a = ingest_dump(wh, next(plain.glob("PROF_*")), then_build=False)
        b = ingest_dump(wh, next(versioned.glob("PROF_*")), then_build=False)
    runs = wh.run_index()
    synth_drv = {json.loads(p.read_text().partition("\n")[0]).get("drvVersion") for p in _infos(plain)}
    assert len(synth_drv) == 1 and isinstance(next(iter(synth_drv)), int)
    got = runs.run_record(a.run_id)
    assert (got["cann_version"], got["driver_version"], got["framework_version"]) == (
        None,
        str(synth_drv.pop()),
        None,
    )
    got = runs.run_record(b.run_id)
    assert (got["cann_version"], got["driver_version"], got["framework_version"]) == (
        "8.0.RC1",
        "467734",
        None,
    )


def _infos(dump) -> list:
    return sorted(p for p in dump.rglob("info.json*") if not p.name.endswith(".done"))
