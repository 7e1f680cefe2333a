"""One committed run's raw tables as SQL, for the build and the timeline (which read a single
run's part files directly, not through the read side's views)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import __version__
from pipeline.errors import DamagedPart
from pipeline.warehouse.compaction import damage_advice
from pipeline.warehouse.contracts import contract
from pipeline.warehouse.layout import part_of
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import quote

ALL_DEVICES = object()

# Tables of host threads' records, which the rules join to a device's records by thread (tid):
# a task's launch, the node and model around it (docs/formats.md part 2)
THREAD_TABLES = ("api_calls", "task_ops")


def device_rows(device) -> str:
    """The SQL condition for the rows of ``device`` (None: rows of no device)."""
    return "device_id is null" if device is None else f"device_id = {int(device)}"


def raw_select(wh: Warehouse, table: str, run: dict, device=ALL_DEVICES) -> str:
    """One run's raw table as its contract has it now, without ``run_id``: what the build and
    the timeline read. With ``device`` (an id, or None for rows of no device), what a build of
    that device alone needs (docs/architecture.md#cluster): its rows of the tables that have a
    device, and of THREAD_TABLES also every row of the threads that recorded anything for it
    (a thread that launched on several devices is shared by their builds, each of which keeps
    only its own device's rows of every mart). A run ingested by an older profetl lacks the
    tables and columns added since: those read as empty / NULL, so old runs still rebuild."""
    sql = _select(wh, table, run)
    if device is ALL_DEVICES or "device_id" not in contract("raw", table).column_names:
        return sql
    mine = device_rows(device)
    if table not in THREAD_TABLES:
        return f"select * from ({sql}) where {mine}"
    threads = " union ".join(f"select tid from ({_select(wh, t, run)}) where {mine}" for t in THREAD_TABLES)
    return f"select * from ({sql}) where {mine} or tid in ({threads})"


def _select(wh: Warehouse, table: str, run: dict) -> str:
    c = contract("raw", table)
    run_id = run["run_id"]
    paths = wh.run_index().files_of_run("raw", table, run)
    wanted = [col for col in c.columns if col.name != "run_id"]
    if not paths or not all(p.exists() for p in paths):
        if run.get("profetl_version") == __version__ and paths:
            gone = next(p for p in paths if not p.exists())
            raise _damaged(wh, run, gone, "missing")
        cols = ", ".join(f"NULL::{col.sql_type} AS {col.name}" for col in wanted)
        return f"select {cols} where false"
    have = set()
    for p in paths:  # a file that cannot be read fails the build here, named, before DuckDB meets it
        try:
            have = have or set(pq.read_schema(p).names)
        except (OSError, pa.ArrowException) as e:
            raise _damaged(
                wh, run, p, getattr(e, "strerror", None) or (str(e).splitlines() or [type(e).__name__])[0]
            ) from None
    cols = ", ".join(
        col.name if col.name in have else f"NULL::{col.sql_type} AS {col.name}" for col in wanted
    )
    # a group file holds other runs too
    where = f" where run_id = {quote(run_id)}" if "run_id" in have else ""
    # a sharded part (docs/architecture.md#cluster) as one scan per shard: DuckDB estimates a
    # scan of several files from the first one's rows, and a first shard without rows of the
    # table (a device unit's API calls) would make it plan joins for an empty table (an ASOF
    # join as a nested loop, quadratic in the rows it then meets)
    return " union all ".join(f"select {cols} from read_parquet({quote(p)}){where}" for p in paths)


def _damaged(wh: Warehouse, run: dict, path, reason: str) -> DamagedPart:
    """A raw part file of ``run`` that the build cannot read: the run is not built (its marts
    stay as they were), and what can be done about it."""
    return DamagedPart(
        path,
        reason,
        f"run {run['run_id']} cannot be built from it: its marts are left as they were; "
        + damage_advice(wh.run_index().rows_by_run_id(), "raw_part", part_of(path.name)),
    )
