"""A run (or a time window of it) as a Chrome trace that Perfetto UI and chrome://tracing open.

Trace Event format (JSON object form): every event has ``ph``, ``ts`` in microseconds
after the trace's origin (the run's first event: ``otherData.ts_origin_ns``, so
``ts * 1000 + ts_origin_ns`` is the ``start_ns`` of the tables; relative times keep every
nanosecond as an exact decimal, where absolute wall-clock microseconds would lose digits in
a float), ``pid`` and ``tid``; complete events (``ph: X``) have ``dur``. One process per
device; its tracks (threads), in this order:

* ``Host API (tid T)``: one X event per API call of host thread T, of every level (AscendCL,
  model, node, runtime), so that calls nest as they nest in time: an ``aclmdlExecute`` holds
  its ``ModelExecute``, which holds the node launches and their runtime calls
* ``Inferences``: model loads, and each inference (input start to output end) holding its
  input / infer / output phases, numbered as the top-down table numbers them
  (``stg_model_phases``: GE's records, or the model-level API records of PROF_* dumps)
* ``Stream S tasks``: the device's inferences again, and inside them one X event per
  completed task instance, RUNNING (else PENDING) to COMPLETE, as the Task Scheduler table
  times it; an instance that never completed is an instant event (``ph: i``) at its last state
* ``Stream S waiting`` / ``pending`` / ``running``: each instance's interval in that state
  (one track per state, so that a task's states never meet on a track)
* flow arrows (``ph: s`` / ``f``) from a Runtime API call to the tasks it launched

A slice's name is its function: the API, the op (else the task type), the phase, the model's
inference; what tells calls or instances apart (inference number, stream and task id,
instance number, seq, durations) is in its args, so that viewers that group slices by name
(Perfetto UI's aggregations) merge the calls of one API and the instances of one op.
speedscope takes name and args together for a function: ``instance_args=False``
(``--speedscope``) writes no args, and its Left Heavy and Sandwich views merge them too.

Task instances, their ops and launching APIs come from the same SQL as the reports: the
staging tables and ``int_task_executions`` (``sql/intermediate``), made by the build's own
code (pipeline.jobs.transforms.run_table_layers), so the trace and the tables agree.

The slices of a track nest or are apart (complete events of one thread nest when one
contains the other in time; at equal starts the longer is written to hold the other). A
slice that would cross another, or start exactly when one ends (viewers that turn complete
events into begin / end pairs in floating point, speedscope, would see one end after the
other began), goes to the track's next lane (``#2``, ``#3``, ...); only calls hold calls and
inferences hold phases and tasks: tasks never nest in tasks, nor states in states. A task on
a later lane gets its inference repeated there, so that it is still inside it. A child that
ends with its parent is written with a dur lowered by a few units in the last place where
speedscope's arithmetic (ts minus the thread's first, plus dur) would otherwise end it after
its parent: the same ns. A track's tid is its place in the order above
(``thread_sort_index`` says the same, for viewers that read it), so viewers that sort
tracks by tid show the same order.

Rows of the window are chosen in SQL and read a batch at a time; events are written as they
are made, and the thread names (``ph: M``) come last, once every track is known, so that a
whole run's trace does not have to fit in memory.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import duckdb

from pipeline import __version__
from pipeline.analysis.selection import run_row
from pipeline.errors import UsageError
from pipeline.jobs.build import connect, staging_storage, staging_table_kind
from pipeline.jobs.raw_reads import create_raw_views
from pipeline.jobs.transforms import run_table_layers
from pipeline.outputs.export import WALL_CLOCK_NS
from pipeline.outputs.formats import atomic_write
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


# a track's tid: its group's base (host threads, inferences, then per stream: tasks and the three
# states) plus the lane; a group has room for LANES lanes
LANES = 1000
_API_BASE, _API_THREADS = 100 * LANES, 800
_STATE_RANK = {"waiting": 1, "pending": 2, "running": 3}


@dataclass
class _Lane:
    """One lane (tid) of a track: its open slices, outermost first, as (end ns, speedscope's end,
    the event when it may hold others and be repeated on another lane, may hold others), the
    ts of its first slice and the end of its last."""

    first_ts: float | None = None
    open: list[tuple[int, float, dict | None, bool]] = field(default_factory=list)
    last_end: int | None = None


@dataclass
class _Tracks:
    """Track (thread) ids per device, with lanes so that the slices of a lane nest or are apart."""

    t0: int = 0
    names: dict[tuple[int, str], int] = field(default_factory=dict)  # (pid, track name) -> tid
    lanes: dict[tuple[int, str], list[_Lane]] = field(default_factory=dict)
    api_threads: dict[int, dict] = field(default_factory=dict)  # pid -> {host tid: index}
    repeated: list[dict] = field(default_factory=list)  # slices repeated on another lane, to write
    dur: float = 0.0  # the dur (us) to write for the slice placed last

    def api_base(self, pid: int, host_tid) -> int:
        threads = self.api_threads.setdefault(pid, {})
        k = threads.setdefault(host_tid, len(threads))
        if k >= _API_THREADS:
            raise UsageError(f"device {pid} has more than {_API_THREADS} host threads: choose --device")
        return _API_BASE + k * LANES

    def place(
        self,
        pid: int,
        name: str,
        base: int,
        start: int,
        end: int,
        *,
        nests: bool = False,
        holds: bool = False,
        repeat: dict | None = None,
        instant: bool = False,
    ) -> int:
        """The tid of the lane of track ``name`` for the slice [start, end] (slices of a track
        come in start order, at equal starts the longer first). ``nests``: the slice may lie
        inside an open slice that ``holds`` others: it goes to the first lane where it does,
        else to the first lane where no slice is open at ``start`` (a slice that ended exactly
        at ``start`` is still open: touching slices go to different lanes), else to a new
        lane. A slice inside another must also end no later in the floating point arithmetic
        of viewers that turn it into begin / end pairs (speedscope: ts minus the lane's first
        ts, plus dur; when both end at one ns and the doubles disagree by rounding, ``self.dur``
        is the dur lowered by the few units in the last place that make it end no later, still
        the same ns), else it goes elsewhere too. A slice that would hold it on a lane where
        it cannot go, given as ``repeat`` (its event), is repeated on the lane it goes to
        (one that was empty since that slice began, else a new one) and holds it there:
        ``self.repeated`` has the copies to write before the slice."""
        lanes = self.lanes.setdefault((pid, name), [])
        ts, dur = _us(start - self.t0), _us(end - start)
        free = inside = None  # the first lane with no slice open at start, the first it nests in
        holders: list[
            tuple[int, float, dict | None, bool]
        ] = []  # open slices of another lane that could hold it
        for i, lane in enumerate(lanes):
            while lane.open and lane.open[-1][0] < start:
                lane.open.pop()
            if not lane.open:
                free = i if free is None else free
            elif nests and inside is None:
                top_end, top_float, _, top_holds = lane.open[-1]
                if (
                    top_holds
                    and top_end > start
                    and end <= top_end
                    and _fit(ts - lane.first_ts, dur, top_float) is not None
                ):
                    inside = i
                elif not holders:
                    holders = [o for o in lane.open if o[2] is not None and o[0] > start and end <= o[0]]
        copies = []
        if inside is None and holders:
            outer = holders[0][2]
            since = _ns(outer["ts"]) + self.t0
            i = next(
                (
                    i
                    for i, lane in enumerate(lanes)
                    if not lane.open and (lane.last_end is None or lane.last_end < since)
                ),
                len(lanes),
            )
            copies = holders
        else:
            i = inside if inside is not None else free if free is not None else len(lanes)
        if i == len(lanes):
            lanes.append(_Lane())
        if i >= LANES:
            raise UsageError(
                f"track {name!r} of device {pid} needs more than {LANES} lanes: choose a shorter window"
            )
        lane = lanes[i]
        for o_end, _, event, _ in copies:
            o_ts, o_dur = event["ts"], event["dur"]
            if lane.first_ts is None:
                lane.first_ts = o_ts
            lane.open.append((o_end, (o_ts - lane.first_ts) + o_dur, event, True))
            self.repeated.append(event | {"tid": base + i})
        if lane.first_ts is None and not instant:  # speedscope reads complete events only
            lane.first_ts = ts
        b = ts - (lane.first_ts or 0.0)
        if lane.open:
            dur = _fit(b, dur, lane.open[-1][1]) or dur
        self.dur = dur
        lane.open.append((end, b + dur, repeat, holds))
        lane.last_end = end if lane.last_end is None else max(lane.last_end, end)
        self.names[(pid, name if i == 0 else f"{name} #{i + 1}")] = base + i
        return base + i

    def take_repeated(self) -> list[dict]:
        out, self.repeated = self.repeated, []
        return out

    def metadata(self, devices: list[int]) -> list[dict]:
        out = []
        for d in devices:
            name = "Host" if d == HOST_DEVICE else f"Device {d}"
            out.append({"ph": "M", "name": "process_name", "pid": d, "tid": 0, "args": {"name": name}})
            out.append(
                {"ph": "M", "name": "process_sort_index", "pid": d, "tid": 0, "args": {"sort_index": d}}
            )
        for (pid, name), tid in sorted(self.names.items(), key=lambda kv: (kv[0][0], kv[1])):
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
            out.append(
                {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}}
            )
        return out


def _stream_base(stream_id, kind: int) -> int:
    return 1000 * LANES + int(stream_id or 0) * 10 * LANES + kind * LANES


def _fit(begin: float, dur: float, limit: float) -> float | None:
    """``dur``, or the closest double below it, such that ``begin + dur`` (in doubles) is at
    most ``limit``; None when that would change the ns it stands for."""
    d = dur
    while begin + d > limit:
        d = math.nextafter(d, -math.inf)
        if _ns(d) != _ns(dur):
            return None
    return d


def _ns(us: float) -> int:
    """us after the origin as ns (exact for what _us wrote)."""
    return round(us * 1000)


def _us(ns: int) -> float:
    """ns as microseconds: exact to the nanosecond in the shortest decimal text for any span
    under 2**53 ns (104 days), as ts relative to the origin always is."""
    return ns / 1000


# the staging and intermediate tables the trace reads, with those they are made from
_TABLES = {
    "stg_api_calls",
    "stg_model_phases",
    "stg_task_instances",
    "stg_task_launches",
    "stg_task_ops",
    "int_op_keys",
    "int_task_executions",
}


def _connect_run(
    wh: Warehouse, run: dict, workdir: Path, memory_limit: str | None, threads: int | None
) -> duckdb.DuckDBPyConnection:
    """The run's raw tables as the build sees them, and the staging and intermediate tables
    the trace needs, made as a build makes them, in a DuckDB that spills to ``workdir``
    beyond ``memory_limit`` (the build's by default)."""
    con = connect(workdir, memory_limit, threads)
    create_raw_views(con, wh, run)
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
_TASK_WINDOW = (
    "(($lo is null or greatest(waiting_ns, pending_ns, running_ns, complete_ns) >= $lo) "
    "and ($hi is null or least(waiting_ns, pending_ns, running_ns, complete_ns) <= $hi))"
)


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
        when = datetime.fromtimestamp(t0 // 10**9, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        return (
            f"wall clock (UTC): ts = (time - origin) in us, origin {t0} ns since the Unix epoch "
            f"({when}.{t0 % 10**9:09d}Z)"
        )
    return f"host monotonic raw clock: ts = (time - origin) in us, origin {t0} ns on that clock"


@contextmanager
def _trace(
    wh: Warehouse,
    run_ref: str,
    start: str | None,
    end: str | None,
    inference: int | None,
    devices: list[int] | None,
    memory_limit: str | None,
    threads: int | None,
    instance_args: bool = True,
) -> Iterator[tuple[dict, Iterator[dict]]]:
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
            # an inference's phases as the top-down table numbers them (stg_model_phases: GE's
            # records, or the model-level API records of generations 2 and 3), and the model
            # loads GE recorded beside them
            phases = list(
                _rows(
                    con,
                    f"""select * from (
                        select device_id, model_name, infer_id, phase, start_ns, end_ns,
                            case phase when 'input' then 0 when 'infer' then 1 else 2 end as seq
                        from stg_model_phases
                        union all
                        select device_id, model_name, infer_id, phase, start_ns, end_ns, seq
                        from inferences where phase = 'load'
                    ) where {devs} order by device_id, start_ns, seq""",
                )
            )
            t0 = (
                con.execute(f"""
                select min(first_ns) from (
                    select min(start_ns) as first_ns from stg_api_calls where {devs}
                    union all select min(start_ns) from stg_model_phases where {devs}
                    union all select min(start_ns) from inferences where {devs}
                    union all select min(least(waiting_ns, pending_ns, running_ns)) from stg_task_instances where {devs}
                )""").fetchall()[0][0]
                or 0
            )
            window = _Window(
                t0 + lo_off if lo_off is not None else None, t0 + hi_off if hi_off is not None else None
            )
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
                    d: (
                        max(window.lo if window.lo is not None else s0, s0),
                        min(window.hi if window.hi is not None else e0, e0),
                    )
                    for d, (s0, e0) in spans.items()
                }
                window.lo = min(lo for lo, _ in window.per_device.values())
                window.hi = max(hi for _, hi in window.per_device.values())
            if window.lo is not None and window.hi is not None and window.hi < window.lo:
                raise UsageError("the window ends before it starts")
            other = {
                "run_id": run["run_id"],
                "workload": run["workload"],
                "source_path": run["source_path"],
                "clock": _clock(t0),
                "ts_origin_ns": t0,
                "window_ns": [window.lo, window.hi],
                "generator": f"profetl {__version__}",
            }
            if window.per_device is not None:
                other["window_ns_by_device"] = {str(d): list(b) for d, b in sorted(window.per_device.items())}
            yield other, _events(con, devs, devices, phases, window, t0, instance_args)
        finally:
            con.close()


