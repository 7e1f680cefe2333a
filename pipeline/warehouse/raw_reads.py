"""One committed run's raw tables as SQL, for the build and the timeline (which read a single
run's part files directly, not through the read side's views)."""

from __future__ import annotations

import pyarrow.parquet as pq

from pipeline import __version__
from pipeline.errors import TransformFailed
from pipeline.warehouse.contracts import contract
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import quote


ALL_DEVICES = object()


def raw_select(wh: Warehouse, table: str, run: dict, device=ALL_DEVICES) -> str:
    """One run's raw table as its contract has it now, without ``run_id``: what the build and
    the timeline read; with ``device`` (an id, or None for rows of no device) only that device's
    rows of the tables that have a device. A run ingested by an older profetl lacks the tables
    and columns added since: those read as empty / NULL, so old runs still rebuild."""
    c = contract("raw", table)
    run_id = run["run_id"]
    paths = wh.run_files("raw", table, run)
    wanted = [col for col in c.columns if col.name != "run_id"]
    if not paths or not all(p.exists() for p in paths):
        if run.get("profetl_version") == __version__:
            gone = next((p for p in paths if not p.exists()), None)
            raise TransformFailed(f"run {run_id} has no raw part file for {table} ({gone})")
        cols = ", ".join(f"NULL::{col.sql_type} AS {col.name}" for col in wanted)
        return f"select {cols} where false"
    have = set(pq.read_schema(paths[0]).names)
    cols = ", ".join(col.name if col.name in have else f"NULL::{col.sql_type} AS {col.name}"
                     for col in wanted)
    # a group file holds other runs too
    where = f" where run_id = {quote(run_id)}" if "run_id" in have else ""
    sql = f"select {cols} from read_parquet([{', '.join(quote(p) for p in paths)}]){where}"
    if device is not ALL_DEVICES and "device_id" in c.column_names:
        sql = f"select * from ({sql}) where device_id is not distinct from {'NULL' if device is None else int(device)}"
    return sql
