"""Where the level of a metric changed over the nights of a workload (step detection).

For each workload and each tracked metric (``tracked``) the runs of the workload are one
series, oldest collection first (a run without the metric is left out of that series). The
series is cut where its level changed by **binary segmentation** with an L2 (mean-shift)
cost (Scott & Knott 1974; Vostrikova 1981; as ``ruptures.Binseg(model="l2")`` does it): the
cut that lowers the sum of squared deviations from the segments' means the most is kept when
it lowers it by more than a penalty, and each side is cut again, until no cut pays. The
penalty is the BIC-like ``PENALTY * sigma^2 * log(n)``, scaled by the measured noise:

* **noise** ``sigma``: the night-to-night noise of the metric, measured robustly from the
  differences between consecutive runs: their root mean square once the largest ``TRIM``
  (10 %) of them are left out, rescaled to a normal's standard deviation, over sqrt(2) (a
  difference holds two nights' noise). A step adds one large difference among many small
  ones, which the trim leaves out, while a standard deviation of the whole series would
  include the step itself. (A median absolute deviation of the differences is as robust but
  varies twice as much from series to series at 20-60 nights: more false steps.) A metric that does
  not move at all (sigma 0) gets a floor of ``NOISE_FLOOR`` of its level.
* a change is reported with its **size** (mean of the segment after minus the segment
  before, in the metric's unit, and relative to the level before), its **direction** (up:
  the time grew, a regression for every tracked metric, which are all times; down: faster)
  and **how sure** it is: ``z`` = size / (sigma * sqrt(1/n_before + 1/n_after)), the size in
  standard errors of a difference of two means given the measured noise, and ``noise_sigmas``
  = size / sigma, the size in nights' noise. A change found by the search is reported only
  when |z| >= ``MIN_Z``, |size| >= ``MIN_NOISE_SIGMAS`` nights' noise, and the medians of
  the two segments differ in the same direction by as much (a few outlying nights move a mean,
  not a median: the check that keeps heavy-tailed noise from being reported as steps).
* a segment is at least ``MIN_SEGMENT`` runs long, so one odd night is not a level.
* a **slow drift** has no single night: the search approximates it by a staircase of steps
  in the same direction, each reported where it pays for itself against the noise (so a drift
  that moves the level by several nights' noise is found, as one or more changes of one
  direction, whose sizes add up to the drift; a drift within the noise is not).

Which metrics (``tracked``): the run's total AI Core time (run_stats ``aicore_time``), the
mean and total time of each of the workload's top ``TOP_N`` ops and top ``TOP_N`` APIs (by
their total time summed over the window, so a workload with thousands of distinct ops costs
the same), and the mean iteration time of training runs (``Iteration Time`` of the step
trace, where step_trace_summary has rows).

The result is a pyarrow table (``CHANGES_SCHEMA``, one row per change) that the site writes as
``changes.parquet``: any SQL engine reads it (``SELECT * FROM 'site/changes.parquet'``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pyarrow as pa

from pipeline.analysis.run_stats import entries, run_metric
from pipeline.warehouse.store import Warehouse

PENALTY = 8.0  # the penalty per cut is PENALTY * sigma^2 * log(n) (docs/site.md)
MIN_SEGMENT = 3  # runs on each side of a cut
MIN_Z = 5.0  # standard errors of the difference of the two segments' means
MIN_NOISE_SIGMAS = 1.5  # the size of a reported change (of the means and of the medians), in nights' noise
NOISE_FLOOR = 1e-4  # sigma at least this share of the median level (a metric that never moves)
MIN_RUNS = 2 * MIN_SEGMENT  # a series shorter than this has no changes
TOP_N = 10  # ops and APIs tracked per workload (by total time)
TRIM = 0.1  # the share of the largest night-to-night differences the noise leaves out
# E[Z^2 | |Z| < q] for a standard normal Z and q its two-sided 1 - TRIM quantile (1.6449):
# 1 - 2 q phi(q) / (1 - TRIM); the trimmed mean square of N(0, s^2) differences is this times s^2
TRIMMED_VARIANCE = 0.6230

CHANGES_SCHEMA = pa.schema(
    [
        pa.field("workload", pa.string()),
        pa.field("metric", pa.string()),  # KIND:NAME as `trend` writes it (run:aicore_time, op:conv, ...)
        pa.field("stat", pa.string()),  # mean or total (NULL for a run metric)
        pa.field("unit", pa.string()),
        pa.field("night", pa.date32()),  # UTC date of the first run at the new level
        pa.field("run_id", pa.string()),  # the first run at the new level
        pa.field("previous_run_id", pa.string()),  # the last run at the old level
        pa.field("collected_at", pa.timestamp("us", tz="UTC")),  # of run_id
        pa.field("direction", pa.string()),  # up (slower) or down (faster)
        pa.field("before", pa.float64()),  # mean of the segment before, in unit
        pa.field("after", pa.float64()),  # mean of the segment after, in unit
        pa.field("size", pa.float64()),  # after - before, in unit
        pa.field("relative", pa.float64()),  # size / before
        pa.field("noise", pa.float64()),  # sigma: night-to-night noise of the metric, in unit
        pa.field("noise_sigmas", pa.float64()),  # size / noise
        pa.field("z", pa.float64()),  # size / (noise * sqrt(1/runs_before + 1/runs_after))
        pa.field("runs_before", pa.int64()),
        pa.field("runs_after", pa.int64()),
    ]
)


@dataclass(frozen=True)
class Step:
    """One change of level at ``index`` (the first point of the new level) of a series."""

    index: int
    before: float
    after: float
    n_before: int
    n_after: int
    noise: float

    @property
    def size(self) -> float:
        return self.after - self.before

    @property
    def z(self) -> float:
        return self.size / (self.noise * math.sqrt(1 / self.n_before + 1 / self.n_after))

    @property
    def noise_sigmas(self) -> float:
        return self.size / self.noise


def noise(values: np.ndarray) -> float:
    """The night-to-night noise (a standard deviation) of a series, from the differences of
    consecutive points: their root mean square after the largest TRIM of them are left out
    (centred on their median, rescaled to a normal's scale by TRIMMED_VARIANCE), over sqrt(2);
    at least NOISE_FLOOR of the series' level."""
    v = np.asarray(values, dtype=float)
    floor = NOISE_FLOOR * abs(float(np.median(v))) if len(v) else 0.0
    if len(v) < 3:
        return floor or 1.0
    d = np.diff(v)
    a = np.sort(np.abs(d - np.median(d)))[: max(1, int((1 - TRIM) * len(d)))]
    sigma = math.sqrt(float(np.mean(a * a)) / TRIMMED_VARIANCE) / math.sqrt(2)
    return max(sigma, floor) or 1.0  # an all-zero series: any unit


def _best_cut(cs: np.ndarray, lo: int, hi: int, min_size: int) -> tuple[int, float]:
    """The cut k of [lo, hi) (lo + min_size <= k <= hi - min_size) that lowers the L2 cost the
    most, and by how much (cs: cumulative sums of the values, with a 0 first)."""
    n = hi - lo
    ks = np.arange(lo + min_size, hi - min_size + 1)
    if not len(ks):
        return -1, 0.0
    total = cs[hi] - cs[lo]
    left = cs[ks] - cs[lo]
    nl = ks - lo
    nr = n - nl
    # cost(whole) - cost(left) - cost(right) = nl * nr / n * (mean_left - mean_right)^2
    gain = (left / nl - (total - left) / nr) ** 2 * nl * nr / n
    i = int(np.argmax(gain))
    return int(ks[i]), float(gain[i])


def find_steps(values: Iterable[float], sigma: float | None = None) -> list[Step]:
    """The changes of level of one series, in order (binary segmentation, L2 cost, penalty
    PENALTY * sigma^2 * log(n); each reported change passes MIN_Z and MIN_NOISE_SIGMAS, by
    its means and by its medians). ``sigma``: the noise, measured (``noise``) when not given."""
    v = np.asarray(list(values), dtype=float)
    n = len(v)
    if n < MIN_RUNS:
        return []
    s = noise(v) if sigma is None else sigma
    penalty = PENALTY * s * s * math.log(n)
    cs = np.concatenate([[0.0], np.cumsum(v)])
    cuts: list[int] = []
    todo = [(0, n)]
    while todo:
        lo, hi = todo.pop()
        k, gain = _best_cut(cs, lo, hi, MIN_SEGMENT)
        if k < 0 or gain <= penalty:
            continue
        cuts.append(k)
        todo += [(lo, k), (k, hi)]
    cuts.sort()
    bounds = [0] + cuts + [n]
    steps = []
    for i, k in enumerate(cuts):
        a, b = bounds[i], bounds[i + 2]
        st = Step(k, float(v[a:k].mean()), float(v[k:b].mean()), k - a, b - k, s)
        medians = float(np.median(v[k:b]) - np.median(v[a:k]))
        if (
            abs(st.z) >= MIN_Z
            and abs(st.noise_sigmas) >= MIN_NOISE_SIGMAS
            and abs(medians) >= MIN_NOISE_SIGMAS * s
            and (medians > 0) == (st.size > 0)
        ):
            steps.append(st)
    return steps


MEASURES_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string()),
        pa.field("kind", pa.string()),  # run, op, api or iteration
        pa.field("name", pa.string()),  # the run metric, op, API or iteration part
        pa.field("total", pa.float64()),  # a run metric's value; an entry's total time (ns)
        pa.field("count", pa.int64()),  # an entry's instances, calls or iterations (NULL for a run metric)
    ]
)


