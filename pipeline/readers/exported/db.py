"""The unified SQLite database of msprof (``msprof_*.db``) and torch_npu (``ascend_pytorch_profiler*.db``).

Older msprof versions named it ``report_*.db`` and called the API table ``API``. Facts about
the schema: docs/formats.md#export-db. The file is read from a private copy of the bytes the
ingest measured (``read_db``, docs/formats.md#live-dumps), opened read-only and ``immutable``
(nothing is ever written beside the dump's file, not even a lock or a WAL index), and every
table is read column-wise in chunks of ``CHUNK_ROWS`` rows, strings resolved through
``STRING_IDS`` by joins inside SQLite.

What each canonical table takes:

* task_runs    <- TASK: one row per execution; ``seq`` is the TASK rowid, so the op and
  metric rows of an execution carry the same ``seq`` as its run.
* task_ops     <- COMPUTE_TASK_INFO (and COMMUNICATION_SCHEDULE_TASK_INFO) joined to TASK on
  globalTaskId: one row per execution described, with the execution's device, stream, task,
  context and start, so staging joins description and execution exactly.
  COMPUTE_TASK_INFO's ``waitNs``, where the database has it, is kept as ``wait_ns``
  (docs/formats.md#export-wait).
* task_metrics <- TASK_PMU_INFO joined to TASK the same way (long format).
* api_calls    <- CANN_API (``API`` in report_*.db), level named by ENUM_API_TYPE, device 64.
* step_trace   <- STEP_TIME (torch_npu): a start (tag 0) and an end (tag 1) keypoint per step.
* comm_tasks   <- COMMUNICATION_TASK_INFO joined to TASK on globalTaskId: each task of an HCCL
  op with the execution's device, stream, task and times; its op (``name``), task type and
  group through STRING_IDS, transport, link and data type through the ENUM_HCCL_* tables.

Units of TASK_PMU_INFO. msprof's ``UnifiedPmuProcessor::UpdateColumnName`` stores each
MetricSummary column under its column name: a name ending in ``_time`` multiplied by 1000
(microseconds -> nanoseconds), ``(ms)`` stripped and the value multiplied by 1e6, ``(GB/s)``
stripped and multiplied by 1024**3, ``_extra`` stripped. The MetricSummary columns are created
with ``(ms)`` and ``(GB/s)`` already removed from their names, so in practice only the ``_time``
rule applies: time metrics are nanoseconds (checked on real data: ``aiv_total_time`` of a task
is within 1 % of its TASK duration in ns) and bandwidths stay GB/s, whatever the docs say
(docs/formats.md#export-db). profetl stores every metric in the unit its name states, with the names
kernel_details.csv / op_summary.csv give the same values, so a database and a CSV export
of one run produce the same ``metric`` rows:

* ``*_time``: divided by 1000 and named ``*_time_us`` (``aic_mac_time`` -> ``aic_mac_time_us``);
  ``total_time`` / ``aic_total_time`` -> ``aicore_time_us`` and ``aiv_total_time`` ->
  ``aiv_time_us``, as msprof's own header decoration names them;
* names holding ``bw``: GB/s as stored, named ``*_gbps``; names holding ``datas``: KB, ``*_kb``;
* anything else (ratios as fractions 0-1, cycles, miss rates) as stored;
* a name already carrying a unit in parentheses gets that unit as suffix ('(us)' -> ``_us``, ...).

``label`` keeps the name exactly as the database wrote it.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.readers.exported import values as export_values
from pipeline.readers.exported.context import ExportContext, SourceResult
from pipeline.readers.issues import Issue

CHUNK_ROWS = 200_000
NO_ID = 4294967295  # UINT32_MAX: "none" for contextId / modelId
MAX_I32 = 2**31 - 1  # device ids (and stream and task ids) are int32 in every table
HOST_DEVICE = 64
SOURCE_TASK = "db_task"
SOURCE_OPS = "export"
RECORD_KIND_API = "db_cann_api"
# ENUM_API_TYPE as msprof writes it, for a database without the table
API_LEVELS = {20000: "acl", 15000: "model", 10000: "node", 5500: "hccl", 5000: "runtime"}

# logical column -> names it has had, preferred first. blockNum is the block count wherever it
# exists; newer databases then use blockDim for something else (beside gridDim).
TASK_REQUIRED = {
    "start": ("startNs",),
    "end": ("endNs",),
    "device": ("deviceId",),
    "gid": ("globalTaskId",),
    "stream": ("streamId",),
    "task": ("taskId",),
}
TASK_OPTIONAL = {
    "type": ("taskType",),
    "context": ("contextId",),
    "model": ("modelId",),
    "connection": ("connectionId",),
}
COMPUTE_REQUIRED = {"gid": ("globalTaskId",), "name": ("name", "opName")}
COMPUTE_OPTIONAL = {
    "block": ("blockNum", "blockDim", "block_dim", "block_num"),
    "mix_block": ("mixBlockNum", "mixBlockDim", "mix_block_dim", "mix_block_num"),
    "wait": ("waitNs",),
    "type": ("taskType",),
    "op_type": ("opType",),
    "op_state": ("opState",),
    "input_shapes": ("inputShapes",),
    "input_data_types": ("inputDataTypes",),
    "input_formats": ("inputFormats",),
    "output_shapes": ("outputShapes",),
    "output_data_types": ("outputDataTypes",),
    "output_formats": ("outputFormats",),
}
PMU_REQUIRED = {"gid": ("globalTaskId",), "name": ("name",), "value": ("value",)}
API_REQUIRED = {"start": ("startNs",), "end": ("endNs",), "type": ("type",), "name": ("name",)}
API_OPTIONAL = {"tid": ("globalTid",), "connection": ("connectionId",)}
STEP_REQUIRED = {"id": ("id", "stepId"), "start": ("startNs",), "end": ("endNs",)}
STRING_REQUIRED = {"id": ("id",), "value": ("value",)}
COMM_OP_REQUIRED = {"name": ("opName",), "start": ("startNs",), "end": ("endNs",)}
COMM_TASK_REQUIRED = {"gid": ("globalTaskId",), "type": ("taskType",)}
COMM_TASK_OPTIONAL = {
    "name": ("name", "opName"),
    "plane": ("planeId",),
    "notify": ("notifyId",),
    "src": ("srcRank",),
    "dst": ("dstRank",),
    "transport": ("transportType",),
    "link": ("linkType",),
    "data_type": ("dataType",),
    "size": ("size",),
}
# the ENUM_HCCL_* tables as msprof writes them, for a database without them
COMM_ENUMS = {
    "transport": ("ENUM_HCCL_TRANSPORT_TYPE", {0: "SDMA", 1: "RDMA", 2: "LOCAL"}),
    "link": (
        "ENUM_HCCL_LINK_TYPE",
        {0: "ON_CHIP", 1: "HCCS", 2: "PCIE", 3: "ROCE", 4: "SIO", 5: "HCCS_SW", 6: "STANDARD_ROCE"},
    ),
    "data_type": (
        "ENUM_HCCL_DATA_TYPE",
        {0: "INT8", 1: "INT16", 2: "INT32", 3: "FP16", 4: "FP32", 5: "INT64", 6: "UINT64", 7: "UINT8"},
    ),
}
# torch_npu's analysis.db: the step breakdown in us, one row per step (step_times)
STEP_TRACE_TIME_REQUIRED = {
    "step": ("step",),
    "computing_ns": ("computing",),
    "free_ns": ("free",),
    "stage_ns": ("stage",),
}
STEP_TRACE_TIME_OPTIONAL = {
    "communication_not_overlapped_ns": ("communication_not_overlapped",),
    "overlapped_ns": ("overlapped",),
    "communication_ns": ("communication",),
    "bubble_ns": ("bubble",),
    "communication_not_overlapped_exclude_receive_ns": ("communication_not_overlapped_and_exclude_receive",),
    "preparing_ns": ("preparing",),
}

_SQLITE_MAGIC = b"SQLite format 3\x00"


class _Damaged(Exception):
    """The file cannot be read as a database (message says why)."""


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class _Table:
    name: str  # as the database spells it
    cols: dict[str, str]  # logical -> actual column name, or missing from the dict


class _Db:
    """An open database, its tables and columns (names compared without case, as SQLite does)."""

    def __init__(self, path: Path):
        self.path = path
        uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro&immutable=1"
        self.con = sqlite3.connect(uri, uri=True)
        self.tables: dict[str, tuple[str, dict[str, str]]] = {}
        rows = self.con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
        for (name,) in rows:
            cols = [r[1] for r in self.con.execute(f"PRAGMA table_info({_q(name)})").fetchall()]
            self.tables[name.lower()] = (name, {c.lower(): c for c in cols})
        self.version = self._schema_version()

    def _schema_version(self) -> str | None:
        t = self.tables.get("meta_data")
        if t is None or not {"name", "value"} <= set(t[1]):
            return None
        row = self.con.execute(
            f"SELECT value FROM {_q(t[0])} WHERE name = 'SCHEMA_VERSION' LIMIT 1"
        ).fetchone()
        return str(row[0]) if row else None

    def has(self, name: str) -> bool:
        return name.lower() in self.tables

    def resolve(
        self, names: tuple[str, ...], required: dict, optional: dict | None = None
    ) -> tuple[_Table | None, list[str]]:
        """The first of ``names`` present, its columns by logical name, and the required ones it lacks."""
        for n in names:
            if n.lower() in self.tables:
                actual, cols = self.tables[n.lower()]
                found: dict[str, str] = {}
                missing = []
                for group, need in ((required, True), (optional or {}, False)):
                    for logical, aliases in group.items():
                        col = next((cols[a.lower()] for a in aliases if a.lower() in cols), None)
                        if col is not None:
                            found[logical] = col
                        elif need:
                            missing.append("/".join(aliases))
                return _Table(actual, found), missing
        return None, []

    def close(self) -> None:
        self.con.close()


def _header_problem(path: Path) -> str | None:
    """Why the file cannot be a complete SQLite database, from its 100-byte header; None if it can."""
    size = path.stat().st_size
    if size == 0:
        return "empty file (0 bytes): the writer may not have started"
    with open(path, "rb") as f:
        head = f.read(100)
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        return f"file is not a database (no SQLite header in its first {len(head)} bytes)"
    page_size = struct.unpack(">H", head[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    change, pages = struct.unpack(">II", head[24:32])
    valid_for = struct.unpack(">I", head[92:96])[0]
    if page_size < 512 or page_size & (page_size - 1):
        return f"database disk image is malformed (page size {page_size} in the header)"
    if size % page_size:
        return f"truncated: {size} bytes is not a whole number of {page_size}-byte pages"
    if pages and valid_for == change and pages * page_size > size:
        return (
            f"truncated: the header counts {pages} pages of {page_size} bytes ({pages * page_size} bytes), "
            f"the file has {size}"
        )
    return None


def _chunks(cur: sqlite3.Cursor):
    """Column lists of each chunk of a query's rows."""
    while True:
        rows = cur.fetchmany(CHUNK_ROWS)
        if not rows:
            return
        yield [list(c) for c in zip(*rows)]


