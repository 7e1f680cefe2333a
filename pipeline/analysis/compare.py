"""Compare a run with another run, or with the median of the last N runs of its workload.

Per entry (op, API or task type; see ``pipeline.analysis.run_stats``) it gives the value before
and after, the change, the ratio after / before, and a status: slower / faster / same
(more / fewer for counts), new (only in the run) or vanished (only in the baseline).

With a threshold, an entry is a *regression* when its ratio is at least
1 + threshold / 100 and either value reaches the noise floor ``min_value``; callers
exit non-zero on regressions so that CI and cron can act.

"Same workload" is the ``workload`` key of the ``runs`` view: layout, chip and the
model names the run executed (or, without model records, a hash of its op names).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

from pipeline.analysis.run_stats import DIMENSIONS, Stat, check_dimension, check_stat, entries, stat_unit
from pipeline.analysis.selection import catalog, earlier_runs, run_row
from pipeline.errors import UsageError
from pipeline.warehouse.store import Warehouse

STATUS_ORDER = {"slower": 0, "more": 0, "new": 1, "vanished": 2, "faster": 3, "fewer": 3, "same": 4}


@dataclass
class Change:
    level: str  # acl or runtime for APIs, empty otherwise
    name: str
    before: float | None
    after: float | None
    change: float | None  # after - before
    ratio: float | None  # after / before; None when either is missing or before is 0
    before_count: float | None
    after_count: float | None
    status: str
    regression: bool = False


@dataclass
class Comparison:
    run_id: str
    baseline_run_ids: list[str]
    baseline: str  # what the "before" values are, in words
    workload: str | None
    by: str
    stat: str
    unit: str
    threshold_pct: float | None
    min_value: float
    rows: list[Change] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.rows if c.regression]

    def as_dict(self) -> dict:
        d = asdict(self)
        d["regressions"] = len(self.regressions)
        return d


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def baseline_values(
    runs: dict[str, dict[tuple[str, str], Stat]], stat: str
) -> dict[tuple[str, str], tuple[float | None, float]]:
    """(level, name) -> (median of the statistic, median count) over the runs that have the entry."""
    keys = {k for per_run in runs.values() for k in per_run}
    out = {}
    for k in keys:
        stats = [per_run[k] for per_run in runs.values() if k in per_run]
        values = [v for v in (s.get(stat) for s in stats) if v is not None]
        out[k] = (_median(values) if values else None, _median([s.count for s in stats]))
    return out


def _status(in_before: bool, in_after: bool, before: float | None, after: float | None, stat: str) -> str:
    if not in_before:
        return "new"
    if not in_after:
        return "vanished"
    if after is None or before is None or after == before:
        return "same"
    up = after > before
    if stat == "count":
        return "more" if up else "fewer"
    return "slower" if up else "faster"


def compare(
    wh: Warehouse,
    run_ref: str = "latest",
    against: str | None = None,
    last: int | None = None,
    by: str = "op",
    stat: str = "mean",
    threshold_pct: float | None = None,
    min_value: float = 0.0,
    workload: str | None = None,
    devices: list[int] | None = None,
) -> Comparison:
    """Compare run ``run_ref`` with run ``against``, or with the median of the ``last`` N earlier
    runs of ``workload`` (default: the run's own). Neither given: the previous run of the workload."""
    check_dimension(by)
    check_stat(stat)
    if against is not None and last is not None:
        raise UsageError("give either --against RUN or --last N, not both")
    if threshold_pct is not None and threshold_pct < 0:
        raise UsageError("--threshold is a percentage >= 0")
    rows = catalog(wh)
    run = run_row(wh, run_ref, rows)
    warnings: list[str] = []
    if against is not None:
        base_runs = [run_row(wh, against, rows)]
        if base_runs[0]["run_id"] == run["run_id"]:
            raise UsageError("a run compared with itself: give another run to --against")
        if base_runs[0]["workload"] != run["workload"]:
            warnings.append(f"workloads differ: {base_runs[0]['workload']} (baseline) vs {run['workload']}")
        label = f"run {base_runs[0]['run_id']}"
    else:
        n = 1 if last is None else last
        if n < 1:
            raise UsageError("--last takes a number of runs >= 1")
        key = workload or run["workload"]
        base_runs = earlier_runs(wh, run, key, n, rows)
        if not base_runs:
            raise UsageError(
                f"no run of workload {key} was collected before {run['run_id']}; "
                "give --against RUN or another --workload"
            )
        if len(base_runs) < n:
            warnings.append(f"only {len(base_runs)} earlier run(s) of the workload, not {n}")
        ids = [r["run_id"] for r in base_runs]
        label = (
            f"run {ids[0]}"
            if len(ids) == 1
            else f"median of the {len(ids)} runs before it ({ids[0]} .. {ids[-1]})"
        )
    base_ids = [r["run_id"] for r in base_runs]
    per_run = entries(wh, base_ids + [run["run_id"]], by, devices)
    after = per_run.pop(run["run_id"])
    before = baseline_values(per_run, stat)
    cmp = Comparison(
        run["run_id"],
        base_ids,
        label,
        run["workload"],
        by,
        stat,
        stat_unit(stat),
        threshold_pct,
        min_value,
        warnings=warnings,
    )
    for key in sorted(set(before) | set(after)):
        b, b_count = before.get(key, (None, None))
        a_stat = after.get(key)
        a = a_stat.get(stat) if a_stat else None
        change = a - b if a is not None and b is not None else None
        ratio = a / b if a is not None and b else None
        status = _status(key in before, key in after, b, a, stat)
        regression = (
            threshold_pct is not None
            and ratio is not None
            and ratio >= 1 + threshold_pct / 100
            and max(a, b) >= min_value
        )
        cmp.rows.append(
            Change(
                key[0],
                key[1],
                b,
                a,
                change,
                ratio,
                b_count,
                float(a_stat.count) if a_stat else None,
                status,
                regression,
            )
        )
    cmp.rows.sort(key=lambda c: (not c.regression, STATUS_ORDER[c.status], -(c.ratio or 0), c.level, c.name))
    return cmp


__all__ = ["DIMENSIONS", "Change", "Comparison", "compare"]
