"""Real msprof control files (the ``real_data`` fixture: PROFETL_REAL_DATA) parse into the metadata models without loss."""

from __future__ import annotations

import json

import pytest

from pipeline.readers.metadata import read_info, read_sample, read_start_info, read_sync_log

pytestmark = pytest.mark.slow  # reads real data (docs/testing.md)


def test_real_msconfig_files(real_data):
    d = real_data / "Ascend+msprof/test/msprof_python/ut/testcase/msconfig"
    info = read_info(d / "info.json")
    raw = json.loads((d / "info.json").read_text())
    assert info.platform_version == raw["platform_version"] == "0"
    assert info.device_info[0].hwts_mhz == 100.0 and info.device_info[0].aic_mhz == 1150.0
    assert info.device_info[0].ai_core_num == 8
    assert info.host_freq_mhz == 100.0
    # nothing dropped: every key of the file is on the model (declared or extra)
    dumped = info.model_dump(by_alias=True)
    assert set(raw) <= set(dumped)
    assert set(raw["DeviceInfo"][0]) <= set(dumped["DeviceInfo"][0])

    sample = read_sample(d / "sample.json")
    assert sample.event_ids() == [0x8, 0xA, 0x9, 0xB, 0xC, 0xD, 0x54, 0x55]
    assert set(json.loads((d / "sample.json").read_text())) <= set(sample.model_dump(by_alias=True))

    start = read_start_info(d / "start_info")
    assert start.collection_time_begin_us == 1659098679447393
    assert start.clock_monotonic_raw_ns == 876117208663770

    sync = read_sync_log(d / "host_start.log")
    assert sync.section == "Host" and sync.values == {"clock_monotonic_raw": 0, "cntvct": 0, "cntvct_diff": 0}