def measure(wh: Warehouse, run_ids: list[str]) -> pa.Table:
    """What the tracked series are made of, for ``run_ids``: each run's total AI Core time and
    each of its ops', APIs' and iteration parts' total and count (summed over devices and over
    an entry's levels, as ``trend`` sums them). One row per run and entry (MEASURES_SCHEMA)."""
    rows: list[dict] = []
    if not run_ids:
        return MEASURES_SCHEMA.empty_table()
    for run_id, value in run_metric(wh, run_ids, "aicore_time").items():
        if value is not None:
            rows.append(
                {"run_id": run_id, "kind": "run", "name": "aicore_time", "total": value, "count": None}
            )
    for by in ("op", "api", "iteration"):
        for run_id, stats in entries(wh, run_ids, by).items():
            summed: dict[str, list] = {}
            for (_, name), st in stats.items():
                t = summed.setdefault(name, [0.0, 0])
                t[0] += st.total
                t[1] += st.count
            for name, (total, count) in summed.items():
                rows.append({"run_id": run_id, "kind": by, "name": name, "total": total, "count": count})
    return pa.Table.from_pylist(rows, schema=MEASURES_SCHEMA)


@dataclass
class Series:
    workload: str
    metric: str  # KIND:NAME
    stat: str | None  # mean or total; None for a run metric
    unit: str
    runs: list[dict]  # the runs that have a value, oldest first
    values: list[float]


