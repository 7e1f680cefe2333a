"""Chrome-trace timelines exported by msprof (``msprof_*.json``, ``timeline/*.json``) and torch_npu (``trace_view.json``).

A timeline is a JSON list of trace events (or an object whose ``traceEvents`` is that list).
``M`` events name the processes; profetl takes the events of five of them:

* ``CANN`` ``X`` events -> ``api_calls`` (host, device 64): ``AscendCL@aclnnAddmm`` is level
  ``args.level`` (``acl``), API ``aclnnAddmm``: the name after the first ``@``, which is what
  msprof's ``api_statistic`` calls it for every level (``Node@launch`` -> ``launch``,
  ``Hccl@Launch_Ffts`` -> ``Launch_Ffts``). Events without ``args.level`` (2023 msprof:
  ``GE@Infer``, ``Model@ModelExecute``) take the level from the prefix.
* ``Ascend Hardware`` ``X`` events with a ``Task Id`` -> ``task_runs`` (source ``timeline``) and,
  when asked, ``task_ops`` (source ``export``: the event name as op name, ``Task Type``).
* ``Iteration N`` spans (category ``Iteration Time``: msprof's ``Ascend Hardware`` of a
  per-iteration file or mindinsight's ``Step Trace`` process) and ``ProfilerStep#N`` (torch_npu's
  ``Python`` process) -> ``step_trace``: MODEL_START (tag 0) at the start, MODEL_END (tag 1) at
  the end, and FP (2) / BP (3) where the span names ``FP Start`` / ``BP End``. All keypoints
  of one event share its ``seq``; ``tag_id`` tells them apart.
* ``HCCL`` ``X`` events named ``hcom_*`` or on a thread whose name holds ``Communication``
  (the ops as a whole, not their tasks on the ``Plane`` threads) -> ``comm_ops``, for the step breakdown (docs/formats.md#rule-step-breakdown).
* the other ``HCCL`` ``X`` events with an ``args`` ``task type`` or on a ``Plane N`` thread: the
  ops' tasks (``Notify_Wait``, ``Memcpy``, ``Reduce_Inline``, ...) -> ``comm_tasks``, with their
  plane, stream, task, ranks, transport, link, size and bandwidth as exported
  (docs/formats.md#rule-comm-tasks). msprof's ``hccl_<dev>_<model>_<iter>.json`` holds only these
  and the ops.

Every other event (Overlap Analysis, counters, flow arrows, torch ops, ...) is counted
per process and reported in one ``not_read`` issue per file.

Times are exact: the JSON is parsed with decimal numbers kept as text and converted a whole
column at a time by ``values.us_to_ns``; ``end_ns = start_ns + us_to_ns(dur)``.

Device of a device event: the file name of a per-iteration file (``msprof_<dev>_<model>_<iter>``),
else msprof's process-id encoding (``pid << 10 | sort_index << 5 | device``, device 31 = host;
recognised only where the ``Ascend Hardware`` pid shares its upper bits with another process of
the file), else the context's device (``device_N/`` or profiler_info's rank), else 0 with a note.

The file is read twice, a chunk at a time (``trace_events``): once for the ``M`` events that name
processes and threads (and to check the whole document before anything is written), then for
the events, turned into columns ``BATCH_EVENTS`` at a time; memory does not grow with the file.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.readers.exported import values as export_values
from pipeline.readers.exported.context import ExportContext, SourceResult, file_size
from pipeline.readers.exported.trace_events import TraceError, trace_events
from pipeline.readers.issues import Issue

HOST_DEVICE = 64
CANN, HARDWARE, PYTHON, STEP_TRACE, HCCL = "CANN", "Ascend Hardware", "Python", "Step Trace", "HCCL"
# an HCCL op as a whole: named hcom_* (torch_npu, CANN 8), or on the HCCL thread named
# "Group N Communication" / "Communication Kernel" (msprof 2023 names it after the framework op,
# Default/AllReduce-op534_0); its tasks are on the "Plane N" threads
COMM_OP_PREFIX = "hcom_"
COMM_OP_THREAD = "communication"
NONE_ID = 4294967295  # exporters' "none" for subtask (context) ids
NO_CONNECTION = str(2**64 - 1)  # a task no host API launched (msprof writes uint64 -1)
WALL_CLOCK_NS = 946_684_800 * 10**9  # 2000-01-01: earlier event times are a monotonic clock

_PER_ITERATION = re.compile(r"^(?:msprof|task_time|step_trace|hccl)_(\d+)_(\d+)_(\d+)(?:_slice_\d+)?\.json$")
_PLANE = re.compile(r"^\s*plane\s*(\d+)\s*$", re.I)
COMM_TASK_THREAD = "plane"
_PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_ITERATION = re.compile(r"^Iteration (\d+)$")
_MODEL_IN_THREAD = re.compile(r"Model ID:\s*(\d+)")
_PID_SHIFT, _DEVICE_BITS, _HOST_IN_PID = 10, 31, 31

# CANN event name prefix -> level, for events without args.level
LEVEL_OF_PREFIX = {
    "ascendcl": "acl",
    "acl": "acl",
    "model": "model",
    "node": "node",
    "runtime": "runtime",
    "hccl": "hccl",
    "communication": "hccl",
    "aicpu": "aicpu",
}
# AscendCL api type (Mode) -> the type tag of raw records (type >> 16)
BATCH_EVENTS = 200_000  # events turned into columns at a time
ACL_TYPES = {
    "ACL_OP": 1,
    "ACL_MODEL": 2,
    "ACL_RTS": 3,
    "ACL_OTHERS": 4,
    "ACL_NN": 5,
    "ACL_ASCENDC": 6,
    "HOST_HCCL": 7,
    "ACL_DVPP": 9,
    "ACL_GRAPH": 10,
    "ACL_ATB": 11,
}


def _key(v):
    """A pid or tid as a dictionary key (JSON may hold anything there)."""
    return v if v is None or isinstance(v, (int, str, float)) else str(v)


def _text(values: list) -> pa.Array:
    return pa.array([None if v is None else str(v) for v in values], pa.string())


def _ints(values: list, bits: int = 64) -> tuple[pa.Array, pa.Array]:
    """Integers of any JSON form ("12", 12) to int64; ``bad`` marks text that is no integer or does
    not fit ``bits``."""
    n, bad = export_values.to_int(_text(values))
    if bits == 32:
        inside = pc.fill_null(pc.and_(pc.greater_equal(n, -(2**31)), pc.less(n, 2**31)), True)
        n = pc.if_else(inside, n, pa.nulls(len(n), pa.int64()))
        bad = pc.or_(bad, pc.invert(inside))
    return n, bad


def _count(mask) -> int:
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)


def _none_is_null(n: pa.Array) -> pa.Array:
    return pc.if_else(pc.fill_null(pc.equal(n, NONE_ID), False), pa.nulls(len(n), pa.int64()), n)


class _Columns:
    """Values of one kind of event, appended during the single pass over the events."""

    def __init__(self, *names: str):
        self.names = names
        self.cols: dict[str, list] = {n: [] for n in names}

    def add(self, *values) -> None:
        for n, v in zip(self.names, values):
            self.cols[n].append(v)

    def __len__(self) -> int:
        return len(self.cols[self.names[0]])

    def __getitem__(self, name: str) -> list:
        return self.cols[name]


@dataclass
class _Batch:
    """Up to BATCH_EVENTS events (their times, for the run's start) and the columns of those profetl reads."""

    ts: list = field(default_factory=list)
    api: _Columns = field(
        default_factory=lambda: _Columns(
            "seq", "name", "ts", "dur", "level", "mode", "item", "tid", "pid", "conn"
        )
    )
    hw: _Columns = field(
        default_factory=lambda: _Columns(
            "seq", "name", "ts", "dur", "pid", "stream", "task", "batch", "subtask", "model", "conn", "type"
        )
    )
    steps: _Columns = field(
        default_factory=lambda: _Columns("seq", "index", "ts", "dur", "fp", "bp", "pid", "tid")
    )
    comm: _Columns = field(default_factory=lambda: _Columns("seq", "name", "ts", "dur", "pid"))
    tasks: _Columns = field(
        default_factory=lambda: _Columns(
            "seq",
            "name",
            "ts",
            "dur",
            "pid",
            "plane",
            "type",
            "stream",
            "task",
            "notify",
            "src",
            "dst",
            "transport",
            "link",
            "dtype",
            "size",
            "bw",
            "model",
        )
    )


class _Reader:
    def __init__(self, path: Path, kind: str, ctx: ExportContext):
        self.path, self.kind, self.ctx = path, kind, ctx
        self.rel = ctx.rel(path)
        self.res = SourceResult()
        self.bad: Counter[str] = Counter()  # what was bad -> events
        m = _PER_ITERATION.match(path.name)
        self.file_device, self.file_model, self.file_iteration = (
            (int(g) for g in m.groups()) if m else (None,) * 3
        )

    # --- devices -----------------------------------------------------------------------------

    def _devices(self, process: dict) -> None:
        """pid -> device for the device processes, and pid -> the process id it encodes."""
        hw = [p for p, name in process.items() if name == HARDWARE]
        upper_hw = {p >> _PID_SHIFT for p in hw if isinstance(p, int) and p >= 1 << _PID_SHIFT}
        upper_other = {
            p >> _PID_SHIFT
            for p, name in process.items()
            if name != HARDWARE and isinstance(p, int) and p >= 1 << _PID_SHIFT
        }
        self.encoded = upper_hw & upper_other  # process ids msprof folded into the trace pids
        self.pid_device: dict = {}
        unknown = False
        for p in hw:
            dev = None
            if self.file_device is not None:
                dev = self.file_device
            elif self._encoded(p) and p & _DEVICE_BITS != _HOST_IN_PID:
                dev = p & _DEVICE_BITS
                if self.ctx.default_device is not None and dev != self.ctx.default_device:
                    self.res.notes.append(
                        f"{self.rel}: device {dev} from the exporter's process ids, "
                        f"where the path or profiler_info says {self.ctx.default_device}"
                    )
            elif self.ctx.default_device is not None:
                dev = self.ctx.default_device
            else:
                dev, unknown = 0, True
            self.pid_device[p] = dev
        devs = set(self.pid_device.values())
        if len(devs) == 1:
            self.device = devs.pop()
        elif self.file_device is not None:
            self.device = self.file_device
        elif self.ctx.default_device is not None:
            self.device = self.ctx.default_device
        else:
            self.device = min(devs) if devs else 0
            unknown = unknown or not devs
        self.device_unknown = unknown

    def _encoded(self, pid) -> bool:
        return isinstance(pid, int) and pid >= 1 << _PID_SHIFT and (pid >> _PID_SHIFT) in self.encoded

    # --- the pass over the events ------------------------------------------------------------

    def read(self, events) -> SourceResult:
        """``events()`` gives a fresh iterator over the file's events (it is called twice)."""
        process: dict = {}
        self.thread: dict = {}
        for e in events():
            if type(e) is dict and e.get("ph") == "M":
                args = e.get("args") if isinstance(e.get("args"), dict) else {}
                if e.get("name") == "process_name":
                    process[_key(e.get("pid"))] = str(args.get("name"))
                elif e.get("name") == "thread_name":
                    self.thread[(_key(e.get("pid")), _key(e.get("tid")))] = str(args.get("name"))
        self._devices(process)

        self.found = Counter()  # table -> events seen for it
        self.first_ns: int | None = None
        skipped: Counter[str] = Counter()
        other_iterations = 0
        not_objects = 0
        batch = _Batch()
        for i, e in enumerate(events()):
            if type(e) is not dict:
                not_objects += 1
                continue
            ph = e.get("ph")
            if ph == "M":
                continue
            if len(batch.ts) >= BATCH_EVENTS:
                self._flush(batch)
                batch = _Batch()
            pid = _key(e.get("pid"))
            proc = process.get(pid)
            batch.ts.append(e.get("ts"))
            if ph == "X":
                args = e.get("args")
                if type(args) is not dict:
                    args = {}
                name = e.get("name")
                if proc == CANN:
                    batch.api.add(
                        i,
                        name,
                        e.get("ts"),
                        e.get("dur"),
                        args.get("level"),
                        args.get("Mode"),
                        args.get("item_id"),
                        args.get("Thread Id", e.get("tid")),
                        pid,
                        args.get("connection_id"),
                    )
                    continue
                if proc == HARDWARE and "Task Id" in args:
                    batch.hw.add(
                        i,
                        name,
                        e.get("ts"),
                        e.get("dur"),
                        pid,
                        args.get("Physic Stream Id", args.get("Stream Id")),
                        args.get("Task Id"),
                        args.get("Batch Id"),
                        args.get("Subtask Id"),
                        args.get("Model Id"),
                        args.get("connection_id"),
                        args.get("Task Type"),
                    )
                    continue
                if (
                    proc == HCCL
                    and isinstance(name, str)
                    and (
                        name.startswith(COMM_OP_PREFIX)
                        or COMM_OP_THREAD in (self.thread.get((pid, _key(e.get("tid")))) or "").lower()
                    )
                ):
                    batch.comm.add(i, name, e.get("ts"), e.get("dur"), pid)
                    continue
                plane = self._plane(pid, e.get("tid")) if proc == HCCL else None
                if proc == HCCL and ("task type" in args or plane is not None):
                    batch.tasks.add(
                        i,
                        name,
                        e.get("ts"),
                        e.get("dur"),
                        pid,
                        e.get("tid") if plane is None else plane,
                        args.get("task type"),
                        args.get("stream id"),
                        args.get("task id"),
                        args.get("notify_id"),
                        args.get("src rank"),
                        args.get("dst rank"),
                        args.get("transport type"),
                        args.get("link type"),
                        args.get("data type"),
                        args.get("size(Byte)"),
                        args.get("bandwidth(GB/s)"),
                        args.get("model id"),
                    )
                    continue
                if isinstance(name, str):
                    m = _PROFILER_STEP.match(name)
                    if m:
                        batch.steps.add(
                            i, m.group(1), e.get("ts"), e.get("dur"), None, None, pid, _key(e.get("tid"))
                        )
                        continue
                    m = _ITERATION.match(name)
                    if m and (e.get("cat") == "Iteration Time" or proc == STEP_TRACE):
                        index = args.get("Iteration ID", m.group(1))
                        if self.file_iteration is not None and str(index) != str(self.file_iteration):
                            other_iterations += 1
                            continue
                        batch.steps.add(
                            i,
                            index,
                            e.get("ts"),
                            e.get("dur"),
                            args.get("FP Start"),
                            args.get("BP End"),
                            pid,
                            _key(e.get("tid")),
                        )
                        continue
            label = proc if proc is not None else f"pid {pid}"
            if proc in (CANN, HARDWARE, PYTHON, STEP_TRACE):
                label += " (other than API calls, tasks and steps)"
            skipped[label] += 1
        self._flush(batch)

        if not_objects:
            self.bad["entries of the event list that are not JSON objects: skipped"] += not_objects
        elsewhere: list[str] = []
        if self.found["api_calls"] and "api_calls" not in self.ctx.tables:
            elsewhere.append(f"{CANN}: {self.found['api_calls']} API calls (api_calls)")
        if self.found["task_runs"] and not {"task_runs", "task_ops"} & self.ctx.tables:
            elsewhere.append(f"{HARDWARE}: {self.found['task_runs']} tasks (task_runs)")
        if self.found["step_trace"] and "step_trace" not in self.ctx.tables:
            elsewhere.append(f"{self.found['step_trace']} steps (step_trace)")
        if self.found["comm_ops"] and "comm_ops" not in self.ctx.tables:
            elsewhere.append(f"{HCCL}: {self.found['comm_ops']} communication ops (comm_ops)")
        if self.found["comm_tasks"] and "comm_tasks" not in self.ctx.tables:
            elsewhere.append(f"{HCCL}: {self.found['comm_tasks']} communication tasks (comm_tasks)")
        self._report(skipped, other_iterations, elsewhere)
        self._start()
        if self.device_unknown and (self.found["task_runs"] or self.found["step_trace"]):
            self.res.notes.append(
                f"{self.rel}: the device of its tasks and steps is not named (no device_N folder, "
                f"profiler_info rank or msprof process id): taken as device 0"
            )
        return self.res

    def _flush(self, batch: _Batch) -> None:
        """Columns of one batch of events into their tables."""
        api, hw, steps, comm, tasks = batch.api, batch.hw, batch.steps, batch.comm, batch.tasks
        self.found.update(
            {
                "api_calls": len(api),
                "task_runs": len(hw),
                "step_trace": len(steps),
                "comm_ops": len(comm),
                "comm_tasks": len(tasks),
            }
        )
        if len(api) and "api_calls" in self.ctx.tables:
            self._api_calls(api)
        if len(hw) and {"task_runs", "task_ops"} & self.ctx.tables:
            self._tasks(hw)
        if len(steps) and "step_trace" in self.ctx.tables:
            self._steps(steps)
        if len(comm) and "comm_ops" in self.ctx.tables:
            self._comm_ops(comm)
        if len(tasks) and "comm_tasks" in self.ctx.tables:
            self._comm_tasks(tasks)
        if batch.ts:
            ns, _ = export_values.us_to_ns(_text(batch.ts))
            first = pc.min(ns).as_py()
            if first is not None and (self.first_ns is None or first < self.first_ns):
                self.first_ns = first

    # --- tables ------------------------------------------------------------------------------

    def _times(self, cols: _Columns, what: str) -> tuple[pa.Array, pa.Array, pa.Array]:
        """start_ns, end_ns and the rows whose ts and dur are both numbers."""
        start, _ = export_values.us_to_ns(_text(cols["ts"]))
        dur, _ = export_values.us_to_ns(_text(cols["dur"]))
        ok = pc.and_(pc.is_valid(start), pc.is_valid(dur))
        n_bad = len(ok) - _count(ok)
        if n_bad:
            self.bad[f"{what} events without a numeric ts or dur: not written"] += n_bad
        return start, pc.add(start, dur), ok

    def _write(self, table: str, columns: dict, ok: pa.Array) -> int:
        t = pa.table({k: v for k, v in columns.items() if not isinstance(v, str)})
        t = t.filter(ok)
        out = {k: (v if isinstance(v, str) else t.column(k)) for k, v in columns.items()}
        if t.num_rows:
            self.ctx.sink.write(table, out)
            self.res.add_rows(table, t.num_rows)
        return t.num_rows

    def _api_calls(self, c: _Columns) -> None:
        n = len(c)
        start, end, ok = self._times(c, CANN)
        names = _text(c["name"])
        prefix = pc.struct_field(pc.extract_regex(names, r"^(?P<p>[^@]*)@"), "p")
        api_name = pc.if_else(
            pc.is_valid(prefix), pc.replace_substring_regex(names, r"^[^@]*@", "", max_replacements=1), names
        )
        level = export_values.clean(_text(c["level"]))
        from_prefix = pc.utf8_lower(prefix)
        uniq = pc.unique(from_prefix)
        mapped = pa.array(
            [None if p is None else LEVEL_OF_PREFIX.get(p, p) for p in uniq.to_pylist()], pa.string()
        )
        level = pc.coalesce(level, pc.take(mapped, pc.index_in(from_prefix, value_set=uniq)))
        is_acl = pc.fill_null(pc.equal(level, "acl"), False)
        mode = export_values.clean(_text(c["mode"]))
        types = pa.array(list(ACL_TYPES.values()), pa.int32())
        api_type = pc.take(types, pc.index_in(mode, value_set=pa.array(list(ACL_TYPES))))
        api_type = pc.if_else(is_acl, api_type, pa.nulls(n, pa.int32()))
        item = export_values.clean(_text(c["item"]))
        no_item = pc.and_(
            pc.fill_null(pc.equal(item, "0"), False), pc.invert(pc.fill_null(pc.equal(level, "model"), False))
        )
        item = pc.if_else(no_item, pa.nulls(n, pa.string()), item)
        tid, bad_tid = _ints(c["tid"])
        conn, bad_conn = _ints([None if str(v) == NO_CONNECTION else v for v in c["conn"]])
        pids = [
            (p >> _PID_SHIFT if self._encoded(p) else p) if isinstance(p, int) else None for p in c["pid"]
        ]
        self._bad_ids(CANN, "Thread Id or connection_id", pc.or_(bad_tid, bad_conn))
        rows = self._write(
            "api_calls",
            {
                "device_id": pa.array(np.full(n, HOST_DEVICE, np.int32)),
                "source_file": self.rel,
                "seq": pa.array(c["seq"], pa.int64()),
                "level": level,
                "api_name": api_name,
                "api_type": api_type,
                "pid": pa.array(pids, pa.int64()),
                "tid": tid,
                "start_ns": start,
                "end_ns": end,
                "item": item,
                "record_kind": "timeline_cann",
                "connection_id": conn,
            },
            ok,
        )
        if rows:
            self.res.devices.add(HOST_DEVICE)

    def _tasks(self, c: _Columns) -> None:
        start, end, ok = self._times(c, HARDWARE)
        device = pa.array([self.pid_device.get(p, self.device) for p in c["pid"]], pa.int32())
        stream, b1 = _ints(c["stream"], 32)
        task, b2 = _ints(c["task"], 32)
        batch, b3 = _ints(c["batch"], 32)
        context, b4 = _ints(c["subtask"])
        model, b5 = _ints(c["model"])
        if self.file_model is not None:  # a per-iteration file of one model: its tasks are that model's
            model = pc.coalesce(model, pa.scalar(self.file_model, pa.int64()))
        conn, b6 = _ints([None if str(v) == NO_CONNECTION else v for v in c["conn"]])
        bad = pc.or_(pc.or_(pc.or_(b1, b2), pc.or_(b3, b4)), pc.or_(b5, b6))
        self._bad_ids(HARDWARE, "Stream Id, Task Id, Batch Id, Subtask Id, Model Id or connection_id", bad)
        context = _none_is_null(context)
        task_type = export_values.clean(_text(c["type"]))
        seq = pa.array(c["seq"], pa.int64())
        common = {
            "device_id": device,
            "source_file": self.rel,
            "seq": seq,
            "stream_id": stream,
            "task_id": task,
            "batch_id": batch,
            "context_id": context,
            "model_id": model,
            "start_ns": start,
        }
        written = 0
        if "task_runs" in self.ctx.tables:
            written = self._write(
                "task_runs",
                {
                    **common,
                    "end_ns": end,
                    "source": "timeline",
                    "task_type_name": task_type,
                    "connection_id": conn,
                },
                ok,
            )
        if "task_ops" in self.ctx.tables:
            written = max(
                written,
                self._write(
                    "task_ops",
                    {**common, "source": "export", "op_name": _text(c["name"]), "task_type": task_type},
                    ok,
                ),
            )
        if written:
            self.res.devices |= set(pc.unique(pc.filter(device, ok)).to_pylist())

    def _steps(self, c: _Columns) -> None:
        n = len(c)
        start, end, ok = self._times(c, "step")
        index, bad_index = _ints(c["index"])
        self._bad_ids("step", "Iteration ID", bad_index)
        fp, _ = export_values.us_to_ns(_text(c["fp"]))
        bp, _ = export_values.us_to_ns(_text(c["bp"]))
        if self.file_model is not None:
            model = pa.array(np.full(n, self.file_model, np.int64))
        else:
            models = []
            for p, t in zip(c["pid"], c["tid"]):
                m = _MODEL_IN_THREAD.search(self.thread.get((p, t), "") or "")
                models.append(int(m.group(1)) if m else None)
            model = pa.array(models, pa.int64())
        device = pa.array([self.pid_device.get(p, self.device) for p in c["pid"]], pa.int32())
        seq = pa.array(c["seq"], pa.int64())
        # keypoints: (tag, time); FP and BP only where the span names them
        parts = []
        for tag, ts, keep in (
            (0, start, ok),
            (2, fp, pc.and_(ok, pc.is_valid(fp))),
            (3, bp, pc.and_(ok, pc.is_valid(bp))),
            (1, end, ok),
        ):
            t = pa.table(
                {
                    "device_id": device,
                    "seq": seq,
                    "model_id": model,
                    "index_id": index,
                    "ts_ns": ts,
                    "tag_id": pa.array(np.full(n, tag, np.int32)),
                }
            ).filter(keep)
            parts.append(t)
        t = pa.concat_tables(parts).sort_by([("seq", "ascending"), ("ts_ns", "ascending")])
        if t.num_rows:
            self.ctx.sink.write(
                "step_trace", {**{k: t.column(k) for k in t.column_names}, "source_file": self.rel}
            )
            self.res.add_rows("step_trace", t.num_rows)
            self.res.devices |= set(pc.unique(t.column("device_id")).to_pylist())

    def _comm_device(self, p) -> int:
        """The device of an HCCL process, by the rule of the hardware processes (setup): the
        device the file's path names first, else the one msprof's process-id encoding names,
        else the file's device."""
        if p in self.pid_device:
            return self.pid_device[p]
        if self.file_device is not None:
            return self.file_device
        if self._encoded(p) and p & _DEVICE_BITS != _HOST_IN_PID:
            return p & _DEVICE_BITS
        return self.device

    def _comm_ops(self, c: _Columns) -> None:
        """HCCL's hcom_* events: a communication op each, on the device of its process
        (``_comm_device``)."""
        start, end, ok = self._times(c, HCCL)
        of_pid = {p: self._comm_device(p) for p in set(c["pid"])}  # one decision per process
        device = pa.array([of_pid[p] for p in c["pid"]], pa.int32())
        self._write(
            "comm_ops",
            {
                "seq": pa.array(c["seq"], pa.int64()),
                "device_id": device,
                "op_name": _text(c["name"]),
                "start_ns": start,
                "end_ns": end,
                "source_file": self.rel,
            },
            ok,
        )
        self.res.devices |= set(pc.unique(device.filter(ok)).to_pylist())

    def _plane(self, pid, tid) -> int | None:
        """The plane of an HCCL thread named ``Plane N`` (N), None for another thread."""
        m = _PLANE.match(self.thread.get((pid, _key(tid))) or "")
        return int(m.group(1)) if m else None

    def _comm_tasks(self, c: _Columns) -> None:
        """HCCL task events: a communication task each, on the device of its process (the rule
        of comm_ops, ``_comm_device``), its type ``args`` ``task type`` else the event name."""
        n = len(c)
        start, end, ok = self._times(c, f"{HCCL} task")
        of_pid = {p: self._comm_device(p) for p in set(c["pid"])}
        device = pa.array([of_pid[p] for p in c["pid"]], pa.int32())
        stream, b1 = _ints(c["stream"], 32)
        task, b2 = _ints(c["task"], 32)
        src, b3 = _ints(c["src"])
        dst, b4 = _ints(c["dst"])
        model, b5 = _ints(c["model"])
        model = _none_is_null(model)  # 4294967295: no model (torch_npu)
        if self.file_model is not None:
            model = pc.coalesce(model, pa.scalar(self.file_model, pa.int64()))
        size, b6 = _ints(c["size"])
        if _count(b6):  # msprof wrote sizes as hexadecimal text in some versions ("0x1f")
            hexes = pc.fill_null(
                pc.match_substring_regex(_text(c["size"]), r"^\s*0[xX][0-9a-fA-F]+\s*$"), False
            )
            if _count(hexes):
                raw = _text(c["size"]).to_pylist()
                mask = hexes.to_pylist()
                parsed = [int(v, 16) if m else None for v, m in zip(raw, mask)]
                size = pc.coalesce(
                    size, pa.array([p if p is None or p < 2**63 else None for p in parsed], pa.int64())
                )
                b6 = pc.and_(b6, pc.is_null(size))
        bw, b7 = export_values.to_float(_text(c["bw"]))
        plane, b8 = _ints(c["plane"])
        bad = pc.or_(pc.or_(pc.or_(b1, b2), pc.or_(b3, b4)), pc.or_(pc.or_(b5, b6), pc.or_(b7, b8)))
        self._bad_ids(
            f"{HCCL} task",
            "plane, stream id, task id, src rank, dst rank, model id, size(Byte) or bandwidth",
            bad,
        )
        names = _text(c["name"])
        task_type = pc.coalesce(export_values.clean(_text(c["type"])), names)
        self._write(
            "comm_tasks",
            {
                "seq": pa.array(c["seq"], pa.int64()),
                "device_id": device,
                "task_type": task_type,
                "op_name": pa.nulls(n, pa.string()),
                "plane_id": plane,
                "start_ns": start,
                "end_ns": end,
                "stream_id": stream,
                "task_id": task,
                "notify_id": export_values.clean(_text(c["notify"])),
                "src_rank": src,
                "dst_rank": dst,
                "transport_type": export_values.clean(_text(c["transport"])),
                "link_type": export_values.clean(_text(c["link"])),
                "data_type": export_values.clean(_text(c["dtype"])),
                "size_bytes": size,
                "bandwidth_gbps": bw,
                "model_id": model,
                "source_file": self.rel,
            },
            ok,
        )
        self.res.devices |= set(pc.unique(device.filter(ok)).to_pylist())

    # --- what the file held besides ----------------------------------------------------------

    def _bad_ids(self, what: str, fields: str, bad: pa.Array) -> None:
        k = _count(bad)
        if k:
            self.bad[f"{what} events with a {fields} that is no integer (or out of range): NULL there"] += k

    def _report(self, skipped: Counter, other_iterations: int, elsewhere: list[str]) -> None:
        parts = [f"{label}: {n} events" for label, n in sorted(skipped.items(), key=lambda x: (-x[1], x[0]))]
        msgs, total = [], sum(skipped.values())
        if parts:
            msgs.append(", ".join(parts) + ": not part of profetl's tables")
        if other_iterations:
            msgs.append(
                f"{other_iterations} step-trace events of other iterations: each "
                f"{self.path.name.rsplit('_', 3)[0]}_<dev>_<model>_<iter> file repeats them, only iteration "
                f"{self.file_iteration} is taken from this one"
            )
            total += other_iterations
        if elsewhere:
            msgs.append(", ".join(elsewhere) + ": filled from another source of this export")
        if msgs:
            self.ctx.log.add(
                Issue(self.rel, "not_read", "; ".join(msgs), device_id=None, count=max(total, 1))
            )
        for what, k in self.bad.items():
            self.ctx.log.add(Issue(self.rel, "bad_value", f"{k} {what}", count=k))

    def _start(self) -> None:
        first = self.first_ns
        if first is None:
            return
        if first >= WALL_CLOCK_NS:
            self.res.start_ns = first
        else:
            self.res.monotonic_first_ns = first


def read_timeline(path: Path, kind: str, ctx: ExportContext, size: int | None = None) -> SourceResult | None:
    """``size``: the bytes measured when the dump was scanned, read and no more (None: the
    file's size now)."""
    path = Path(path)
    rel = ctx.rel(path)
    reader = _Reader(path, kind, ctx)
    try:
        if size is None:
            size = path.stat().st_size
        res = reader.read(lambda: trace_events(path, size=size))
    except (OSError, TraceError) as e:
        why = (e.strerror or str(e)) if isinstance(e, OSError) else str(e)
        written = sum(reader.res.rows.values())
        if written:  # the file changed or failed in the second pass, after some batches were written
            ctx.log.add(
                Issue(
                    rel,
                    "unreadable_file",
                    f"reading failed part way ({why}) after {written} rows were "
                    f"written: they are kept, the rest of the file is not read",
                    byte_length=size if size is not None else file_size(path),
                )
            )
            return reader.res
        if isinstance(e, TraceError):
            ctx.log.add(
                Issue(
                    rel,
                    "unreadable_file",
                    f"{e}: file not read",
                    byte_offset=e.offset,
                    byte_length=size if size is not None else file_size(path),
                )
            )
        else:
            ctx.log.add(
                Issue(
                    rel,
                    "unreadable_file",
                    f"cannot be read ({why}): file not read",
                    byte_length=size if size is not None else file_size(path),
                )
            )
        return None
    ctx.log.decoded(size)
    return res
