"""bench/run.py's verdict on the speed-and-memory targets, on hand-made measurements."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "bench_run", Path(__file__).resolve().parents[2] / "bench" / "run.py"
)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def _r(mb: float, mb_s: float, peak_mb: float, totals: list[float], peaks: list[float] | None = None) -> dict:
    return {
        "raw_bytes": mb * 1e6,
        "raw_mb_s": mb_s,
        "peak_rss": peak_mb * 1e6,
        "total_s": sorted(totals)[len(totals) // 2],
        "total_s_all": totals,
        "peak_rss_all": [p * 1e6 for p in (peaks or [peak_mb])],
    }


def test_every_target_met():
    lines = bench.targets(
        "hiprof", [_r(2000, 110, 640, [18, 18.2, 18.5]), _r(500, 105, 600, [4.6, 4.7, 4.8])]
    )
    assert [line.split()[0] for line in lines] == ["met"] * 4
    assert "slowest 105 MB/s at 500 MB" in lines[0] and "x1.07 (worst pairing x1.07)" in lines[2]


def test_each_target_missed_is_named_with_its_value():
    # fixed-size records need 100 MB/s; 1.2 GB peak; 1.2 GB / 0.8 GB = 1.5x; 20 s / 4 s = 5x > 4.5x
    lines = bench.targets("ascend910b", [_r(500, 125, 800, [4.0]), _r(2000, 99, 1200, [20.0])])
    assert [line.split()[0] for line in lines] == ["NOT"] * 4
    assert "slowest 99 MB/s at 2000 MB" in lines[0]
    assert "1200 MB" in lines[1] and "x1.50" in lines[2] and "x5.00" in lines[3]


def test_the_worst_pairing_is_reported_beside_the_median():
    lines = bench.targets(
        "hiprof",
        [
            _r(500, 100, 600, [4.0, 4.1, 4.4], [590, 600, 610]),
            _r(2000, 100, 630, [16.0, 16.5, 19.0], [620, 630, 660]),
        ],
    )
    assert "x4.02 (worst pairing x4.75)" in lines[3]  # 16.5 / 4.1 by the medians, 19.0 / 4.0 at worst
    assert "worst pairing x1.12" in lines[2]  # 660 / 590


def test_the_peak_step_is_the_first_to_reach_the_last_high_water_mark():
    marks = {"staging/a": 300e6, "staging/b": 650e6, "marts/c": 650e6, "marts/d": 650e6}
    assert bench.peak_step({"build_max_rss_by_step": marks}) == "staging/b (650 MB)"
    assert bench.peak_step({"build_max_rss_by_step": {}}) == "not reported"


def test_a_size_the_disk_cannot_hold_is_refused_before_its_dump_is_made(tmp_path, monkeypatch):
    monkeypatch.setattr(bench.shutil, "disk_usage", lambda _: type("Usage", (), {"free": 20e9})())
    assert bench.check_disk(tmp_path, 2000, dump_exists=False) is None  # 3 GB needed, 20 free
    why = bench.check_disk(tmp_path, 16000, dump_exists=False)  # 24 GB needed
    assert why and "24.0 GB" in why and "20.0 GB" in why
    assert (
        bench.check_disk(tmp_path, 16000, dump_exists=True) is None
    )  # only 8 GB more once the dump is there


@pytest.mark.slow
def test_one_measurement_of_run_and_of_separate_commands(tmp_path):
    """bench_one times `profetl run` (one process) or `ingest` + `build` (two); both count the
    same records, split the time into the phases profetl timed and the rest, and sample memory."""
    from pipeline.synth.hiprof import HiprofConfig, generate

    truth = generate(tmp_path / "d", HiprofConfig(inferences=2))
    one = bench.bench_one(tmp_path / "d", tmp_path / "wh1", "320MB", 0)
    two = bench.bench_one(tmp_path / "d", tmp_path / "wh2", "320MB", 0, separate=True)
    assert (one["processes"], two["processes"]) == (1, 2)
    assert one["records"] == two["records"] >= len(truth.api_calls) + len(truth.states) + len(truth.pmu) > 0
    for r in (one, two):
        assert r["ingest_s"] > 0 and r["build_s"] > 0 and r["other_s"] > 0
        assert abs(r["ingest_s"] + r["build_s"] + r["other_s"] - r["total_s"]) < 1e-9
        assert len(r["peak_rss_by_process"]) == r["processes"] and r["peak_rss"] > 50e6
        assert "staging/stg_task_ops" in r["build_seconds_by_step"] and 0 <= r["steal"] < 1


def test_steal_is_the_share_of_ticks_given_to_other_machines():
    # (steal, total) ticks: 30 of 200 ticks stolen between the two readings
    assert bench.steal_share((100, 10_000), (130, 10_200)) == 0.15
    assert bench.steal_share((5, 50), (5, 50)) == 0.0  # no ticks passed (or no /proc/stat)
    steal, total = bench.cpu_ticks()
    assert 0 <= steal <= total


def test_host_speed_times_both_reference_workloads():
    h = bench.host_speed(repeat=1)
    assert set(h) == {"numpy_sort_s", "duckdb_query_s"} and all(0 < v < 60 for v in h.values())
    line = bench.speed_line("before", {"numpy_sort_s": 0.0312, "duckdb_query_s": 0.2049})
    assert "0.031 s" in line and "0.205 s" in line and line.startswith("host speed before")


def test_the_marginal_rate_leaves_out_what_every_run_pays():
    # 500 MB in 6 s and 2000 MB in 21 s: the 1500 MB added took 15 s, 100 MB/s, though neither
    # run reaches 100 MB/s as a whole (83 and 95 MB/s): 1 s of each is paid whatever the size
    assert bench.marginal_mb_s(_r(500, 83, 600, [6.0]), _r(2000, 95, 640, [21.0])) == 100.0
    # sizes too close to tell apart: no rate, and no division by zero at the end of a long bench
    assert bench.marginal_mb_s(_r(500, 83, 600, [6.0]), _r(510, 85, 600, [6.0])) == float("inf")


def test_the_marginal_rate_is_printed_only_when_there_is_one():
    assert bench.added_rate(100.0) == "the added bytes at 100 MB/s"
    assert "inf" not in bench.added_rate(float("inf"))