class _Reader:
    def __init__(self, path: Path, ctx: ExportContext, db: _Db):
        self.path, self.ctx, self.db = path, ctx, db
        self.rel = ctx.rel(path)
        self.res = SourceResult()
        strings, missing = db.resolve(("STRING_IDS",), STRING_REQUIRED)
        self.strings = strings if strings is not None and not missing else None
        self._strings_reported = False
        self.bad_ints: dict[str, int] = {}  # "TABLE.column" -> values that are no integer of its width
        self.bad_rows: dict[str, int] = {}  # canonical table -> rows skipped for such a key value
        self.drop: np.ndarray | None = None  # rows of the chunk being read to skip (``ints``)
        self.bad_text = self._check_strings()

    def _check_strings(self) -> int:
        """STRING_IDS values that are not UTF-8 (SQLite keeps any bytes as text): with any, every
        text is read with U+FFFD for such bytes (else one would fail the read of its table)."""
        if self.strings is None:
            return 0
        con, v, name = self.db.con, _q(self.strings.cols["value"]), _q(self.strings.name)
        bad = 0
        con.text_factory = bytes
        try:
            for (value,) in con.execute(f"SELECT {v} FROM {name} WHERE typeof({v}) = 'text'"):
                try:
                    value.decode("utf-8")
                except UnicodeDecodeError:
                    bad += 1
        except sqlite3.Error:  # a damaged table: the read reports it where it meets it
            pass
        finally:
            con.text_factory = str
        if bad:
            con.text_factory = lambda b: b.decode("utf-8", "replace")
        return bad

    # --- helpers -------------------------------------------------------------------------------
    def schema_issue(self, what: str, device: int | None = None) -> None:
        v = (
            f" (META_DATA SCHEMA_VERSION {self.db.version})"
            if self.db.version
            else " (no META_DATA SCHEMA_VERSION)"
        )
        self.ctx.log.add(Issue(self.rel, "unknown_schema", what + v, device_id=device))

    def table(
        self, names: tuple[str, ...], required: dict, optional: dict | None, fills: str
    ) -> _Table | None:
        t, missing = self.db.resolve(names, required, optional)
        if t is not None and missing:
            self.schema_issue(
                f"table {t.name} has no column {', '.join(missing)} "
                f"(it has {', '.join(sorted(self.db.tables[t.name.lower()][1].values()))}): "
                f"{fills} not read from it"
            )
            return None
        return t

    def string(self, expr: str, alias: str) -> tuple[str, str]:
        """(join clause, select expression) turning a STRING_IDS id column into its text."""
        if self.strings is None:
            if not self._strings_reported:
                self._strings_reported = True
                self.schema_issue(
                    "no STRING_IDS table with id and value columns: names and types stored as ids are NULL"
                )
            return "", f"CASE WHEN typeof({expr}) = 'text' THEN {expr} END"
        s = self.strings
        join = (
            f" LEFT JOIN {_q(s.name)} AS {alias} ON {alias}.{_q(s.cols['id'])} = {expr}"
            f" AND typeof({expr}) = 'integer'"
        )
        return (
            join,
            f"coalesce({alias}.{_q(s.cols['value'])}, CASE WHEN typeof({expr}) = 'text' THEN {expr} END)",
        )

    def write(self, table: str, cols: dict) -> int:
        drop, self.drop = self.drop, None
        if drop is not None and drop.any():  # rows with a key value no integer of its width
            keep = ~drop
            cols = {
                k: v
                if isinstance(v, str)
                else (v.filter(pa.array(keep)) if isinstance(v, pa.Array) else v[keep])
                for k, v in cols.items()
            }
            self.bad_rows[table] = self.bad_rows.get(table, 0) + int(drop.sum())
        n = len(next(v for v in cols.values() if not isinstance(v, str)))
        if n:
            cols["source_file"] = self.rel
            self.ctx.sink.write(table, cols)
            self.res.add_rows(table, n)
        return n

    def task_expr(self, t: _Table, logical: str, alias: str = "t", none_id: bool = False) -> str:
        if logical not in t.cols:
            return "NULL"
        e = f"{alias}.{_q(t.cols[logical])}"
        return f"nullif({e}, {NO_ID})" if none_id else e

    def report_values(self) -> None:
        """The values the read could not take as they were: STRING_IDS text that is not UTF-8,
        rows skipped for a key value no integer of its width (per table), other such values read
        as NULL (per column)."""
        if self.bad_text:
            self.ctx.log.add(
                Issue(
                    self.rel,
                    "bad_value",
                    f"{self.bad_text} STRING_IDS value(s) not UTF-8 text: "
                    "read with U+FFFD for the bad bytes; their rows are kept",
                    count=self.bad_text,
                )
            )
        for table, n in sorted(self.bad_rows.items()):
            self.ctx.log.add(
                Issue(
                    self.rel,
                    "bad_row",
                    f"{n} row(s) for {table} skipped: a device, stream, task or "
                    "time value is not an integer in range (a real, text, or beyond the column's "
                    "width)",
                    count=n,
                )
            )
        for what, n in sorted(self.bad_ints.items()):
            self.ctx.log.add(
                Issue(
                    self.rel,
                    "bad_value",
                    f"{n} value(s) of {what} are not integers in range "
                    "(a real, text, or beyond the column's width): read as NULL",
                    count=n,
                )
            )

    # --- run facts -----------------------------------------------------------------------------
    def facts(self, task: _Table | None) -> None:
        db = self.db
        if db.has("SESSION_TIME_INFO"):
            t, missing = db.resolve(("SESSION_TIME_INFO",), {"start": ("startTimeNs",)})
            if t is not None and not missing:
                row = db.con.execute(f"SELECT min({_q(t.cols['start'])}) FROM {_q(t.name)}").fetchone()
                self.res.start_ns = int(row[0]) if row and isinstance(row[0], int) else None
        if task is not None:
            rows = db.con.execute(
                f"SELECT DISTINCT {_q(task.cols['device'])} FROM {_q(task.name)}"
            ).fetchall()
            self.res.devices |= {int(r[0]) for r in rows if isinstance(r[0], int) and 0 <= r[0] <= MAX_I32}
        t, missing = db.resolve(("NPU_INFO",), {"id": ("id",), "name": ("name",)})
        if t is not None and not missing:
            join, name = self.string(f"n.{_q(t.cols['name'])}", "s")
            rows = db.con.execute(
                f"SELECT n.{_q(t.cols['id'])}, {name} FROM {_q(t.name)} AS n{join}"
            ).fetchall()
            chips = {r[0]: r[1] for r in rows if r[1]}
            mine = [chips[d] for d in sorted(self.res.devices) if d in chips]
            self.res.chip = (mine or list(chips.values()) or [None])[0]

    def single_device(self) -> int | None:
        devices = self.res.devices - {HOST_DEVICE}
        if len(devices) == 1:
            return next(iter(devices))
        for name, col in (("RANK_DEVICE_MAP", "deviceId"), ("NPU_INFO", "id")):
            t, missing = self.db.resolve((name,), {"d": (col,)})
            if t is not None and not missing:
                rows = self.db.con.execute(f"SELECT DISTINCT {_q(t.cols['d'])} FROM {_q(t.name)}").fetchall()
                if len(rows) == 1 and isinstance(rows[0][0], int) and 0 <= rows[0][0] <= MAX_I32:
                    return rows[0][0]
        return self.ctx.default_device

    def device_of_rows(self, table: str, n_rows: int) -> int | None:
        """The device of a table whose rows name none (``single_device``); None, with the
        ``n_rows`` counted as an ``unknown_device`` issue, when the run has no single device."""
        device = self.single_device()
        if device is None:
            self.ctx.log.add(
                Issue(
                    self.rel,
                    "unknown_device",
                    f"{table} rows not read: the database names no "
                    "single device (TASK, RANK_DEVICE_MAP, NPU_INFO) and the export none either",
                    count=n_rows,
                )
            )
        return device

    # --- tables --------------------------------------------------------------------------------
    def task_runs(self, t: _Table) -> None:
        join, type_name = self.string(self.task_expr(t, "type"), "s") if "type" in t.cols else ("", "NULL")
        sql = (
            f"SELECT t.rowid, t.{_q(t.cols['device'])}, t.{_q(t.cols['stream'])}, t.{_q(t.cols['task'])}, "
            f"t.{_q(t.cols['start'])}, t.{_q(t.cols['end'])}, {type_name}, "
            f"{self.task_expr(t, 'context', none_id=True)}, {self.task_expr(t, 'model')}, "
            f"{self.task_expr(t, 'connection')} "
            f"FROM {_q(t.name)} AS t{join} ORDER BY t.rowid"
        )
        for c in _chunks(self.db.con.execute(sql)):
            self.write(
                "task_runs",
                {
                    **self._exec_cols([c[0], c[1], c[2], c[3], c[4], c[7]], t.name),
                    "end_ns": self.ints(c[5], t.name, t.cols["end"]),
                    "task_type_name": pa.array(c[6], pa.string()),
                    "model_id": self.ints(c[8], t.name, t.cols.get("model")),
                    "connection_id": self.ints(c[9], t.name, t.cols.get("connection")),
                    "source": SOURCE_TASK,
                },
            )

    def _executions(self, t: _Table) -> str:
        """Columns of the TASK row an op or metric row belongs to, in the order ``_exec_cols`` reads."""
        return (
            f"t.rowid, t.{_q(t.cols['device'])}, t.{_q(t.cols['stream'])}, t.{_q(t.cols['task'])}, "
            f"t.{_q(t.cols['start'])}, {self.task_expr(t, 'context', none_id=True)}"
        )

    def _exec_cols(self, c: list, table: str) -> dict:
        t = self.db.tables[table.lower()][1]
        return {
            "seq": pa.array(c[0], pa.int64()),
            "device_id": self.ints(c[1], table, t.get("deviceid"), 32, key=True),
            "stream_id": self.ints(c[2], table, t.get("streamid"), 32, key=True),
            "task_id": self.ints(c[3], table, t.get("taskid"), 32, key=True),
            "start_ns": self.ints(c[4], table, t.get("startns"), key=True),
            "context_id": self.ints(c[5], table, t.get("contextid")),
        }

    def ints(
        self, values: list, table: str, column: str | None, bits: int = 64, key: bool = False
    ) -> pa.Array:
        """A column of integers; a value that is not an integer of ``bits`` bits (SQLite stores
        what it is given: 1e300, text) is NULL, counted in ``bad_ints`` for one issue per column;
        in a ``key`` column (device, stream, task, start) it costs the row: ``write`` skips it."""
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        try:
            a = pa.array(values, pa.int64())
            if bits == 64 or not len(a) or a.null_count == len(a):
                return a
            mm = pc.min_max(a).as_py()
            if lo <= mm["min"] and mm["max"] <= hi:
                return a
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
            pass
        ok = [v if v is None or (type(v) is int and lo <= v <= hi) else None for v in values]
        mask = np.array([v is not None and o is None for v, o in zip(values, ok)], dtype=bool)
        if key:
            self.drop = mask if self.drop is None else self.drop | mask
        else:
            what = f"{table}.{column or '?'}"
            self.bad_ints[what] = self.bad_ints.get(what, 0) + int(mask.sum())
        return pa.array(ok, pa.int64())

    def task_ops(self, t: _Table) -> None:
        compute = self.table(("COMPUTE_TASK_INFO",), COMPUTE_REQUIRED, COMPUTE_OPTIONAL, "task_ops")
        schedule = self.table(
            ("COMMUNICATION_SCHEDULE_TASK_INFO",),
            COMPUTE_REQUIRED,
            {k: COMPUTE_OPTIONAL[k] for k in ("type", "op_type")},
            "task_ops",
        )
        strings = (
            "name",
            "op_type",
            "type",
            "op_state",
            "input_shapes",
            "input_data_types",
            "input_formats",
            "output_shapes",
            "output_data_types",
            "output_formats",
        )
        for info in (compute, schedule):
            if info is None:
                continue
            joins, exprs = [], []
            for i, logical in enumerate(strings):
                if logical in info.cols:
                    j, e = self.string(f"c.{_q(info.cols[logical])}", f"s{i}")
                    joins.append(j)
                    exprs.append(e)
                else:
                    exprs.append("NULL")
            ints = [
                f"CASE WHEN typeof(c.{_q(info.cols[k])}) = 'integer' THEN c.{_q(info.cols[k])} END"
                if k in info.cols
                else "NULL"
                for k in ("block", "mix_block", "wait")
            ]
            sql = (
                f"SELECT {self._executions(t)}, {self.task_expr(t, 'model')}, {', '.join(ints)}, "
                f"{', '.join(exprs)} FROM {_q(t.name)} AS t CROSS JOIN {_q(info.name)} AS c "
                f"ON c.{_q(info.cols['gid'])} = t.{_q(t.cols['gid'])}{''.join(joins)} ORDER BY t.rowid"
            )
            for c in _chunks(self.db.con.execute(sql)):
                cols = self._exec_cols(c, t.name)
                text = {  # a scalar's empty shape stays "" (values.clean_shapes)
                    k: (
                        export_values.clean_shapes
                        if k in export_values.SHAPE_COLUMNS
                        else export_values.clean
                    )(pa.array(c[10 + i], pa.string()))
                    for i, k in enumerate(strings)
                }
                cols.update(
                    {
                        "model_id": self.ints(c[6], t.name, t.cols.get("model")),
                        "block_dim": self.ints(c[7], info.name, info.cols.get("block"), 32),
                        "mix_block_dim": self.ints(c[8], info.name, info.cols.get("mix_block"), 32),
                        # the exporter's wait as stored (docs/formats.md#export-wait)
                        "wait_ns": self.ints(c[9], info.name, info.cols.get("wait")),
                        "op_name": text["name"],
                        "op_type": text["op_type"],
                        "task_type": text["type"],
                        "accelerator_core": text["type"],
                        "op_state": text["op_state"],
                        **{k: text[k] for k in strings[4:]},
                        "source": SOURCE_OPS,
                    }
                )
                self.write("task_ops", cols)

    def task_metrics(self, t: _Table) -> None:
        p = self.table(("TASK_PMU_INFO",), PMU_REQUIRED, None, "task_metrics")
        if p is None:
            return
        db = self.db
        join, label = self.string(f"p.{_q(p.cols['name'])}", "s")
        names = [
            r[0]
            for r in db.con.execute(
                f"SELECT DISTINCT {label} FROM (SELECT DISTINCT {_q(p.cols['name'])} FROM {_q(p.name)}) AS p{join}"
            ).fetchall()
        ]
        known = [n for n in names if n is not None]
        metric_of = pa.array([pmu_metric(n)[0] for n in known], pa.string())
        scale_of = pa.array([pmu_metric(n)[1] for n in known], pa.float64())
        value = f"CASE WHEN typeof(p.{_q(p.cols['value'])}) IN ('integer', 'real') THEN p.{_q(p.cols['value'])} END"
        gid_t, gid_p = f"t.{_q(t.cols['gid'])}", f"p.{_q(p.cols['gid'])}"
        repeated = db.con.execute(
            f"SELECT 1 FROM {_q(t.name)} GROUP BY {_q(t.cols['gid'])} HAVING count(*) > 1 LIMIT 1"
        ).fetchone()
        if repeated is None:
            sql = (
                f"SELECT {self._executions(t)}, {label}, {value} FROM {_q(t.name)} AS t "
                f"CROSS JOIN {_q(p.name)} AS p ON {gid_p} = {gid_t}{join} ORDER BY t.rowid"
            )
        else:
            # executions sharing a globalTaskId (replays of a static graph): the k-th PMU row of a
            # name goes with the k-th execution in time, the order msprof wrote them in
            sql = (
                f"WITH t AS (SELECT rowid AS rid, *, row_number() OVER (PARTITION BY {_q(t.cols['gid'])} "
                f"ORDER BY {_q(t.cols['start'])}, rowid) AS k FROM {_q(t.name)}), "
                f"p AS (SELECT *, row_number() OVER (PARTITION BY {_q(p.cols['gid'])}, {_q(p.cols['name'])} "
                f"ORDER BY rowid) AS k FROM {_q(p.name)}) "
                f"SELECT {self._executions(t).replace('t.rowid', 't.rid')}, {label}, {value} FROM t "
                f"JOIN p ON {gid_p} = {gid_t} AND p.k = t.k{join} ORDER BY t.rid"
            )
            self.res.notes.append(
                f"task_metrics: {self.rel} has executions sharing a globalTaskId; their "
                "TASK_PMU_INFO rows were paired with them in time order"
            )
        for c in _chunks(db.con.execute(sql)):
            cols = self._exec_cols(c, t.name)
            labels = pa.array(c[6], pa.string())
            idx = pc.index_in(labels, value_set=pa.array(known, pa.string()))
            cols["label"] = labels
            cols["metric"] = pc.take(metric_of, idx)
            cols["value"] = pc.multiply(pa.array(c[7], pa.float64()), pc.take(scale_of, idx))
            self.write("task_metrics", cols)

    def api_calls(self) -> None:
        a = self.table(("CANN_API", "API"), API_REQUIRED, API_OPTIONAL, "api_calls")
        if a is None:
            return
        join, name = self.string(f"a.{_q(a.cols['name'])}", "s")
        typ = f"a.{_q(a.cols['type'])}"
        fallback = "CASE " + " ".join(f"WHEN {typ} = {k} THEN '{v}'" for k, v in API_LEVELS.items()) + " END"
        e, missing = self.db.resolve(("ENUM_API_TYPE",), {"id": ("id",), "name": ("name",)})
        if e is not None and not missing:
            join += f" LEFT JOIN {_q(e.name)} AS e ON e.{_q(e.cols['id'])} = {typ}"
            level = f"coalesce(e.{_q(e.cols['name'])}, {fallback})"
        else:
            level = fallback
        tid = f"a.{_q(a.cols['tid'])}" if "tid" in a.cols else "NULL"
        conn = f"a.{_q(a.cols['connection'])}" if "connection" in a.cols else "NULL"
        sql = (
            f"SELECT a.{_q(a.cols['start'])}, a.{_q(a.cols['end'])}, {typ}, {level}, {name}, "
            f"{tid} >> 32, {tid} & 4294967295, {conn} FROM {_q(a.name)} AS a{join} ORDER BY a.rowid"
        )
        seq0 = 0
        for c in _chunks(self.db.con.execute(sql)):
            n = len(c[0])
            self.write(
                "api_calls",
                {
                    "seq": np.arange(seq0, seq0 + n, dtype=np.int64),
                    "device_id": np.full(n, HOST_DEVICE, np.int32),
                    "start_ns": self.ints(c[0], a.name, a.cols["start"], key=True),
                    "end_ns": self.ints(c[1], a.name, a.cols["end"]),
                    "api_type": self.ints(c[2], a.name, a.cols["type"], 32),
                    "level": pa.array(c[3], pa.string()),
                    "api_name": pa.array(c[4], pa.string()),
                    "pid": self.ints(c[5], a.name, a.cols.get("tid")),
                    "tid": self.ints(c[6], a.name, a.cols.get("tid")),
                    "connection_id": self.ints(c[7], a.name, a.cols.get("connection")),
                    "record_kind": RECORD_KIND_API,
                },
            )
            seq0 += n
        if seq0:
            self.res.devices.add(HOST_DEVICE)

    def step_trace(self) -> None:
        s = self.table(("STEP_TIME",), STEP_REQUIRED, None, "step_trace")
        if s is None:
            return
        rows = self.db.con.execute(
            f"SELECT {_q(s.cols['id'])}, {_q(s.cols['start'])}, {_q(s.cols['end'])} "
            f"FROM {_q(s.name)} ORDER BY rowid"
        ).fetchall()
        if not rows:
            return
        device = self.device_of_rows("STEP_TIME", len(rows))
        if device is None:
            return
        ids, starts, ends = (np.array(c, dtype=object) for c in zip(*rows))
        n = len(rows)
        self.write(
            "step_trace",
            {
                "seq": np.arange(2 * n, dtype=np.int64),
                "device_id": np.full(2 * n, device, np.int32),
                "index_id": self.ints(np.repeat(ids, 2).tolist(), s.name, s.cols["id"], key=True),
                "tag_id": np.tile(np.array([0, 1], np.int32), n),
                "ts_ns": self.ints(
                    np.column_stack([starts, ends]).ravel().tolist(), s.name, "startNs/endNs", key=True
                ),
            },
        )

    def comm_ops(self) -> None:
        """COMMUNICATION_OP: each HCCL op as a whole (name, start, end) into ``comm_ops``, on the
        database's single device."""
        c = self.table(("COMMUNICATION_OP",), COMM_OP_REQUIRED, None, "comm_ops")
        if c is None:
            return
        join, name = self.string(f"o.{_q(c.cols['name'])}", "s")
        rows = self.db.con.execute(
            f"SELECT {name}, o.{_q(c.cols['start'])}, o.{_q(c.cols['end'])} "
            f"FROM {_q(c.name)} AS o{join} ORDER BY o.rowid"
        ).fetchall()
        if not rows:
            return
        device = self.device_of_rows("COMMUNICATION_OP", len(rows))
        if device is None:
            return
        names, starts, ends = (list(x) for x in zip(*rows))
        n = len(rows)
        self.write(
            "comm_ops",
            {
                "seq": np.arange(n, dtype=np.int64),
                "device_id": np.full(n, device, np.int32),
                "op_name": pa.array(names, pa.string()),
                "start_ns": self.ints(starts, c.name, c.cols["start"], key=True),
                "end_ns": self.ints(ends, c.name, c.cols["end"]),
            },
        )

    def comm_tasks(self, t: _Table) -> None:
        """COMMUNICATION_TASK_INFO joined to TASK: each task of an HCCL op into ``comm_tasks``, with
        the execution's device, stream, task and times; ``seq`` is the TASK rowid."""
        ci = self.table(("COMMUNICATION_TASK_INFO",), COMM_TASK_REQUIRED, COMM_TASK_OPTIONAL, "comm_tasks")
        if ci is None:
            return
        joins, exprs = [], []
        for i, logical in enumerate(("type", "name")):
            if logical in ci.cols:
                j, e = self.string(f"c.{_q(ci.cols[logical])}", f"s{i}")
                joins.append(j)
                exprs.append(e)
            else:
                exprs.append("NULL")
        for logical, (enum, known) in COMM_ENUMS.items():
            if logical not in ci.cols:
                exprs.append("NULL")
                continue
            col = f"c.{_q(ci.cols[logical])}"
            fallback = (
                "CASE "
                + " ".join(f"WHEN {col} = {k} THEN '{v}'" for k, v in known.items())
                + f" ELSE CAST({col} AS TEXT) END"
            )
            e, missing = self.db.resolve((enum,), {"id": ("id",), "name": ("name",)})
            if e is not None and not missing:
                alias = f"e_{logical}"
                joins.append(f" LEFT JOIN {_q(e.name)} AS {alias} ON {alias}.{_q(e.cols['id'])} = {col}")
                exprs.append(f"coalesce({alias}.{_q(e.cols['name'])}, {fallback})")
            else:
                exprs.append(fallback)
        plain = [
            f"c.{_q(ci.cols[k])}" if k in ci.cols else "NULL"
            for k in ("plane", "notify", "src", "dst", "size")
        ]
        sql = (
            f"SELECT {self._executions(t)}, t.{_q(t.cols['end'])}, {self.task_expr(t, 'model', none_id=True)}, "
            f"{', '.join(exprs)}, {', '.join(plain)} FROM {_q(t.name)} AS t CROSS JOIN {_q(ci.name)} AS c "
            f"ON c.{_q(ci.cols['gid'])} = t.{_q(t.cols['gid'])}{''.join(joins)} ORDER BY t.rowid"
        )
        for c in _chunks(self.db.con.execute(sql)):
            cols = self._exec_cols(c, t.name)
            cols.pop("context_id")
            n = len(c[0])
            cols.update(
                {
                    "end_ns": self.ints(c[6], t.name, t.cols["end"]),
                    "model_id": self.ints(c[7], t.name, t.cols.get("model")),
                    "task_type": export_values.clean(pa.array(c[8], pa.string())),
                    "op_name": export_values.clean(pa.array(c[9], pa.string())),
                    "transport_type": pa.array(c[10], pa.string()),
                    "link_type": pa.array(c[11], pa.string()),
                    "data_type": pa.array(c[12], pa.string()),
                    "plane_id": self.ints(c[13], ci.name, ci.cols.get("plane")),
                    "notify_id": pa.array([None if v is None else str(v) for v in c[14]], pa.string()),
                    "src_rank": self.ints(c[15], ci.name, ci.cols.get("src")),
                    "dst_rank": self.ints(c[16], ci.name, ci.cols.get("dst")),
                    "size_bytes": self.ints(c[17], ci.name, ci.cols.get("size")),
                    "bandwidth_gbps": pa.nulls(n, pa.float64()),
                }
            )
            self.write("comm_tasks", cols)
            self.res.devices |= {d for d in pc.unique(cols["device_id"]).to_pylist() if d is not None}

    def step_times(self) -> None:
        """analysis.db's StepTraceTime: torch_npu's step breakdown (us, as REAL or text) into
        ``step_times`` in ns; a step that is no integer costs its row (``bad_row``)."""
        s, missing = self.db.resolve(("StepTraceTime",), STEP_TRACE_TIME_REQUIRED, STEP_TRACE_TIME_OPTIONAL)
        if s is None:
            self.res.notes.append(f"step_times: {self.rel} has no StepTraceTime table")
            return
        if missing:  # the summary is there and cannot be used: its steps are lost
            n = self.db.con.execute(f"SELECT count(*) FROM {_q(s.name)}").fetchone()[0]
            self.ctx.log.add(
                Issue(
                    self.rel,
                    "bad_row",
                    f"table {s.name} has no column {', '.join(missing)} (it has "
                    f"{', '.join(sorted(self.db.tables[s.name.lower()][1].values()))}): its {n} step(s) "
                    "not read, and the export holds no step events either",
                    count=max(int(n), 1),
                )
            )
            return
        roles = [r for r in (*STEP_TRACE_TIME_REQUIRED, *STEP_TRACE_TIME_OPTIONAL) if r in s.cols]
        rows = self.db.con.execute(
            f"SELECT rowid, {', '.join(_q(s.cols[r]) for r in roles)} FROM {_q(s.name)} ORDER BY rowid"
        ).fetchall()
        if not rows:
            return
        device = self.single_device()
        if device is None:
            device = 0
            self.res.notes.append(
                f"{self.rel}: StepTraceTime names no device, nor does the export: device 0 assumed"
            )
        c = [list(col) for col in zip(*rows)]
        text = lambda vals: pa.array([None if v is None else str(v) for v in vals], pa.string())  # noqa: E731
        step, bad = export_values.to_int(text(c[1]))
        keep = pc.is_valid(step)
        cols: dict = {"seq": pa.array(c[0], pa.int64()), "step_id": step}
        for i, role in enumerate(roles[1:], start=2):
            v, bad = export_values.us_to_ns(text(c[i]))
            n = pc.sum(bad).as_py() or 0
            if n:
                what = f"{s.name}.{s.cols[role]}"
                self.bad_ints[what] = self.bad_ints.get(what, 0) + n
            cols[role] = v
        n = len(rows)
        self.drop = np.asarray(pc.invert(keep).to_numpy(zero_copy_only=False), dtype=bool)
        cols["device_id"] = np.full(n, device, np.int32)
        self.write("step_times", cols)
        if device != HOST_DEVICE:
            self.res.devices.add(device)