def _api_track(tid) -> str:
    return f"Host API (tid {tid})"


def _spans(phases: list[dict]) -> dict[int, list[dict]]:
    """Each device's inferences, in start order: from the start of the first of their phases
    (input, infer, output) to the end of the last."""
    spans: dict[tuple[int, int], dict] = {}
    for p in phases:
        if p["phase"] == "load" or p["infer_id"] is None:
            continue
        x = spans.setdefault((p["device_id"], p["infer_id"]), {**p, "end_ns": p["end_ns"]})
        x["start_ns"], x["end_ns"] = min(x["start_ns"], p["start_ns"]), max(x["end_ns"], p["end_ns"])
    out: dict[int, list[dict]] = {}
    for (d, _), x in sorted(
        spans.items(), key=lambda kv: (kv[0][0], kv[1]["start_ns"], -kv[1]["end_ns"], kv[0][1])
    ):
        out.setdefault(d, []).append(x)
    return out


def _inference_name(model_name: str | None) -> str:
    return f"{model_name or 'model'} inference"


def _events(
    con: duckdb.DuckDBPyConnection,
    devs: str,
    devices: list[int] | None,
    phases: list[dict],
    window: _Window,
    t0: int,
    instance_args: bool = True,
) -> Iterator[dict]:
    tracks = _Tracks(t0)
    pids: set[int] = set()
    params = {"lo": window.lo, "hi": window.hi}

    def ts(ns: int) -> float:
        return _us(ns - t0)

    def event(e: dict, args: dict) -> dict:
        # an event's name is its function (the API, the op, the phase); what tells its calls or
        # instances apart goes in args, or nowhere when viewers would take args for the name
        return e | {"args": args} if instance_args else e

    # the calls of each host thread on one track, nested as they nest in time; runtime calls
    # placed on a later lane of their track, by (device, thread, start): an arrow from such a
    # call needs its lane; every other call is on its track's first lane
    moved: dict[tuple[int, int, int], int] = {}
    for c in _rows(
        con,
        f"select * from stg_api_calls where {devs} and {_WINDOW} order by device_id, start_ns, end_ns desc, seq",
        params,
    ):
        if not window.keeps(c["device_id"], c["start_ns"], c["end_ns"]):
            continue
        base = tracks.api_base(c["device_id"], c["tid"])
        tid = tracks.place(
            c["device_id"], _api_track(c["tid"]), base, c["start_ns"], c["end_ns"], nests=True, holds=True
        )
        if c["level"] == "runtime" and tid != base:
            moved[(c["device_id"], c["tid"], c["start_ns"])] = tid
        args = {
            k: c[k] for k in ("level", "api_type", "pid", "tid", "stream_id", "seq") if c.get(k) is not None
        }
        pids.add(c["device_id"])
        yield event(
            {
                "ph": "X",
                "cat": "api",
                "name": c["api_name"],
                "ts": ts(c["start_ns"]),
                "dur": tracks.dur,
                "pid": c["device_id"],
                "tid": tid,
            },
            args,
        )
    # each inference holds its phases; model loads beside them
    spans = _spans(phases)
    inferences = sorted(
        [{**x, "phase": None} for xs in spans.values() for x in xs] + phases,
        key=lambda p: (p["device_id"], p["start_ns"], -p["end_ns"], p["phase"] is not None, p["seq"]),
    )
    for p in inferences:
        if not window.keeps(p["device_id"], p["start_ns"], p["end_ns"]):
            continue
        whole = p["phase"] is None
        name = (
            _inference_name(p["model_name"])
            if whole
            else f"{p['model_name'] or 'model'} load"
            if p["phase"] == "load"
            else p["phase"]
        )
        tid = tracks.place(
            p["device_id"],
            "Inferences",
            900 * LANES,
            p["start_ns"],
            p["end_ns"],
            nests=not whole,
            holds=whole,
        )
        pids.add(p["device_id"])
        args = {"model_name": p["model_name"], "infer_id": p["infer_id"]} | (
            {} if whole else {"phase": p["phase"]}
        )
        yield event(
            {
                "ph": "X",
                "cat": "inference_span" if whole else "inference",
                "name": name,
                "ts": ts(p["start_ns"]),
                "dur": tracks.dur,
                "pid": p["device_id"],
                "tid": tid,
            },
            args,
        )

    # every stream's task track holds its device's inferences too, and the tasks nest in them
    todo: dict[tuple, int] = {}  # (device, stream) -> the index of its device's next inference

    def inferences_until(device: int, stream, until: int | None) -> Iterator[dict]:
        xs = spans.get(device, [])
        track = f"Stream {stream} tasks"
        i = todo.get((device, stream), 0)
        while i < len(xs) and (until is None or xs[i]["start_ns"] <= until):
            x = xs[i]
            i += 1
            if not window.keeps(device, x["start_ns"], x["end_ns"]):
                continue
            e = event(
                {
                    "ph": "X",
                    "cat": "inference_span",
                    "name": _inference_name(x["model_name"]),
                    "ts": ts(x["start_ns"]),
                    "dur": _us(x["end_ns"] - x["start_ns"]),
                    "pid": device,
                },
                {"model_name": x["model_name"], "infer_id": x["infer_id"]},
            )
            tid = tracks.place(
                device, track, _stream_base(stream, 0), x["start_ns"], x["end_ns"], holds=True, repeat=e
            )
            yield e | {"tid": tid}
        todo[(device, stream)] = i

    flow = 0
    for t in _rows(con, _TASKS_SQL.format(where=f"{devs} and {_TASK_WINDOW}"), params):
        name = t["op_name"] or t["task_type_name"] or "task"
        args = {
            k: t[k]
            for k in (
                "stream_id",
                "task_id",
                "instance_no",
                "task_type_name",
                "op_name",
                "op_type",
                "api_name",
                "record_kind",
            )
            if t.get(k) is not None
        }
        stream = f"Stream {t['stream_id']}"
        begin = t["running_ns"] if t["running_ns"] is not None else t["pending_ns"]
        if not t["is_complete"] or begin is None:
            last = max(
                x
                for x in (t["waiting_ns"], t["pending_ns"], t["running_ns"], t["complete_ns"])
                if x is not None
            )
            if not window.keeps(t["device_id"], last, last):
                continue
            yield from inferences_until(t["device_id"], t["stream_id"], last)
            tid = tracks.place(
                t["device_id"],
                f"{stream} tasks",
                _stream_base(t["stream_id"], 0),
                last,
                last,
                nests=True,
                instant=True,
            )
            yield from tracks.take_repeated()
            kind = "no COMPLETE" if not t["is_complete"] else "no RUNNING or PENDING"
            pids.add(t["device_id"])
            yield event(
                {
                    "ph": "i",
                    "s": "t",
                    "cat": "task",
                    "name": f"{name} ({kind})",
                    "ts": ts(last),
                    "pid": t["device_id"],
                    "tid": tid,
                },
                args,
            )
            continue
        if not window.keeps(t["device_id"], begin, t["complete_ns"]):
            continue
        yield from inferences_until(t["device_id"], t["stream_id"], begin)
        tid = tracks.place(
            t["device_id"],
            f"{stream} tasks",
            _stream_base(t["stream_id"], 0),
            begin,
            t["complete_ns"],
            nests=True,
        )
        yield from tracks.take_repeated()
        pids.add(t["device_id"])
        states = [("waiting", t["waiting_ns"]), ("pending", t["pending_ns"]), ("running", t["running_ns"])]
        marks = sorted([(x, s) for s, x in states if x is not None] + [(t["complete_ns"], "complete")])
        # how long the instance spent in each state (ns), not when it entered it
        spent = {
            f"{state}_dur_ns": nxt - x
            for (x, state), (nxt, _) in zip(marks, marks[1:])
            if state != "complete"
        }
        yield event(
            {
                "ph": "X",
                "cat": "task",
                "name": name,
                "ts": ts(begin),
                "dur": tracks.dur,
                "pid": t["device_id"],
                "tid": tid,
            },
            args | spent,
        )
        # an arrow from the launching runtime call, when that call is in the trace
        call_dev = t["call_device_id"]
        if (
            call_dev is not None
            and (not devices or call_dev in devices)
            and window.keeps(call_dev, t["call_start_ns"], t["call_end_ns"])
        ):
            call_tid = moved.get((call_dev, t["call_tid"], t["call_start_ns"])) or tracks.names.get(
                (call_dev, _api_track(t["call_tid"]))
            )
        else:
            call_tid = None
        if call_tid is not None:
            flow += 1
            yield {
                "ph": "s",
                "cat": "launch",
                "name": "launch",
                "id": flow,
                "ts": ts(t["call_start_ns"]),
                "pid": call_dev,
                "tid": call_tid,
            }
            yield {
                "ph": "f",
                "bp": "e",
                "cat": "launch",
                "name": "launch",
                "id": flow,
                "ts": ts(begin),
                "pid": t["device_id"],
                "tid": tid,
            }
        for (x, state), (nxt, _) in zip(marks, marks[1:]):
            if state == "complete" or nxt <= x:
                continue
            sid = tracks.place(
                t["device_id"], f"{stream} {state}", _stream_base(t["stream_id"], _STATE_RANK[state]), x, nxt
            )
            yield event(
                {
                    "ph": "X",
                    "cat": "task_state",
                    "name": state,
                    "ts": ts(x),
                    "dur": _us(nxt - x),
                    "pid": t["device_id"],
                    "tid": sid,
                },
                {"op_name": t["op_name"], "task_id": t["task_id"]},
            )
    # the inferences after a stream's last task
    for device, stream in list(todo):
        yield from inferences_until(device, stream, None)
    yield from tracks.metadata(sorted(pids))


