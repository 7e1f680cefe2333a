"""The five result views of the seed document, shaped as titled tables for ``show``."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.export import fetch
from pipeline.warehouse import Warehouse

# (table, title as in the seed document's figures)
VIEWS = [
    ("runtime_api_summary", "Runtime API calls"),
    ("task_scheduler", "Task Scheduler"),
    ("ai_core_metrics", "AI Core metrics"),
    ("acl_api", "AscendCL API"),
    ("topdown_inference", "Time taken by each module in the inference workflow (top-down)"),
]
# further tables ``show`` offers by name (msprof's current deliverables)
MORE = [
    ("api_statistic", "API statistics"),
    ("op_statistic", "Operator types"),
    ("op_summary", "Operators"),
]
TABLES = [t for t, _ in VIEWS] + [t for t, _ in MORE] + ["build_issues"]


@dataclass
class Section:
    table: str
    title: str
    headers: list[str]
    rows: list[list[str]]
    total_rows: int


def cell(v) -> str:
    if v is None:
        return "N/A"
    if isinstance(v, float):
        return f"{v:.6g}" if abs(v) < 1e15 else f"{v:.0f}"
    if isinstance(v, list):
        return ",".join(str(x) for x in v)
    return str(v)


def sections(wh: Warehouse, run_id: str, table: str, limit: int | None = None,
             hide_empty_columns: bool = True, devices: list[int] | None = None) -> list[Section]:
    """One section per device (or per device asked for), as the tool shows one device at a time."""
    c, t = fetch(wh, table, [run_id], devices)
    cols = [col for col in c.columns if col.name not in ("run_id", "device_id")]
    data = {col.name: t.column(col.name).to_pylist() for col in cols}
    if hide_empty_columns and t.num_rows:
        # metrics a run's event set cannot fill are all NULL: leave them out of the terminal view
        cols = [col for col in cols if any(v is not None for v in data[col.name])]
    devices = t.column("device_id").to_pylist()
    title = dict(VIEWS + MORE).get(table, table)
    out = []
    for dev in sorted(set(devices)) or [None]:
        idx = [i for i, d in enumerate(devices) if d == dev]
        shown = idx if limit is None else idx[:limit]
        rows = [[cell(data[col.name][i]) for col in cols] for i in shown]
        heading = title if dev is None else f"{title} - device {dev}"
        out.append(Section(table, heading, [col.display or col.name for col in cols], rows, len(idx)))
    return out