def pmu_metric(name: str) -> tuple[str, float]:
    """(metric, factor) of a TASK_PMU_INFO name: the profetl metric name (values.metric_name, the
    CSV headers' rule) and the factor that turns the stored value into the unit that name states
    (module docstring): msprof stores ``*_time`` columns without their unit, in ns."""
    s = export_values.metric_name(name)
    if "(" in name:  # the name states its unit
        return s, 1.0
    s = s.removesuffix("_extra")
    if s.endswith("_time") or s == "time":
        if s in ("total_time", "aic_total_time"):
            return "aicore_time_us", 1e-3
        if s == "aiv_total_time":
            return "aiv_time_us", 1e-3
        return s + "_us", 1e-3  # stored in ns (x1000 of msprof's us)
    if "bw" in s.split("_"):
        return s + "_gbps", 1.0
    if "datas" in s:
        return s + "_kb", 1.0
    return s, 1.0


def _side_files(path: Path, ctx: ExportContext, rel: str) -> None:
    for suffix, what in (("-journal", "a rollback journal"), ("-wal", "a write-ahead log")):
        side = path.with_name(path.name + suffix)
        if side.exists():
            ctx.log.add(
                Issue(
                    rel,
                    "unfinished_write",
                    f"{side.name} beside it is {what}: the writer may not have finished; the database "
                    "is read as it is on disk, without what the side file holds",
                )
            )


