"""A run (or a time window of it) as a Chrome trace that Perfetto UI and chrome://tracing open.

Trace Event format (JSON object form): every event has ``ph``, ``ts`` in microseconds
after the trace's origin (the run's first event: ``otherData.ts_origin_ns``, so
``ts * 1000 + ts_origin_ns`` is the ``start_ns`` of the tables; relative times keep every
nanosecond as an exact decimal, where absolute wall-clock microseconds would lose digits in
a float), ``pid`` and ``tid``; complete events (``ph: X``) have ``dur``. One process per
device; its tracks (threads), in this order:

* ``AscendCL API (tid T)``, ``Runtime API (tid T)``, ...: one X event per API call
* ``Inferences``: model loads and the input / infer / output phase of each inference
* ``Stream S tasks``: one X event per completed task instance, RUNNING (else PENDING)
  to COMPLETE, as the Task Scheduler table times it; an instance that never completed
  is an instant event (``ph: i``) at its last state
* ``Stream S waiting`` / ``pending`` / ``running``: each instance's interval in that state
  (one track per state, so that a task's states never meet on a track)
* flow arrows (``ph: s`` / ``f``) from a Runtime API call to the tasks it launched

Task instances, their ops and launching APIs come from the same SQL as the reports: the
staging tables and ``int_task_executions`` (``sql/intermediate``), made by the build's own
code (pipeline.jobs.transforms.run_table_layers), so the trace and the tables agree.

Every track is a row of slices that never overlap nor touch: a slice that would start
before (or exactly when) the track's last slice ends goes to the track's next lane
(``#2``, ``#3``, ...). Viewers that turn complete events into begin / end pairs in floating
point (speedscope) would otherwise see a slice end after its neighbour began. A track's
tid is its place in the order above (``thread_sort_index`` says the same, for viewers
that read it), so viewers that sort tracks by tid show the same order.

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
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

import duckdb

from pipeline import __version__
from pipeline.jobs.build import connect, staging_storage, staging_table_kind
from pipeline.warehouse.contracts import RAW_TABLES
from pipeline.errors import UsageError
from pipeline.outputs.export import WALL_CLOCK_NS
from pipeline.outputs.formats import atomic_write
from pipeline.warehouse.raw_reads import raw_select
from pipeline.analysis.selection import run_row
from pipeline.jobs.transforms import run_table_layers
from pipeline.warehouse.store import Warehouse

HOST_DEVICE = 64
_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)?\s*$")
_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, None: 1}

# the task instances with their launching call and operator, as the marts see them
_TASKS_SQL = """
select
    device_id, record_kind, stream_id, task_id, instance_no, task_type_name, waiting_ns, pending_ns,
    running_ns, complete_ns, is_complete, api_name, call_device_id, call_tid, call_start_ns, call_end_ns,
    op_name, op_type
