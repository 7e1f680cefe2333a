"""A run (or a time window of it) as a Chrome trace that Perfetto UI and chrome://tracing open.

Trace Event format (JSON object form): every event has ``ph``, ``ts`` in microseconds
on the run timeline (host monotonic clock, ns / 1000, so ``ts * 1000`` is the
``start_ns`` of the tables), ``pid`` and ``tid``; complete events (``ph: X``) have
``dur``. One process per device; its tracks (threads):

* ``AscendCL API (tid T)`` and ``Runtime API (tid T)``: one X event per API call
* ``Inferences``: model loads and the input / infer / output phase of each inference
* ``Stream S tasks``: one X event per completed task instance, RUNNING (else PENDING)
  to COMPLETE, as the Task Scheduler table times it; an instance that never completed
  is an instant event (``ph: i``) at its last state
* ``Stream S task states``: the waiting, pending and running intervals of each instance
* flow arrows (``ph: s`` / ``f``) from a Runtime API call to the tasks it launched

Task instances, their ops and launching APIs come from the same staging SQL as the
reports (``sql/staging``), so the trace and the tables agree. Events that would overlap
on one track go to a second lane (``#2``) so that every track nests properly.

Rows of the window are chosen in SQL and read a batch at a time; events are written as they
are made, and the thread names (``ph: M``) come last, once every track is known, so that a
whole run's trace does not have to fit in memory.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import duckdb

from pipeline import __version__
from pipeline.jobs.build import connect, staging_storage, staging_table_kind
from pipeline.warehouse.contracts import RAW_TABLES
from pipeline.errors import UsageError
from pipeline.outputs.formats import atomic_write
from pipeline.limits import DEFAULT_MEMORY_LIMIT
from pipeline.warehouse.raw_reads import raw_select
from pipeline.analysis.selection import run_row
from pipeline.jobs.transforms import run_layer
from pipeline.warehouse.store import Warehouse

HOST_DEVICE = 64
_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)?\s*$")
_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, None: 1}

_TASKS_SQL = """
with instances as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select *, coalesce(running_ns, pending_ns, waiting_ns, complete_ns) as start_ns
    from stg_task_instances
    where {where}
),
task_keys as (
    -- the launches and descriptions of these tasks only (pipeline/jobs/transforms.py: filter before an ASOF join)
    select distinct device_id, stream_id, task_id from instances
),
with_api as (
    select
        instances.*,
        launches.api_name,
        launches.call_device_id,
        launches.call_tid,
        launches.start_ns as call_start_ns,
        launches.end_ns as call_end_ns
    from instances
    asof left join (
        select * from stg_task_launches semi join task_keys using (device_id, stream_id, task_id)
    ) as launches
        on instances.device_id = launches.device_id
        and instances.stream_id = launches.stream_id
        and instances.task_id = launches.task_id
        and instances.start_ns >= launches.start_ns
)
select
    with_api.device_id, with_api.record_kind, with_api.stream_id, with_api.task_id,
    with_api.instance_no, with_api.task_type_name, with_api.waiting_ns, with_api.pending_ns,
    with_api.running_ns, with_api.complete_ns, with_api.is_complete, with_api.api_name,
    with_api.call_device_id, with_api.call_tid, with_api.call_start_ns, with_api.call_end_ns,
    ops.op_name, ops.op_type
from with_api
asof left join (
    select * from stg_task_ops semi join task_keys using (device_id, stream_id, task_id)
) as ops
    on with_api.device_id = ops.device_id
    and with_api.stream_id = ops.stream_id
    and with_api.task_id = ops.task_id
    and with_api.start_ns >= ops.valid_from_ns
order by with_api.device_id, coalesce(with_api.stream_id, 0), with_api.start_ns, with_api.stream_id nulls last,
    with_api.task_id, with_api.instance_no
