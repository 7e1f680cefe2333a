"""Step detection (pipeline/analysis/changes.py) on synthetic series whose changes are planted."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.analysis.changes import MIN_SEGMENT, find_steps, noise

SEEDS = range(100)


@pytest.mark.parametrize("n", [20, 60, 365])
def test_a_planted_step_is_found_at_its_night_with_its_size_and_direction(n):
    """A step of 8 noise sigmas planted at a random night: found there, the size within four
    standard errors of the planted one, the direction its sign; nothing else reported. The
    noise measured across the step is, over the seeds, the one planted (sigma 1)."""
    measured = []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        at = int(rng.integers(MIN_SEGMENT, n - MIN_SEGMENT + 1))
        size = 8.0 * (1 if seed % 2 else -1)
        v = 1000 + rng.normal(0, 1, n)
        v[at:] += size
        steps = find_steps(v)
        assert [s.index for s in steps] == [at], (seed, at, steps)
        (s,) = steps
        se = np.sqrt(1 / at + 1 / (n - at))  # of a difference of two means with sigma 1
        assert abs(s.size - size) < 4 * se, (seed, s)
        assert (s.size > 0) == (size > 0)
        assert abs(s.z) > 5
        measured.append(s.noise)
    assert 0.9 < float(np.median(measured)) < 1.15


@pytest.mark.parametrize("n", [30, 60, 365])
def test_pure_noise_has_no_change(n):
    for seed in SEEDS:
        v = 1000 + np.random.default_rng(10_000 + seed).normal(0, 1, n)
        assert find_steps(v) == [], seed


def test_a_few_outlying_nights_are_not_a_step():
    """Three consecutive nights 6 sigmas high in 60: the medians of the segments do not move."""
    for seed in SEEDS:
        v = 1000 + np.random.default_rng(seed).normal(0, 1, 60)
        v[30:33] += 6
        assert find_steps(v) == [], seed


def test_two_steps_both_found_in_order():
    rng = np.random.default_rng(7)
    v = 500 + rng.normal(0, 2, 90)
    v[30:] += 20
    v[60:] -= 30
    steps = find_steps(v)
    assert [s.index for s in steps] == [30, 60]
    assert [s.size > 0 for s in steps] == [True, False]
    assert abs(steps[0].size - 20) < 3 and abs(steps[1].size + 30) < 3


def test_a_slow_drift_is_reported_as_steps_of_its_direction_adding_up_to_it():
    """A linear rise of 20 noise sigmas over 120 nights has no night of its own: it is reported
    as changes that all go up, whose sizes add up to most of the rise."""
    for seed in range(20):
        rng = np.random.default_rng(seed)
        v = 1000 + np.linspace(0, 20, 120) + rng.normal(0, 1, 120)
        steps = find_steps(v)
        assert steps and all(s.size > 0 for s in steps), (seed, steps)
        assert 10 < sum(s.size for s in steps) < 22, (seed, steps)


def test_a_drift_within_the_noise_is_not_reported():
    for seed in SEEDS:
        v = 1000 + np.linspace(0, 1, 60) + np.random.default_rng(seed).normal(0, 1, 60)
        assert find_steps(v) == [], seed


def test_the_noise_is_measured_robustly_across_a_step():
    """The MAD of night-to-night differences ignores the one big difference a step makes; a
    standard deviation of the series would include the step."""
    rng = np.random.default_rng(3)
    v = rng.normal(0, 2, 200)
    v[100:] += 50
    assert 1.6 < noise(v) < 2.4
    assert np.std(v) > 20


def test_a_metric_that_never_moves_or_is_short_has_no_change():
    assert find_steps([5.0] * 40) == []
    assert find_steps([0.0] * 40) == []
    assert find_steps([1.0, 2.0, 100.0, 100.0, 100.0]) == []  # shorter than two segments
    # a constant metric that moves once: found (the noise is the floor, a share of the level)
    v = [100.0] * 20 + [110.0] * 20
    assert [(s.index, s.size) for s in find_steps(v)] == [(20, 10.0)]


def test_only_the_top_ops_and_apis_by_total_time_are_tracked():
    """From measures written by hand: with top_n 2, the two ops of most total time over the
    workload's runs (not the two of highest mean) each give a mean and a total series; an op
    missing from a run is left out of that series; the step time only where there are steps."""
    import pyarrow as pa

    from pipeline.analysis.changes import MEASURES_SCHEMA, tracked

    runs = [{"run_id": f"r{i}", "workload": "w", "collected_at": None} for i in range(3)]
    rows = []
    for i in range(3):
        rows += [
            {"run_id": f"r{i}", "kind": "run", "name": "aicore_time", "total": 10.0 + i, "count": None},
            {"run_id": f"r{i}", "kind": "op", "name": "big", "total": 900.0, "count": 9},  # mean 100
            {"run_id": f"r{i}", "kind": "op", "name": "rare", "total": 500.0, "count": 1},  # mean 500
            {"run_id": f"r{i}", "kind": "api", "name": "launch", "total": 30.0, "count": 3},
        ]
        if i != 1:
            rows.append({"run_id": f"r{i}", "kind": "op", "name": "mid", "total": 800.0, "count": 8})
    measures = pa.Table.from_pylist(rows, schema=MEASURES_SCHEMA)
    got = {
        (s.metric, s.stat): ([r["run_id"] for r in s.runs], s.values)
        for s in tracked(runs, measures, top_n=2)
    }
    assert got == {
        ("run:aicore_time", None): (["r0", "r1", "r2"], [10.0, 11.0, 12.0]),
        ("op:big", "mean"): (["r0", "r1", "r2"], [100.0] * 3),
        ("op:big", "total"): (["r0", "r1", "r2"], [900.0] * 3),
        # mid: 1,600 ns over the runs beats rare's 1,500 (rare has the highest mean); not in r1
        ("op:mid", "mean"): (["r0", "r2"], [100.0] * 2),
        ("op:mid", "total"): (["r0", "r2"], [800.0] * 2),
        ("api:launch", "mean"): (["r0", "r1", "r2"], [10.0] * 3),
        ("api:launch", "total"): (["r0", "r1", "r2"], [30.0] * 3),
    }