def write_trace(
    wh: Warehouse,
    out: str,
    run_ref: str = "latest",
    start: str | None = None,
    end: str | None = None,
    inference: int | None = None,
    devices: list[int] | None = None,
    memory_limit: str | None = None,
    threads: int | None = None,
    instance_args: bool = True,
) -> tuple[str, int]:
    """The run as a Trace Event JSON object written to ``out`` event by event (``-``
    standard output; a ``.gz`` name is gzipped; a file appears whole or not at all); returns
    (run id, events written, thread names and sort indexes not counted). ``start`` / ``end`` are
    offsets from the run's first event (``3ms``); ``inference`` limits it to that inference's
    span on every device. ``instance_args=False`` leaves args out of the events (speedscope
    takes a slice's args as part of its function's name)."""
    with _trace(wh, run_ref, start, end, inference, devices, memory_limit, threads, instance_args) as (
        other,
        events,
    ):
        count = 0

        def write(f: TextIO) -> None:
            nonlocal count
            f.write('{"traceEvents":[')
            for i, e in enumerate(events):
                f.write(("," if i else "") + json.dumps(e, separators=(",", ":")))
                count += e["ph"] != "M"
            f.write(
                '],"displayTimeUnit":"ns","otherData":' + json.dumps(other, separators=(",", ":")) + "}\n"
            )

        if out == "-":
            write(sys.stdout)
            sys.stdout.flush()
        elif out.endswith(".gz"):

            def write_gz(p: Path) -> None:
                with (
                    open(p, "wb") as raw,
                    gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz,
                    io.TextIOWrapper(gz, encoding="utf-8") as f,
                ):
                    write(f)

            atomic_write(Path(out), write_gz)
        else:
            atomic_write(Path(out), lambda p: _write_text_file(p, write))
        return other["run_id"], count


def _write_text_file(p: Path, write) -> None:
    with open(p, "w", encoding="utf-8") as f:
        write(f)
