"""step_trace_summary and step_trace_reduces of the real MindSpore 0.5 training dump JOB3.

Its ``data/training_trace...slice_0`` holds 8,372 records of 20 bytes (tag u64 @0, task u16 @8,
stream u16 @10, syscnt u64 @12; 100 MHz and no dev_start.log, so ns = 10 * syscnt): 322 steps of
26 records each: the job id 10010 (a step start) first, 255 (step end) last, and once each
between them 1 (FP), 2 (BP) and 22 all-reduce points (tags 3-24, two per stream: the odd tag
starts, the next even tag ends). The last record is a step end, so no iteration is left open.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.real.job3 import JOB3

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

TRACE = "data/training_trace.46.dev.profiler_default_tag.1.slice_0"


def test_job3_first_iterations_worked_out_by_hand(job3):
    _, rows = job3
    steps = rows("step_trace_summary")
    assert len(steps) == 322 == len(rows("step_trace")) // 26
    # record 0:  1a 27 00 00 00 00 00 00 | 91 75 | 07 02 | f2 6d 17 33 0a 00 00 00  job id 10010, syscnt 43,806,846,450
    # record 1:  01 00 .. | 92 75 | 07 02 | f3 7d 17 33 0a 00 00 00  FP, syscnt 43,806,850,547
    # record 22: 02 00 .. | eb 7d | 1b 02 | b6 2d 3f 34 0a 00 00 00  BP, syscnt 43,826,228,662
    # record 25: ff 00 .. | c2 7e | 1d 02 | 61 41 c9 34 0a 00 00 00  end, syscnt 43,835,277,665
    first = steps[0]
    assert (first["device_id"], first["model_id"], first["iteration_id"], first["iter_id"]) == (
        1,
        10010,
        1,
        1,
    )
    assert first["iteration_start_ns"] == 438_068_464_500
    assert first["fp_start_ns"] == 438_068_505_470
    assert first["bp_end_ns"] == 438_262_286_620
    assert first["iteration_end_ns"] == 438_352_776_650
    assert first["iteration_ns"] == 284_312_150  # 43,835,277,665 - 43,806,846,450 = 28,431,215 ticks
    assert first["fp_to_bp_ns"] == 193_781_150  # 43,826,228,662 - 43,806,850,547 = 19,378,115 ticks
    assert first["iteration_refresh_ns"] == 90_490_030  # 43,835,277,665 - 43,826,228,662 = 9,049,003 ticks
    assert first["data_aug_bound_ns"] is None  # no iteration before it
    assert first["reduce_count"] == 11
    # record 26: 1a 27 .. | 8e 84 c9 34 0a 00 00 00  start, syscnt 43,835,294,862
    # record 27: 01 00 .. | ba 93 c9 34 0a 00 00 00  FP, syscnt 43,835,298,746
    # record 48: 02 00 .. | 88 a0 7d 35 0a 00 00 00  BP, syscnt 43,847,098,504
    # record 51: ff 00 .. | 87 1a 03 36 0a 00 00 00  end, syscnt 43,855,846,023
    second = steps[1]
    assert second["iteration_id"] == 2
    assert second["iteration_ns"] == 205_511_610  # 20,551,161 ticks
    assert second["fp_to_bp_ns"] == 117_997_580  # 11,799,758 ticks
    assert second["iteration_refresh_ns"] == 87_475_190  # 8,747,519 ticks
    assert second["data_aug_bound_ns"] == 210_810  # FP 43,835,298,746 - iteration 1's end 43,835,277,665


def test_job3_first_all_reduce_ranges_worked_out_by_hand(job3):
    _, rows = job3
    first = [r for r in rows("step_trace_reduces") if r["iteration_id"] == 1]
    assert len(first) == 11
    # record 2: 03 00 .. | a0 75 | 08 02 | 38 77 19 33 0a 00 00 00  tag 3, stream 520, syscnt 43,806,979,896
    # record 5: 04 00 .. | 46 76 | 08 02 | 8e 71 91 33 0a 00 00 00  tag 4, stream 520, syscnt 43,814,842,766
    # record 3: 05 00 .. | 4b 76 | 0a 02 | 0c bb 19 33 0a 00 00 00  tag 5, stream 522, syscnt 43,806,997,260
    # record 4: 06 00 .. | f1 76 | 0a 02 | 54 26 91 33 0a 00 00 00  tag 6, stream 522, syscnt 43,814,823,508
    a, b = first[0], first[1]
    assert (a["reduce_index"], a["stream_id"], a["reduce_start_ns"], a["reduce_end_ns"], a["reduce_ns"]) == (
        1,
        520,
        438_069_798_960,
        438_148_427_660,
        78_628_700,
    )
    assert (b["reduce_index"], b["stream_id"], b["reduce_start_ns"], b["reduce_end_ns"], b["reduce_ns"]) == (
        2,
        522,
        438_069_972_600,
        438_148_235_080,
        78_262_480,
    )


def test_job3_every_iteration_matches_its_records(real_data, job3):
    """All 322 iterations and 3,542 ranges against the file decoded here with numpy, by the
    26-record layout of a step (not by the build's rule)."""
    _, rows = job3
    r = np.fromfile(
        real_data / JOB3 / TRACE,
        np.dtype([("tag", "<u8"), ("task", "<u2"), ("stream", "<u2"), ("sys", "<u8")]),
    )
    steps = r.reshape(-1, 26)
    ns = steps["sys"].astype(np.int64) * 10
    tags = steps["tag"]
    assert (tags[:, 0] == 10010).all() and (tags[:, -1] == 255).all()
    assert (np.sort(tags, axis=1) == sorted([10010, 255, *range(1, 25)])).all()  # each tag once per step

    def at(tag):
        return ns[np.arange(len(ns)), np.argmax(tags == tag, axis=1)]

    start, fp, bp, end = at(10010), at(1), at(2), at(255)
    got = rows("step_trace_summary")
    assert [g["iteration_id"] for g in got] == list(range(1, 323))
    assert [g["iteration_ns"] for g in got] == list(end - start)
    assert [g["fp_to_bp_ns"] for g in got] == list(bp - fp)
    assert [g["iteration_refresh_ns"] for g in got] == list(end - bp)
    assert [g["data_aug_bound_ns"] for g in got] == [None] + list(fp[1:] - end[:-1])
    # all-reduce: per step and stream, the first point starts and the second ends
    expected = []
    for k in range(len(steps)):
        by_stream = {}
        for tag, stream, t in zip(steps["tag"][k], steps["stream"][k], ns[k]):
            if 3 <= tag <= 24:
                by_stream.setdefault(int(stream), []).append(int(t))
        assert all(len(v) == 2 for v in by_stream.values())
        ranges = sorted((v[0], s, v[1]) for s, v in by_stream.items())
        expected += [(k + 1, i + 1, s, a, b - a) for i, (a, s, b) in enumerate(ranges)]
    got = [
        (g["iteration_id"], g["reduce_index"], g["stream_id"], g["reduce_start_ns"], g["reduce_ns"])
        for g in rows("step_trace_reduces")
    ]
    assert got == expected and len(got) == 3_542
    assert not [
        i for i in rows("build_issues") if i["kind"] in ("open_last_iteration", "all_reduce_without_end")
    ]