"""

# rows fetched from DuckDB at a time while the trace is written
BATCH_ROWS = 50_000


def parse_duration(text: str) -> int:
    """ns from ``250``, ``250ns``, ``1.5us``, ``3ms`` or ``2s``."""
    m = _DURATION.match(text)
    if not m:
        raise UsageError(f"{text!r} is not a duration: use e.g. 250ns, 1.5us, 3ms, 2s")
    return int(round(float(m.group(1)) * _NS[m.group(2)]))


@dataclass
class _Tracks:
    """Track (thread) ids per device, with lanes so that no two events overlap on a track."""

    names: dict[tuple[int, str], int] = field(default_factory=dict)  # (pid, track name) -> tid
    order: dict[tuple[int, int], int] = field(default_factory=dict)  # (pid, tid) -> sort index
    lane_ends: dict[tuple[int, str], list[int]] = field(default_factory=dict)

    def tid(self, pid: int, name: str, sort: int) -> int:
        key = (pid, name)
        if key not in self.names:
            self.names[key] = len(self.names) + 1
            self.order[(pid, self.names[key])] = sort
        return self.names[key]

    def place(self, pid: int, name: str, sort: int, start: int, end: int) -> int:
        """The tid of the first lane of track ``name`` free at ``start`` (events come in start order)."""
        ends = self.lane_ends.setdefault((pid, name), [])
        for i, lane_end in enumerate(ends):
            if start >= lane_end:
                ends[i] = end
                return self.tid(pid, name if i == 0 else f"{name} #{i + 1}", sort + i)
        ends.append(end)
        i = len(ends) - 1
        return self.tid(pid, name if i == 0 else f"{name} #{i + 1}", sort + i)

    def metadata(self, devices: list[int]) -> list[dict]:
        out = []
        for d in devices:
            name = "Host" if d == HOST_DEVICE else f"Device {d}"
            out.append({"ph": "M", "name": "process_name", "pid": d, "tid": 0, "args": {"name": name}})
            out.append({"ph": "M", "name": "process_sort_index", "pid": d, "tid": 0, "args": {"sort_index": d}})
        for (pid, name), tid in sorted(self.names.items(), key=lambda kv: kv[1]):
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
            out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                        "args": {"sort_index": self.order[(pid, tid)]}})
        return out


def _us(ns: int) -> float:
    return ns / 1000


# the staging tables the trace reads
_STAGING = {"stg_api_calls", "stg_task_instances", "stg_task_launches", "stg_task_ops"}


def _connect_run(wh: Warehouse, run: dict, workdir: Path, memory_limit: str, threads: int | None) -> duckdb.DuckDBPyConnection:
    """The run's raw tables as the build sees them, and the staging tables the trace needs,
    in a DuckDB that spills to ``workdir`` beyond ``memory_limit`` (the build's by default)."""
    con = connect(workdir, memory_limit, threads)
    for table in RAW_TABLES:
        con.execute(f"create view {table} as {raw_select(wh, table, run)}")
    run_layer(con, "staging", only=_STAGING, stored_as=staging_table_kind(staging_storage(con, run)))
    return con


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None = None) -> Iterator[dict]:
    """The rows of ``sql`` as dicts, read from DuckDB a batch at a time."""
    for batch in con.sql(sql, params=params).to_arrow_reader(BATCH_ROWS):
        yield from batch.to_pylist()


# rows that can overlap the window [$lo, $hi] (either end NULL: open), found in SQL so that only
# the window's rows reach Python; the exact test per event is _overlaps
_WINDOW = "(start_ns is not null and ($lo is null or coalesce(end_ns, start_ns) >= $lo) and ($hi is null or start_ns <= $hi))"
_TASK_WINDOW = ("(($lo is null or greatest(waiting_ns, pending_ns, running_ns, complete_ns) >= $lo) "
                "and ($hi is null or least(waiting_ns, pending_ns, running_ns, complete_ns) <= $hi))")


def _overlaps(start: int | None, end: int | None, lo: int | None, hi: int | None) -> bool:
    if start is None:
        return False
    end = start if end is None else end
    return (lo is None or end >= lo) and (hi is None or start <= hi)


