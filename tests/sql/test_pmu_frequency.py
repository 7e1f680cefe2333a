"""stg_pmu_records.time_freq_mhz: the AI Core frequency of a record's time formula is the
lpmFreqConv sample in force at its time (the last one at or before it; of samples at one time,
the last by record index), else info.json's. A device with few samples takes it by a range
join, one with many by an ASOF join; both rules on hand-made raw rows, expected values worked
out by hand.
"""

from __future__ import annotations

from pipeline.jobs.transforms import run_layer
from tests.helpers.empty_raw import empty_raw_tables

INFO_MHZ = 1800.0

# device 0: three samples, two of them at one time; device 1: 101 samples, one every 10 ns
# from 1000 (frequency 1000 + k) and a second one at 1020; device 2: none
FEW = [(0, 100, 1500.0), (1, 200, 1600.0), (2, 200, 1650.0)]  # (seq, ts_ns, MHz)
MANY = [(k, 1000 + 10 * k, 1000.0 + k) for k in range(100)] + [(100, 1020, 1500.0)]  # a second at 1020

# (device, seq, ts_ns, expected time_freq_mhz)
RECORDS = [
    (0, 0, 50, INFO_MHZ),  # before the first sample
    (0, 1, 100, 1500.0),  # at a sample's time
    (0, 2, 150, 1500.0),
    (0, 3, 200, 1650.0),  # two samples at 200: the later record
    (0, 4, 10**12, 1650.0),
    (0, 5, None, INFO_MHZ),  # no time
    (1, 0, 999, INFO_MHZ),
    (1, 1, 1000, 1000.0),
    (1, 2, 1015, 1001.0),
    (1, 3, 5000, 1099.0),
    (1, 4, 1025, 1500.0),  # two samples at 1020: the later record
    (2, 0, 500, INFO_MHZ),
]


def test_frequency_in_force_at_each_record():
    con = empty_raw_tables()
    for device in (0, 1, 2):
        con.execute(
            "insert into devices (device_id, aic_freq_mhz, ai_core_num, pmu_event_ids) "
            "values (?, ?, 8, [8, 10, 9, 11, 12, 13, 84, 85])",
            [device, INFO_MHZ],
        )
    for device, samples in ((0, FEW), (1, MANY)):
        con.executemany(
            "insert into freq_samples (device_id, seq, ts_ns, aic_freq_mhz) values (?, ?, ?, ?)",
            [(device, *s) for s in samples],
        )
    con.executemany(
        "insert into pmu_counters (device_id, seq, record_kind, task_type, stream_id, task_id, "
        "total_cycles, ts_ns) values (?, ?, 'ffts_pmu', 0, 1, 1, 1000, ?)",
        [(device, seq, ts) for device, seq, ts, _ in RECORDS],
    )
    run_layer(con, "staging", only={"stg_pmu_records"})
    got = con.execute(
        "select device_id, seq, ts_ns, time_freq_mhz from stg_pmu_records order by all"
    ).fetchall()
    assert got == sorted((d, s, t, f) for d, s, t, f in RECORDS)
