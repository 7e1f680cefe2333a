"""api_statistic's Variance: the population variance of each API's durations in us^2, the same
bits whatever order the calls arrive in (a rebuilt run, or one read by more threads, must not
change its numbers). Expected values are worked out exactly with fractions from the durations
the tests write, not from the SQL.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pyarrow as pa
import pytest

from pipeline.jobs.transforms import run_layer, sql_files
from tests.helpers.empty_raw import empty_raw_tables

BIG = 2**41  # a duration beyond the exact integer path (about 36 minutes)


def _variance_us2(durations_ns: list[int]) -> Fraction:
    n = len(durations_ns)
    mean = Fraction(sum(durations_ns), n)
    return sum((Fraction(d) - mean) ** 2 for d in durations_ns) / n / 10**6


def _api_statistic(calls: list[tuple[str, int]]) -> dict[str, tuple]:
    """api_statistic of (api_name, dur_ns) runtime calls written in this order."""
    con = empty_raw_tables()
    rows = pa.table(
        {  # noqa: F841 - read by the insert below, by name
            "seq": pa.array(range(len(calls)), pa.int64()),
            "api_name": [name for name, _ in calls],
            "start_ns": pa.array([1000 * i for i in range(len(calls))], pa.int64()),
            "end_ns": pa.array([1000 * i + dur for i, (_, dur) in enumerate(calls)], pa.int64()),
        }
    )
    con.execute(
        "insert into api_calls (device_id, source_file, seq, level, api_name, tid, start_ns, end_ns) "
        "select 0, 'f', seq, 'runtime', api_name, 1, start_ns, end_ns from rows"
    )
    run_layer(con, "staging", only={"stg_api_calls", "stg_api_totals"})
    mart = next(f for f in sql_files("marts") if f.name == "api_statistic")
    rows = con.execute(f"select api_name, count, time_ns, variance_us2 from ({mart.text})").fetchall()
    return {name: (count, time_ns, var) for name, count, time_ns, var in rows}


GROUPS = {
    "rtKernelLaunch": [63330, 72790, 70000, 71770],
    "rtMalloc": [2000],  # one call: 0
    "rtStreamSynchronize": [10**12, 10**12 + 1, 10**12 + 2],  # large mean, variance 2/3 ns^2
    "rtMemcpy": [5, -3, 0, 7],  # a clock step can make a duration negative
}


def test_variance_is_the_exact_population_variance_in_us2():
    calls = [(name, d) for name, ds in GROUPS.items() for d in ds]
    got = _api_statistic(calls)
    for name, ds in GROUPS.items():
        count, time_ns, var = got[name]
        assert (count, time_ns) == (len(ds), sum(ds))
        want = _variance_us2(ds)
        assert var == pytest.approx(float(want), rel=1e-12, abs=0), name
    assert got["rtMalloc"][2] == 0.0
    assert got["rtStreamSynchronize"][2] == pytest.approx(2 / 3 / 10**6, rel=1e-12)


def test_variance_does_not_depend_on_the_order_of_the_calls():
    rng = random.Random(3)
    calls = [(f"api{i % 5}", rng.randrange(1, 10**9)) for i in range(40_000)]
    first = _api_statistic(calls)
    shuffled = calls[:]
    rng.shuffle(shuffled)
    again = _api_statistic(shuffled)
    assert again == first  # every bit
    for name in first:
        ds = [d for n, d in calls if n == name]
        assert first[name][2] == pytest.approx(float(_variance_us2(ds)), rel=1e-12)


def test_durations_beyond_the_exact_path_still_get_a_variance():
    # beyond +-2^40 ns (or 2^23 calls of one API) the squares could overflow 128-bit integers:
    # the floating-point variance is taken instead, and nothing fails
    ds = [BIG, 3, BIG * 3, 2**62]
    got = _api_statistic([("rtHuge", d) for d in ds] + [("rtNeg", -(2**62)), ("rtNeg", 5)])
    assert got["rtHuge"][2] == pytest.approx(float(_variance_us2(ds)), rel=1e-9)
    assert got["rtNeg"][2] == pytest.approx(float(_variance_us2([-(2**62), 5])), rel=1e-9)