@contextmanager
def _trace(wh: Warehouse, run_ref: str, start: str | None, end: str | None, inference: int | None,
           devices: list[int] | None, memory_limit: str, threads: int | None) -> Iterator[tuple[dict, Iterator[dict]]]:
    """(the trace's otherData, its events as a lazy stream; thread names and sort indexes
    last, once every track is known). The run's staging tables live in a DuckDB that spills,
    rows come from it a batch at a time and events go out as they are made: memory holds
    the tracks (and the rare runtime call placed on a track's second lane), not the run."""
    run = run_row(wh, run_ref)
    lo_off = parse_duration(start) if start else None
    hi_off = parse_duration(end) if end else None
    with tempfile.TemporaryDirectory(prefix="profetl-timeline-") as workdir:
        con = _connect_run(wh, run, Path(workdir), memory_limit, threads)
        try:
            devs = "true" if not devices else "device_id in (" + ", ".join(str(int(d)) for d in devices) + ")"
            phases = list(_rows(con, "select device_id, model_name, infer_id, phase, start_ns, end_ns, seq from inferences"
                                     f" where {devs} order by device_id, start_ns, seq"))
            t0 = con.execute(f"""
                select min(first_ns) from (
                    select min(start_ns) as first_ns from stg_api_calls where {devs}
                    union all select min(start_ns) from inferences where {devs}
                    union all select min(least(waiting_ns, pending_ns, running_ns)) from stg_task_instances where {devs}
                )""").fetchall()[0][0] or 0
            lo = t0 + lo_off if lo_off is not None else None
            hi = t0 + hi_off if hi_off is not None else None
            if inference is not None:
                span = [(p["start_ns"], p["end_ns"]) for p in phases if p["infer_id"] == inference]
                if not span:
                    raise UsageError(f"run {run['run_id']} has no inference {inference}")
                lo = max(lo or -2**63, min(s for s, _ in span))
                hi = min(hi if hi is not None else 2**63, max(e for _, e in span))
            if lo is not None and hi is not None and hi < lo:
                raise UsageError("the window ends before it starts")
            other = {"run_id": run["run_id"], "workload": run["workload"], "source_path": run["source_path"],
                     "clock": "run timeline (host monotonic raw), ts = ns / 1000",
                     "window_ns": [lo, hi], "generator": f"profetl {__version__}"}
            yield other, _events(con, devs, devices, phases, lo, hi)
        finally:
            con.close()


def _api_track(level: str, tid) -> tuple[str, int]:
    label = "AscendCL API" if level == "acl" else "Runtime API" if level == "runtime" else f"{level} API"
    return f"{label} (tid {tid})", 100 if level == "acl" else 200


def _events(con: duckdb.DuckDBPyConnection, devs: str, devices: list[int] | None, phases: list[dict],
            lo: int | None, hi: int | None) -> Iterator[dict]:
    tracks = _Tracks()
    pids: set[int] = set()
    window = {"lo": lo, "hi": hi}
    # runtime calls placed on a second lane of their track, by (device, thread, start): an arrow
    # from such a call needs its lane; every other call is on its track's first lane
    moved: dict[tuple[int, int, int], int] = {}
    for c in _rows(con, f"select * from stg_api_calls where {devs} and {_WINDOW} order by device_id, start_ns, seq", window):
        if not _overlaps(c["start_ns"], c["end_ns"], lo, hi):
            continue
        name, sort = _api_track(c["level"], c["tid"])
        tid = tracks.place(c["device_id"], name, sort, c["start_ns"], c["end_ns"])
        if c["level"] == "runtime" and tid != tracks.names[(c["device_id"], name)]:
            moved[(c["device_id"], c["tid"], c["start_ns"])] = tid
        args = {k: c[k] for k in ("api_type", "pid", "tid", "stream_id", "seq") if c.get(k) is not None}
        pids.add(c["device_id"])
        yield {"ph": "X", "cat": "api", "name": c["api_name"], "ts": _us(c["start_ns"]),
               "dur": _us(c["end_ns"] - c["start_ns"]), "pid": c["device_id"], "tid": tid, "args": args}
    for p in phases:
        if not _overlaps(p["start_ns"], p["end_ns"], lo, hi):
            continue
        name = f"{p['model_name'] or 'model'} load" if p["phase"] == "load" else f"infer {p['infer_id']} {p['phase']}"
        tid = tracks.place(p["device_id"], "Inferences", 300, p["start_ns"], p["end_ns"])
        pids.add(p["device_id"])
        yield {"ph": "X", "cat": "inference", "name": name, "ts": _us(p["start_ns"]),
               "dur": _us(p["end_ns"] - p["start_ns"]), "pid": p["device_id"], "tid": tid,
               "args": {"model_name": p["model_name"], "infer_id": p["infer_id"], "phase": p["phase"]}}
    flow = 0
    for t in _rows(con, _TASKS_SQL.format(where=f"{devs} and {_TASK_WINDOW}"), window):
        name = t["op_name"] or t["task_type_name"] or f"task {t['task_id']}"
        args = {k: t[k] for k in ("stream_id", "task_id", "instance_no", "task_type_name", "op_name", "op_type",
                                  "api_name", "record_kind") if t.get(k) is not None}
        stream = f"Stream {t['stream_id']}"
        sort = 1000 + 100 * int(t["stream_id"] or 0)
        begin = t["running_ns"] if t["running_ns"] is not None else t["pending_ns"]
        if not t["is_complete"] or begin is None:
            last = max(x for x in (t["waiting_ns"], t["pending_ns"], t["running_ns"], t["complete_ns"]) if x is not None)
            if not _overlaps(last, last, lo, hi):
                continue
            tid = tracks.place(t["device_id"], f"{stream} tasks", sort, last, last)
            kind = "no COMPLETE" if not t["is_complete"] else "no RUNNING or PENDING"
            pids.add(t["device_id"])
            yield {"ph": "i", "s": "t", "cat": "task", "name": f"{name} ({kind})", "ts": _us(last),
                   "pid": t["device_id"], "tid": tid, "args": args}
            continue
        if not _overlaps(begin, t["complete_ns"], lo, hi):
            continue
        tid = tracks.place(t["device_id"], f"{stream} tasks", sort, begin, t["complete_ns"])
        pids.add(t["device_id"])
        yield {"ph": "X", "cat": "task", "name": name, "ts": _us(begin),
               "dur": _us(t["complete_ns"] - begin), "pid": t["device_id"], "tid": tid,
               "args": args | {k: t[k] for k in ("waiting_ns", "pending_ns", "running_ns", "complete_ns")}}
        # an arrow from the launching runtime call, when that call is in the trace
        call_dev = t["call_device_id"]
        if call_dev is not None and (not devices or call_dev in devices) \
                and _overlaps(t["call_start_ns"], t["call_end_ns"], lo, hi):
            call_tid = (moved.get((call_dev, t["call_tid"], t["call_start_ns"]))
                        or tracks.names.get((call_dev, _api_track("runtime", t["call_tid"])[0])))
        else:
            call_tid = None
        if call_tid is not None:
            flow += 1
            yield {"ph": "s", "cat": "launch", "name": "launch", "id": flow, "ts": _us(t["call_start_ns"]),
                   "pid": call_dev, "tid": call_tid}
            yield {"ph": "f", "bp": "e", "cat": "launch", "name": "launch", "id": flow, "ts": _us(begin),
                   "pid": t["device_id"], "tid": tid}
        states = [("waiting", t["waiting_ns"]), ("pending", t["pending_ns"]), ("running", t["running_ns"])]
        marks = sorted([(ts, s) for s, ts in states if ts is not None] + [(t["complete_ns"], "complete")])
        for (ts, state), (nxt, _) in zip(marks, marks[1:]):
            if state == "complete" or nxt <= ts:
                continue
            sid = tracks.place(t["device_id"], f"{stream} task states", sort + 50, ts, nxt)
            yield {"ph": "X", "cat": "task_state", "name": state, "ts": _us(ts), "dur": _us(nxt - ts),
                   "pid": t["device_id"], "tid": sid, "args": {"op_name": t["op_name"], "task_id": t["task_id"]}}
    yield from tracks.metadata(sorted(pids))


