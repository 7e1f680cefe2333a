"""Per-run numbers that `compare` and `trend` put side by side, read from the marts.

An *entry* is one op, one API, one task type or one part of a step-trace iteration of a
model (Iteration Time, FP to BP Time, Iteration Refresh, Data Aug Bound, Reduce Duration)
of a run, summed over the run's devices (or the devices asked for). Its statistics:

* total  - time of all its instances, calls, iterations or all-reduce ranges, ns
* count  - instances (tasks), calls (APIs), iterations that have the part, or ranges
* mean   - total / count, ns: robust to runs with different numbers of inferences

Tasks are timed by their running time (COMPLETE - RUNNING), as Time(ns) of the Task
Scheduler table; APIs by exit - entry. A run-level metric is one number per run.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.errors import UsageError
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import read_consistent

# dimension -> SQL giving run_id, level, name, total (ns), count; {where} filters devices
DIMENSIONS = {
    "op": """
        SELECT run_id, '' AS level, op_name AS name, sum(running_ns)::DOUBLE AS total, sum(task_count) AS count
        FROM task_scheduler WHERE op_name IS NOT NULL {and_devices} GROUP BY ALL""",
    "api": """
        SELECT run_id, 'runtime' AS level, api_name AS name, sum(time_ns)::DOUBLE AS total, sum(calls) AS count
        FROM runtime_api_summary WHERE true {and_devices} GROUP BY ALL
        UNION ALL
        SELECT run_id, 'acl' AS level, api_name AS name, sum(dur_us) * 1000.0 AS total, count(*) AS count
        FROM acl_api WHERE true {and_devices} GROUP BY ALL""",
    "task_type": """
        SELECT run_id, '' AS level, task_type AS name, sum(running_ns)::DOUBLE AS total, sum(task_count) AS count
        FROM task_scheduler WHERE task_type IS NOT NULL {and_devices} GROUP BY ALL""",
    # the parts of a step-trace iteration per model (level = model id; N/A for iterations of
    # no model id, as an export may give), each over the iterations that have it; all-reduce
    # ranges per range
    "iteration": " UNION ALL ".join(
        f"""
        SELECT run_id, coalesce(model_id::VARCHAR, 'N/A') AS level, '{name}' AS name, sum({col})::DOUBLE AS total, count({col}) AS count
        FROM {table} WHERE true {{and_devices}} GROUP BY ALL HAVING count({col}) > 0"""
        for table, col, name in (
            ("step_trace_summary", "iteration_ns", "Iteration Time"),
            ("step_trace_summary", "fp_to_bp_ns", "FP to BP Time"),
            ("step_trace_summary", "iteration_refresh_ns", "Iteration Refresh"),
            ("step_trace_summary", "data_aug_bound_ns", "Data Aug Bound"),
            ("step_trace_reduces", "reduce_ns", "Reduce Duration"),
        )
    ),
}
DIMENSION_TABLES = {
    "op": {"task_scheduler"},
    "api": {"runtime_api_summary", "acl_api"},
    "task_type": {"task_scheduler"},
    "iteration": {"step_trace_summary", "step_trace_reduces"},
}
STATS = ("mean", "total", "count")

# run-level metric -> (SQL giving run_id, value; unit; meaning)
RUN_METRICS = {
    "aicore_time": (
        "SELECT run_id, sum(aicore_time_us) AS value FROM ai_core_metrics WHERE true {and_devices} GROUP BY run_id",
        "us",
        "total AI Core time of all PMU-measured tasks (sum of aicore_time(us))",
    ),
    "task_time": (
        "SELECT run_id, sum(running_ns)::DOUBLE AS value FROM task_scheduler WHERE true {and_devices} GROUP BY run_id",
        "ns",
        "total running time of all tasks (sum of Task Scheduler Time(ns))",
    ),
    "runtime_api_time": (
        "SELECT run_id, sum(time_ns)::DOUBLE AS value FROM runtime_api_summary WHERE true {and_devices} GROUP BY run_id",
        "ns",
        "total time in Runtime API calls",
    ),
    "acl_api_time": (
        "SELECT run_id, sum(dur_us) AS value FROM acl_api WHERE true {and_devices} GROUP BY run_id",
        "us",
        "total time in AscendCL API calls",
    ),
    "inference_time": (
        "SELECT run_id, avg(dur_ns) AS value FROM topdown_inference "
        "WHERE module_name = 'GE' AND api_name = 'Infer' {and_devices} GROUP BY run_id",
        "ns",
        "mean duration of one inference (GE Infer phase of the top-down table)",
    ),
    "records_decoded": (
        "SELECT run_id, records_decoded::DOUBLE AS value FROM runs",
        "rows",
        "rows decoded into the raw tables",
    ),
    "bytes_skipped": (
        "SELECT run_id, bytes_skipped::DOUBLE AS value FROM runs",
        "bytes",
        "bytes of raw data not decoded",
    ),
    "issues": ("SELECT run_id, issues::DOUBLE AS value FROM runs", "", "ingest issues found"),
}


RUN_METRIC_TABLES = {
    "ai_core_metrics",
    "task_scheduler",
    "runtime_api_summary",
    "acl_api",
    "topdown_inference",
}


@dataclass(frozen=True)
class Stat:
    total: float
    count: int

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def get(self, stat: str) -> float | None:
        if stat == "mean":
            return self.mean
        return float(self.count) if stat == "count" else self.total


def stat_unit(stat: str) -> str:
    return "" if stat == "count" else "ns"


def check_dimension(by: str) -> str:
    if by not in DIMENSIONS:
        raise UsageError(f"{by!r} is not a dimension; use one of {', '.join(DIMENSIONS)}")
    return by


def check_stat(stat: str) -> str:
    if stat not in STATS:
        raise UsageError(f"statistic {stat!r}; use one of {', '.join(STATS)}")
    return stat


def _device_filter(devices: list[int] | None) -> str:
    if not devices:
        return ""
    return "AND device_id IN (" + ", ".join(str(int(d)) for d in devices) + ")"


def entries(
    wh: Warehouse, run_ids: list[str], by: str, devices: list[int] | None = None
) -> dict[str, dict[tuple[str, str], Stat]]:
    """run_id -> {(level, name): Stat} for every entry of dimension ``by`` in those runs."""
    sql = DIMENSIONS[check_dimension(by)].format(and_devices=_device_filter(devices))
    rows = read_consistent(wh, lambda con: con.sql(sql).fetchall(), run_ids, DIMENSION_TABLES[by])
    out: dict[str, dict[tuple[str, str], Stat]] = {r: {} for r in run_ids}
    for run_id, level, name, total, count in rows:
        key = (level, name)
        prev = out[run_id].get(key)
        total, count = float(total or 0), int(count or 0)
        out[run_id][key] = Stat(prev.total + total, prev.count + count) if prev else Stat(total, count)
    return out


def run_metric(
    wh: Warehouse, run_ids: list[str], name: str, devices: list[int] | None = None
) -> dict[str, float | None]:
    """run_id -> value of a run-level metric (None when the run has nothing to measure)."""
    if name not in RUN_METRICS:
        raise UsageError(f"no run metric {name!r}; use one of {', '.join(RUN_METRICS)}")
    sql = RUN_METRICS[name][0]
    if devices and "{and_devices}" not in sql:
        raise UsageError(f"run metric {name} is per run, not per device; leave out --device")
    text = sql.format(and_devices=_device_filter(devices))
    rows = dict(read_consistent(wh, lambda con: con.sql(text).fetchall(), run_ids, RUN_METRIC_TABLES))
    return {r: (None if rows.get(r) is None else float(rows[r])) for r in run_ids}