def read_db(
    path: Path, ctx: ExportContext, size: int | None = None, mtime_ns: int | None = None
) -> SourceResult | None:
    """Read the database as the ingest measured it (``size`` bytes, modified at ``mtime_ns``,
    when the dump was scanned; None: as it is now). A database cannot be read in part, and a
    writer changes pages anywhere in it, so its first ``size`` bytes are copied into
    ``ctx.workdir`` and the copy is read only if the file was still as measured when the copy
    ended; otherwise it is not read and that is reported (``changed_while_read``, its bytes
    counted skipped): the next run reads it again (docs/formats.md#live-dumps)."""
    path = Path(path)
    rel = ctx.rel(path)
    _side_files(path, ctx, rel)
    try:
        if size is None:
            st = path.stat()
            size, mtime_ns = st.st_size, st.st_mtime_ns
        copy = _snapshot(path, size, mtime_ns, ctx.workdir)
    except _Changed as e:
        ctx.log.add(
            Issue(
                rel,
                "changed_while_read",
                f"{e}: a database cannot be read in part, so it is not read; the next run reads it again",
                byte_offset=0,
                byte_length=size,
            )
        )
        return None
    except OSError as e:
        ctx.log.add(
            Issue(rel, "unreadable_file", f"cannot be opened or copied: {e.strerror or e}", byte_length=size)
        )
        return None
    db = None
    try:
        why = _header_problem(copy)
        if why is not None:
            raise _Damaged(why)
        db = _Db(copy)
    except (_Damaged, sqlite3.Error, OSError) as e:
        if db is not None:
            db.close()
        copy.unlink(missing_ok=True)
        ctx.log.add(Issue(rel, "unreadable_file", f"not read: {e}", byte_length=size))
        return None
    try:
        return _read(path, ctx, db, size)
    finally:
        db.close()
        copy.unlink(missing_ok=True)


