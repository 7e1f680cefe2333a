"""The five result views of the seed document, shaped as titled tables for ``show``."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.compute as pc

from pipeline.outputs.cells import cell
from pipeline.outputs.export import display_header, select_sql, stream_runs, table_contract
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import read_consistent

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
    ("step_trace_summary", "Step trace (training iterations)"),
    ("step_trace_reduces", "Step trace all-reduce ranges"),
    ("comm_iteration_ops", "Communication per iteration and op"),
    ("comm_iteration_links", "Communication per iteration, op and link"),
    ("aicpu_ops", "AI CPU operators"),
    ("advice", "Advice: findings of the advice rules"),
    ("advice_instances", "Advice: each instance of the findings"),
]
TABLES = [t for t, _ in VIEWS] + [t for t, _ in MORE] + ["build_issues"]


@dataclass
class Section:
    table: str
    title: str
    headers: list[str]
    rows: list[list[str]]
    total_rows: int


def sections(
    wh: Warehouse,
    run_id: str,
    table: str,
    limit: int | None = None,
    hide_empty_columns: bool = True,
    devices: list[int] | None = None,
) -> list[Section]:
    """One section per device (or per device asked for), as the tool shows one device at a time.

    Row counts and which columns have values come from SQL; the rows shown are read in the
    table's order until every device has ``limit`` of them, so showing the head of a table
    of millions of rows reads little more than that head."""
    c = table_contract(table)
    cols = [col for col in c.columns if col.name not in ("run_id", "device_id")]
    sql = select_sql(c, ["device_id"] + [col.name for col in cols], devices)
    params = {"run": run_id}

    def read(con):
        totals = dict(
            con.sql(f"select device_id, count(*) from ({sql}) group by device_id", params=params).fetchall()
        )
        counts = (
            con.sql(
                f"select {', '.join(f'count({col.name})' for col in cols)} from ({sql})", params=params
            ).fetchall()[0]
            if cols
            else ()
        )
        kept: dict = {d: [] for d in totals}
        _, batches = stream_runs(con, sql, [run_id])
        for batch in batches:
            devs = batch.column(0)
            for d, rows in kept.items():
                need = None if limit is None else limit - len(rows)
                if need == 0:
                    continue
                mine = pc.is_null(devs) if d is None else pc.fill_null(pc.equal(devs, d), False)
                idx = pc.indices_nonzero(mine)[:need]
                if len(idx):
                    rows.extend(batch.take(idx).to_pylist())
            if limit is not None and all(len(rows) >= min(limit, totals[d]) for d, rows in kept.items()):
                break
        return totals, dict(zip((col.name for col in cols), counts)), kept

    totals, filled, kept = read_consistent(wh, read, [run_id], {c.name})
    if hide_empty_columns and totals:
        # metrics a run's event set cannot fill are all NULL: leave them out of the terminal view
        cols = [col for col in cols if filled[col.name]]
    title = dict(VIEWS + MORE).get(table, table)
    out = []
    for dev in sorted(totals, key=lambda d: (d is None, d)) or [None]:
        rows = [[cell(r[col.name], col.unit) for col in cols] for r in kept.get(dev, [])]
        heading = title if dev is None else f"{title} - device {dev}"
        out.append(Section(table, heading, [display_header(col) for col in cols], rows, totals.get(dev, 0)))
    return out