def tracked(runs: list[dict], measures: pa.Table, top_n: int = TOP_N) -> list[Series]:
    """Every tracked series of every workload of ``runs`` (catalog rows, oldest first), from
    their ``measures`` (``measure``)."""
    by_run: dict[str, dict[tuple[str, str], tuple[float, int | None]]] = {}
    for m in measures.to_pylist():
        by_run.setdefault(m["run_id"], {})[(m["kind"], m["name"])] = (m["total"], m["count"])
    workloads: dict[str, list[dict]] = {}
    for r in runs:
        workloads.setdefault(r.get("workload") or "", []).append(r)
    out: list[Series] = []
    for workload, mine in workloads.items():
        wanted: list[tuple[str, str, str | None, str]] = [("run", "aicore_time", None, "us")]
        for kind in ("op", "api"):
            totals: dict[str, float] = {}
            for r in mine:
                for (k, name), (total, _) in by_run.get(r["run_id"], {}).items():
                    if k == kind:
                        totals[name] = totals.get(name, 0.0) + total
            for name in sorted(totals, key=lambda x: (-totals[x], x))[:top_n]:
                wanted += [(kind, name, "mean", "ns"), (kind, name, "total", "ns")]
        wanted.append(("iteration", "Iteration Time", "mean", "ns"))
        for kind, name, stat, unit in wanted:
            pts = []
            for r in mine:
                got = by_run.get(r["run_id"], {}).get((kind, name))
                if got is None:
                    continue
                total, count = got
                value = total if stat != "mean" else (total / count if count else None)
                if value is not None:
                    pts.append((r, float(value)))
            if pts:
                metric = f"{kind}:{name}"
                out.append(Series(workload, metric, stat, unit, [r for r, _ in pts], [x for _, x in pts]))
    return out


def changes(series: list[Series]) -> pa.Table:
    """Every change found in each of ``series`` (``tracked``), newest first (CHANGES_SCHEMA)."""
    rows = []
    for s in series:
        for st in find_steps(s.values):
            run, prev = s.runs[st.index], s.runs[st.index - 1]
            when = run.get("collected_at")
            rows.append(
                {
                    "workload": s.workload,
                    "metric": s.metric,
                    "stat": s.stat,
                    "unit": s.unit,
                    "night": when.date() if isinstance(when, datetime) else None,
                    "run_id": run["run_id"],
                    "previous_run_id": prev["run_id"],
                    "collected_at": when,
                    "direction": "up" if st.size > 0 else "down",
                    "before": st.before,
                    "after": st.after,
                    "size": st.size,
                    "relative": st.size / st.before if st.before else None,
                    "noise": st.noise,
                    "noise_sigmas": st.noise_sigmas,
                    "z": st.z,
                    "runs_before": st.n_before,
                    "runs_after": st.n_after,
                }
            )
    # newest first; the changes that began at one run together, the clearest (largest |z|) first
    rows.sort(key=lambda r: (r["metric"], r["stat"] or ""))
    rows.sort(key=lambda r: -abs(r["z"]))
    rows.sort(key=lambda r: (r["collected_at"] is not None, r["collected_at"], r["workload"]), reverse=True)
    return pa.Table.from_pylist(rows, schema=CHANGES_SCHEMA)
