"""One metric over the runs of the warehouse, oldest collection first.

A metric is written ``KIND:NAME``:

* ``op:<op name>``, ``api:<API name>``, ``task_type:<type>`` - an entry of
  ``pipeline.analysis.run_stats``, with a statistic (mean, total or count)
* ``run:<metric>`` - a run-level metric of ``pipeline.analysis.run_stats.RUN_METRICS``

A run without the entry gets no value (None), so a gap shows where an op vanished.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime

from pipeline.analysis.run_stats import DIMENSIONS, RUN_METRICS, check_stat, entries, run_metric, stat_unit
from pipeline.analysis.selection import RunSelection, select_runs
from pipeline.errors import UsageError
from pipeline.warehouse.store import Warehouse


@dataclass
class Point:
    run_id: str
    collected_at: datetime | None
    workload: str | None
    value: float | None
    count: int | None = None  # instances or calls behind the value (entries only)


@dataclass
class Trend:
    metric: str
    stat: str | None
    unit: str
    meaning: str
    points: list[Point] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        stat = f" {self.stat}" if self.stat else ""
        unit = f" ({self.unit})" if self.unit else ""
        return f"{self.metric}{stat}{unit}"

    def as_dict(self) -> dict:
        return asdict(self)


def parse_metric(metric: str) -> tuple[str, str]:
    kind, sep, name = metric.partition(":")
    kinds = list(DIMENSIONS) + ["run"]
    if not sep or not name or kind not in kinds:
        raise UsageError(
            f"metric {metric!r}: write KIND:NAME with KIND one of {', '.join(kinds)} "
            f"(e.g. op:conv2d_0, api:rtKernelLaunch, run:aicore_time)"
        )
    return kind, name


def _mixed(t: Trend) -> Trend:
    workloads = sorted({p.workload or "" for p in t.points if p.value is not None})
    if len(workloads) > 1:
        t.warnings.append(
            f"the values come from {len(workloads)} workloads ({', '.join(workloads)}); "
            "--workload KEY keeps one"
        )
    return t


def trend(
    wh: Warehouse,
    metric: str,
    stat: str = "mean",
    sel: RunSelection | None = None,
    devices: list[int] | None = None,
) -> Trend:
    """The metric's value in every selected run (default: every run), oldest collection first.
    A warning says when the values come from runs of more than one workload."""
    kind, name = parse_metric(metric)
    runs = select_runs(wh, sel or RunSelection(), default_latest=False)
    ids = [r["run_id"] for r in runs]
    if kind == "run":
        values = run_metric(wh, ids, name, devices)
        _, unit, meaning = RUN_METRICS[name]
        t = Trend(metric, None, unit, meaning)
        t.points = [Point(r["run_id"], r["collected_at"], r["workload"], values[r["run_id"]]) for r in runs]
        return _mixed(t)
    check_stat(stat)
    per_run = entries(wh, ids, kind, devices)
    t = Trend(metric, stat, stat_unit(stat), f"{stat} of {kind} {name}")
    for r in runs:
        found = [s for (level, n), s in per_run[r["run_id"]].items() if n == name]
        if not found:
            t.points.append(Point(r["run_id"], r["collected_at"], r["workload"], None))
            continue
        total, count = sum(s.total for s in found), sum(s.count for s in found)
        value = {"mean": total / count if count else None, "total": total, "count": float(count)}[stat]
        t.points.append(Point(r["run_id"], r["collected_at"], r["workload"], value, count))
    if all(p.value is None for p in t.points):
        raise UsageError(f"no selected run has {kind} {name!r} (see `profetl compare --by {kind}` for names)")
    return _mixed(t)