class _Changed(Exception):
    """The database is no longer as the ingest measured it (message says how)."""


_COPY_BYTES = 8 << 20


def _snapshot(path: Path, size: int, mtime_ns: int | None, workdir: Path | None) -> Path:
    """A private copy of the first ``size`` bytes of ``path`` in ``workdir`` (the system's
    temporary folder when None); ``_Changed`` when the file's size or modification time differ
    from those measured, before the copy or once it is taken (the copy is then deleted)."""

    def check(st: os.stat_result) -> None:
        if st.st_size != size or (mtime_ns is not None and st.st_mtime_ns != mtime_ns):
            raise _Changed(
                f"changed since the ingest measured it ({size} bytes then, {st.st_size} now"
                f"{'' if st.st_size != size else ', modified since'})"
            )

    fd, name = tempfile.mkstemp(prefix="export-", suffix=".db", dir=workdir)
    copy = Path(name)
    try:
        with open(path, "rb") as src, os.fdopen(fd, "wb") as dst:
            check(os.fstat(src.fileno()))
            left = size
            while left:
                data = src.read(min(_COPY_BYTES, left))
                if not data:
                    break
                dst.write(data)
                left -= len(data)
        check(path.stat())  # by path: a file replaced under the same name is a change too
    except BaseException:
        copy.unlink(missing_ok=True)
        raise
    return copy