from int_task_executions
where {where}
order by device_id, coalesce(stream_id, 0), start_ns, stream_id nulls last, task_id, instance_no
"""

# rows fetched from DuckDB at a time while the trace is written
BATCH_ROWS = 50_000


def parse_duration(text: str) -> int:
    """ns from ``250``, ``250ns``, ``1.5us``, ``3ms`` or ``2s``."""
    m = _DURATION.match(text)
    if not m:
        raise UsageError(f"{text!r} is not a duration: use e.g. 250ns, 1.5us, 3ms, 2s")
    return int(round(float(m.group(1)) * _NS[m.group(2)]))


# a track's tid: its group's base (API levels, inferences, then per stream: tasks and the three
# states) plus the lane; a group has room for LANES lanes
LANES = 1000
_API_RANK = {"acl": 1, "model": 2, "node": 3, "runtime": 4}
_STATE_RANK = {"waiting": 1, "pending": 2, "running": 3}


@dataclass
class _Tracks:
    """Track (thread) ids per device, with lanes so that no two slices overlap or touch on a track."""

    names: dict[tuple[int, str], int] = field(default_factory=dict)  # (pid, track name) -> tid
    lane_ends: dict[tuple[int, str], list[int]] = field(default_factory=dict)
    api_threads: dict[tuple[int, str], dict] = field(default_factory=dict)  # (pid, level) -> {host tid: index}

    def api_base(self, pid: int, level: str, host_tid) -> int:
        threads = self.api_threads.setdefault((pid, level), {})
        k = threads.setdefault(host_tid, len(threads))
        return _API_RANK.get(level, 5) * 100 * LANES + k * LANES

    def place(self, pid: int, name: str, base: int, start: int, end: int) -> int:
        """The tid of the first lane of track ``name`` whose last slice ended before ``start``
        (strictly: touching slices go to different lanes; slices come in start order)."""
        ends = self.lane_ends.setdefault((pid, name), [])
        for i, lane_end in enumerate(ends):
            if start > lane_end:
                ends[i] = end
                break
        else:
            ends.append(end)
            i = len(ends) - 1
        if i >= LANES:
            raise UsageError(f"track {name!r} of device {pid} needs more than {LANES} lanes: choose a shorter window")
        lane = name if i == 0 else f"{name} #{i + 1}"
        self.names[(pid, lane)] = base + i
        return base + i

    def metadata(self, devices: list[int]) -> list[dict]:
        out = []
        for d in devices:
            name = "Host" if d == HOST_DEVICE else f"Device {d}"
            out.append({"ph": "M", "name": "process_name", "pid": d, "tid": 0, "args": {"name": name}})
            out.append({"ph": "M", "name": "process_sort_index", "pid": d, "tid": 0, "args": {"sort_index": d}})
        for (pid, name), tid in sorted(self.names.items(), key=lambda kv: (kv[0][0], kv[1])):
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
            out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
        return out


def _stream_base(stream_id, kind: int) -> int:
    return 1000 * LANES + int(stream_id or 0) * 10 * LANES + kind * LANES


def _us(ns: int) -> float:
    """ns as microseconds: exact to the nanosecond in the shortest decimal text for any span
    under 2**53 ns (104 days), as ts relative to the origin always is."""
    return ns / 1000


# the staging and intermediate tables the trace reads, with those they are made from
_TABLES = {"stg_api_calls", "stg_task_instances", "stg_task_launches", "stg_task_ops", "int_op_keys",
           "int_task_executions"}


def _connect_run(wh: Warehouse, run: dict, workdir: Path, memory_limit: str | None, threads: int | None) -> duckdb.DuckDBPyConnection:
    """The run's raw tables as the build sees them, and the staging and intermediate tables
    the trace needs, made as a build makes them, in a DuckDB that spills to ``workdir``
    beyond ``memory_limit`` (the build's by default)."""
    con = connect(workdir, memory_limit, threads)
    for table in RAW_TABLES:
        con.execute(f"create view {table} as {raw_select(wh, table, run)}")
    # each task instance with its own launching call (for the arrows), not only its API name:
    # int_task_executions reads this variable
    con.execute("set variable task_calls = true")
    run_table_layers(con, only=_TABLES, stored_as=staging_table_kind(staging_storage(con, run)))
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


@dataclass
class _Window:
    """The window [lo, hi] in run ns (either end None: open), per device with ``--inference``:
    that inference's span on each device (a device without it has no window)."""

    lo: int | None = None
    hi: int | None = None
    per_device: dict[int, tuple[int, int]] | None = None

    def bounds(self, device: int) -> tuple[int | None, int | None] | None:
        if self.per_device is None:
            return self.lo, self.hi
        return self.per_device.get(device)

    def keeps(self, device: int, start: int | None, end: int | None) -> bool:
        b = self.bounds(device)
        return b is not None and _overlaps(start, end, *b)


def _clock(t0: int) -> str:
    if t0 >= WALL_CLOCK_NS:
        when = datetime.fromtimestamp(t0 // 10**9, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        return (f"wall clock (UTC): ts = (time - origin) in us, origin {t0} ns since the Unix epoch "
                f"({when}.{t0 % 10**9:09d}Z)")
    return f"host monotonic raw clock: ts = (time - origin) in us, origin {t0} ns on that clock"


@contextmanager
def _trace(wh: Warehouse, run_ref: str, start: str | None, end: str | None, inference: int | None,
           devices: list[int] | None, memory_limit: str | None, threads: int | None) -> Iterator[tuple[dict, Iterator[dict]]]:
    """(the trace's otherData, its events as a lazy stream; thread names and sort indexes
    last, once every track is known). The run's tables live in a DuckDB that spills,
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
            window = _Window(t0 + lo_off if lo_off is not None else None, t0 + hi_off if hi_off is not None else None)
            if inference is not None:
                # each device's own inference N: devices run their inferences at different times
                spans: dict[int, tuple[int, int]] = {}
                for p in phases:
                    if p["infer_id"] == inference:
                        s0, e0 = spans.get(p["device_id"], (p["start_ns"], p["end_ns"]))
                        spans[p["device_id"]] = (min(s0, p["start_ns"]), max(e0, p["end_ns"]))
                if not spans:
                    raise UsageError(f"run {run['run_id']} has no inference {inference}")
                window.per_device = {
                    d: (max(window.lo if window.lo is not None else s0, s0), min(window.hi if window.hi is not None else e0, e0))
                    for d, (s0, e0) in spans.items()}
                window.lo = min(lo for lo, _ in window.per_device.values())
                window.hi = max(hi for _, hi in window.per_device.values())
            if window.lo is not None and window.hi is not None and window.hi < window.lo:
                raise UsageError("the window ends before it starts")
            other = {"run_id": run["run_id"], "workload": run["workload"], "source_path": run["source_path"],
                     "clock": _clock(t0), "ts_origin_ns": t0, "window_ns": [window.lo, window.hi],
                     "generator": f"profetl {__version__}"}
            if window.per_device is not None:
                other["window_ns_by_device"] = {str(d): list(b) for d, b in sorted(window.per_device.items())}
            yield other, _events(con, devs, devices, phases, window, t0)
        finally:
            con.close()


def _api_track(level: str, tid) -> str:
    label = "AscendCL API" if level == "acl" else "Runtime API" if level == "runtime" else f"{level} API"
    return f"{label} (tid {tid})"


def _events(con: duckdb.DuckDBPyConnection, devs: str, devices: list[int] | None, phases: list[dict],
            window: _Window, t0: int) -> Iterator[dict]:
    tracks = _Tracks()
    pids: set[int] = set()
    params = {"lo": window.lo, "hi": window.hi}

    def ts(ns: int) -> float:
        return _us(ns - t0)

    # runtime calls placed on a later lane of their track, by (device, thread, start): an arrow
    # from such a call needs its lane; every other call is on its track's first lane
    moved: dict[tuple[int, int, int], int] = {}
    for c in _rows(con, f"select * from stg_api_calls where {devs} and {_WINDOW} order by device_id, start_ns, seq", params):
        if not window.keeps(c["device_id"], c["start_ns"], c["end_ns"]):
            continue
        name = _api_track(c["level"], c["tid"])
        base = tracks.api_base(c["device_id"], c["level"], c["tid"])
        tid = tracks.place(c["device_id"], name, base, c["start_ns"], c["end_ns"])
        if c["level"] == "runtime" and tid != base:
            moved[(c["device_id"], c["tid"], c["start_ns"])] = tid
        args = {k: c[k] for k in ("api_type", "pid", "tid", "stream_id", "seq") if c.get(k) is not None}
        pids.add(c["device_id"])
        yield {"ph": "X", "cat": "api", "name": c["api_name"], "ts": ts(c["start_ns"]),
               "dur": _us(c["end_ns"] - c["start_ns"]), "pid": c["device_id"], "tid": tid, "args": args}
    for p in phases:
        if not window.keeps(p["device_id"], p["start_ns"], p["end_ns"]):
            continue
        name = f"{p['model_name'] or 'model'} load" if p["phase"] == "load" else f"infer {p['infer_id']} {p['phase']}"
        tid = tracks.place(p["device_id"], "Inferences", 900 * LANES, p["start_ns"], p["end_ns"])
        pids.add(p["device_id"])
        yield {"ph": "X", "cat": "inference", "name": name, "ts": ts(p["start_ns"]),
               "dur": _us(p["end_ns"] - p["start_ns"]), "pid": p["device_id"], "tid": tid,
               "args": {"model_name": p["model_name"], "infer_id": p["infer_id"], "phase": p["phase"]}}
    flow = 0
    for t in _rows(con, _TASKS_SQL.format(where=f"{devs} and {_TASK_WINDOW}"), params):
        name = t["op_name"] or t["task_type_name"] or f"task {t['task_id']}"
        args = {k: t[k] for k in ("stream_id", "task_id", "instance_no", "task_type_name", "op_name", "op_type",
                                  "api_name", "record_kind") if t.get(k) is not None}
        stream = f"Stream {t['stream_id']}"
        begin = t["running_ns"] if t["running_ns"] is not None else t["pending_ns"]
        if not t["is_complete"] or begin is None:
            last = max(x for x in (t["waiting_ns"], t["pending_ns"], t["running_ns"], t["complete_ns"]) if x is not None)
            if not window.keeps(t["device_id"], last, last):
                continue
            tid = tracks.place(t["device_id"], f"{stream} tasks", _stream_base(t["stream_id"], 0), last, last)
            kind = "no COMPLETE" if not t["is_complete"] else "no RUNNING or PENDING"
            pids.add(t["device_id"])
            yield {"ph": "i", "s": "t", "cat": "task", "name": f"{name} ({kind})", "ts": ts(last),
                   "pid": t["device_id"], "tid": tid, "args": args}
            continue
        if not window.keeps(t["device_id"], begin, t["complete_ns"]):
            continue
        tid = tracks.place(t["device_id"], f"{stream} tasks", _stream_base(t["stream_id"], 0), begin, t["complete_ns"])
        pids.add(t["device_id"])
        states = [("waiting", t["waiting_ns"]), ("pending", t["pending_ns"]), ("running", t["running_ns"])]
        marks = sorted([(x, s) for s, x in states if x is not None] + [(t["complete_ns"], "complete")])
        # how long the instance spent in each state (ns), not when it entered it
        spent = {f"{state}_dur_ns": nxt - x for (x, state), (nxt, _) in zip(marks, marks[1:]) if state != "complete"}
        yield {"ph": "X", "cat": "task", "name": name, "ts": ts(begin),
               "dur": _us(t["complete_ns"] - begin), "pid": t["device_id"], "tid": tid, "args": args | spent}
        # an arrow from the launching runtime call, when that call is in the trace
        call_dev = t["call_device_id"]
        if call_dev is not None and (not devices or call_dev in devices) \
                and window.keeps(call_dev, t["call_start_ns"], t["call_end_ns"]):
            call_tid = (moved.get((call_dev, t["call_tid"], t["call_start_ns"]))
                        or tracks.names.get((call_dev, _api_track("runtime", t["call_tid"]))))
        else:
            call_tid = None
        if call_tid is not None:
            flow += 1
            yield {"ph": "s", "cat": "launch", "name": "launch", "id": flow, "ts": ts(t["call_start_ns"]),
                   "pid": call_dev, "tid": call_tid}
            yield {"ph": "f", "bp": "e", "cat": "launch", "name": "launch", "id": flow, "ts": ts(begin),
                   "pid": t["device_id"], "tid": tid}
        for (x, state), (nxt, _) in zip(marks, marks[1:]):
            if state == "complete" or nxt <= x:
                continue
            sid = tracks.place(t["device_id"], f"{stream} {state}", _stream_base(t["stream_id"], _STATE_RANK[state]), x, nxt)
            yield {"ph": "X", "cat": "task_state", "name": state, "ts": ts(x), "dur": _us(nxt - x),
                   "pid": t["device_id"], "tid": sid, "args": {"op_name": t["op_name"], "task_id": t["task_id"]}}
    yield from tracks.metadata(sorted(pids))


def write_trace(wh: Warehouse, out: str, run_ref: str = "latest", start: str | None = None, end: str | None = None,
                inference: int | None = None, devices: list[int] | None = None,
                memory_limit: str | None = None, threads: int | None = None) -> tuple[str, int]:
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