def write_trace(wh: Warehouse, out: str, run_ref: str = "latest", start: str | None = None, end: str | None = None,
                inference: int | None = None, devices: list[int] | None = None,
                memory_limit: str = DEFAULT_MEMORY_LIMIT, threads: int | None = None) -> tuple[str, int]:
    """The run as a Trace Event JSON object written to ``out`` event by event (``-``
    standard output; a ``.gz`` name is gzipped; a file appears whole or not at all); returns
    (run id, events written, thread names and sort indexes not counted). ``start`` / ``end`` are
    offsets from the run's first event (``3ms``); ``inference`` limits it to that inference's
    span on every device."""
    with _trace(wh, run_ref, start, end, inference, devices, memory_limit, threads) as (other, events):
        count = 0

        def write(f: TextIO) -> None:
            nonlocal count
            f.write('{"traceEvents":[')
            for i, e in enumerate(events):
                f.write(("," if i else "") + json.dumps(e, separators=(",", ":")))
                count += e["ph"] != "M"
            f.write('],"displayTimeUnit":"ns","otherData":' + json.dumps(other, separators=(",", ":")) + "}\n")

        if out == "-":
            write(sys.stdout)
            sys.stdout.flush()
        elif out.endswith(".gz"):
            def write_gz(p: Path) -> None:
                with open(p, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz, \
                        io.TextIOWrapper(gz, encoding="utf-8") as f:
                    write(f)

            atomic_write(Path(out), write_gz)
        else:
            atomic_write(Path(out), lambda p: _write_text_file(p, write))
        return other["run_id"], count


def _write_text_file(p: Path, write) -> None:
    with open(p, "w", encoding="utf-8") as f:
        write(f)