def _read(path: Path, ctx: ExportContext, db: _Db, size: int) -> SourceResult:
    r = _Reader(path, ctx, db)
    step = "the table list"
    try:
        wanted = sorted({"task_runs", "task_ops", "task_metrics", "comm_tasks"} & ctx.tables)
        task, missing = db.resolve(("TASK",), TASK_REQUIRED, TASK_OPTIONAL)
        if task is None and wanted:
            r.schema_issue(f"no TASK table: {', '.join(wanted)} not read from it")
        elif task is not None and missing:
            if wanted:
                r.schema_issue(
                    f"table {task.name} has no column {', '.join(missing)}: {', '.join(wanted)} "
                    "not read from it"
                )
            task = None
        step = "SESSION_TIME_INFO / NPU_INFO"
        r.facts(task)
        for table, fn in (
            ("task_runs", r.task_runs),
            ("task_ops", r.task_ops),
            ("task_metrics", r.task_metrics),
            ("comm_tasks", r.comm_tasks),
        ):
            if table in ctx.tables and task is not None:
                step = table
                fn(task)
        if "api_calls" in ctx.tables:
            step = "api_calls"
            r.api_calls()
        if "step_trace" in ctx.tables:
            step = "step_trace"
            r.step_trace()
        if "comm_ops" in ctx.tables:
            step = "comm_ops"
            r.comm_ops()
        if "step_times" in ctx.tables:
            step = "step_times"
            r.step_times()
    except sqlite3.Error as e:
        ctx.log.add(
            Issue(
                r.rel,
                "unreadable_file",
                f"failed while reading {step}: {e}; rows of the tables before it are kept",
                byte_length=size,
            )
        )
        r.res.notes.append(f"{r.rel}: damaged, read only up to {step}")
        r.report_values()
        return r.res
    r.report_values()
    ctx.log.decoded(size)
    return r.res


def session_start_ns(path: Path) -> int | None:
    """SESSION_TIME_INFO.startTimeNs, or None when the file has no readable session table."""
    path = Path(path)
    try:
        if _header_problem(path) is not None:
            return None
        db = _Db(path)
    except (OSError, sqlite3.Error):
        return None
    try:
        t, missing = db.resolve(("SESSION_TIME_INFO",), {"start": ("startTimeNs",)})
        if t is None or missing:
            return None
        row = db.con.execute(f"SELECT min({_q(t.cols['start'])}) FROM {_q(t.name)}").fetchone()
        return int(row[0]) if row and isinstance(row[0], int) else None
    except sqlite3.Error:
        return None
    finally:
        db.close()
