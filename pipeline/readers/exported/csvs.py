"""Summary CSVs exported by msprof and torch_npu (``kernel_details``, ``op_summary``, ``task_time``).

Each data row is one device task execution: it fills ``task_runs`` (the execution), ``task_ops``
(the operator it ran, source ``export``, named by the execution's device, stream, task and start)
and ``task_metrics`` (one long row per metric column after ``Context ID``). The reader writes only
the tables ``ctx.tables`` asks for.

Headers differ between CANN versions and exporters; columns are found by role through
``values.column_key`` (case, spaces and a BOM do not matter):

* start: ``Start Time(us)`` (kernel_details, some op_summary), ``Task Start Time(us)`` (op_summary),
  ``task_start(us)`` (task_time); duration: ``Duration(us)``, ``Task Duration(us)``, ``task_time(us)``;
* op name: ``Name`` / ``Op Name`` / ``kernel_name``; op type: ``Type`` / ``OP Type``;
* blocks: ``Block Dim`` or ``Block Num``, ``Mix Block Dim`` or ``Mix Block Num``;
* wait: ``Wait Time(us)`` (kernel_details) or ``Task Wait Time(us)`` (op_summary), kept as the
  exporter wrote it (task_ops ``wait_ns``; docs/formats.md#export-wait);
* optional everywhere: ``Device_id``, ``Step Id``, ``Model ID``, ``OP State``, ``HF32 Eligible``,
  ``Mix Block Dim``, ``Context ID`` and the metric columns (a set per aic-metrics group).

Cells are read as text with ``pyarrow.csv`` and converted a whole column at a time
(``values``): microseconds to exact integer nanoseconds, ``N/A`` to NULL, the tab that ends
exported timestamps and the doubled quotes around shapes removed. A ragged row is skipped and
reported with its byte offset (``bad_text_line``); a file pyarrow cannot parse, or without a
start column, or with only one of the stream and task columns, is reported once
(``unreadable_file``) and not read. A file with neither stream nor task (torch_npu level0) is
read keyed by (device, start): its operator rows and metrics carry NULL stream and task, and it
gives no task_runs (docs/formats.md#export-level0).
"""

from __future__ import annotations

import codecs
import csv
import io
import mmap
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from pipeline.readers.exported import values as export_values
from pipeline.readers.exported.context import ExportContext, SourceResult, file_size, open_measured
from pipeline.readers.issues import Issue

KINDS = ("kernel_details", "op_summary", "task_time_csv")
TABLES = ("task_runs", "task_ops", "task_metrics")

# role -> header keys (values.column_key) that hold it, in any exporter or CANN version
ROLES: dict[str, tuple[str, ...]] = {
    "device": ("device_id", "deviceid"),
    "stream": ("streamid", "stream_id"),
    "task": ("taskid", "task_id"),
    "start": ("starttime(us)", "taskstarttime(us)", "task_start(us)", "taskstarttime"),
    "duration": ("duration(us)", "taskduration(us)", "task_time(us)"),
    "stop": ("task_stop(us)",),
    "core": ("acceleratorcore",),
    "task_type": ("tasktype", "kernel_type"),
    "context": ("contextid",),
    "model": ("modelid",),
    "op_name": ("name", "opname", "kernel_name"),
    "op_type": ("type", "optype"),
    "op_state": ("opstate",),
    "block_dim": ("blockdim", "blocknum"),
    "mix_block_dim": ("mixblockdim", "mixblocknum"),
    "wait": ("waittime(us)", "taskwaittime(us)"),
    "input_shapes": ("inputshapes",),
    "input_data_types": ("inputdatatypes",),
    "input_formats": ("inputformats",),
    "output_shapes": ("outputshapes",),
    "output_data_types": ("outputdatatypes",),
    "output_formats": ("outputformats",),
}
# What a missing required role is called in the issue
REQUIRED = {
    "stream": "Stream ID (stream_id)",
    "task": "Task ID (task_id)",
    "start": "Start Time(us) (Task Start Time(us), task_start(us))",
}
# Known columns before the metrics that no canonical column holds (reported in the notes)
NOT_KEPT = (
    "stepid",
    "hf32eligible",
    "modelname",
    "inferid",
    "task_stop(us)",
)
STRINGS = (
    "op_name",
    "op_type",
    "op_state",
    "input_shapes",
    "input_data_types",
    "input_formats",
    "output_shapes",
    "output_data_types",
    "output_formats",
)
NO_CONTEXT = 4294967295  # exporters' "no context"

_BLOCK = 8 << 20  # bytes of text per batch
_IN_MEMORY = 64 << 20  # larger files are checked in a first pass, then converted in a second
_SHOWN_BAD_LINES = 10  # ragged rows reported one by one; the rest in one counted issue


@dataclass
class Layout:
    header: list[str]
    roles: dict[str, int]  # role -> column index
    metrics: list[int]  # metric column indices
    not_kept: list[str] = field(default_factory=list)


def layout(header: list[str]) -> Layout:
    """Which column holds which role, and which columns are metrics: every column after
    ``Context ID`` (or, without one, the unknown columns after the last known one)."""
    keys = [export_values.column_key(h) for h in header]
    roles: dict[str, int] = {}
    for i, k in enumerate(keys):
        for role, names in ROLES.items():
            if k in names and role not in roles:
                roles[role] = i
    known = set(roles.values()) | {i for i, k in enumerate(keys) if k in NOT_KEPT}
    if "context" in roles:
        first = roles["context"] + 1
    else:
        first = max(known, default=-1) + 1
    metrics = [i for i in range(first, len(header)) if keys[i] and i not in known]
    not_kept = [
        header[i].strip() for i in range(min(first, len(header))) if i not in roles.values() and keys[i]
    ]
    return Layout(header, roles, metrics, not_kept)


def read_summary(path: Path, kind: str, ctx: ExportContext, size: int | None = None) -> SourceResult | None:
    """``size``: the bytes measured when the dump was scanned, read and no more (None: the
    file's size now; docs/formats.md#live-dumps)."""
    path = Path(path)
    rel = ctx.rel(path)
    res = SourceResult()
    tables = [t for t in TABLES if t in ctx.tables]
    size, header = _opened_header(path, size, rel, ctx)
    if not header:
        return res
    lay = layout(header)
    # torch_npu level0: no Stream ID and no Task ID; a row names its execution by (device, start)
    level0 = "start" in lay.roles and "stream" not in lay.roles and "task" not in lay.roles
    missing = [what for role, what in REQUIRED.items() if role not in lay.roles and not level0]
    if missing:
        ctx.log.add(
            Issue(
                rel,
                "unreadable_file",
                f"no {' and no '.join(missing)} column, so its rows name no task execution: "
                f"file not read (header: {','.join(h.strip() for h in header)[:300]})",
                byte_length=size,
            )
        )
        return res

    # Parse everything first: a file pyarrow cannot parse writes nothing.
    bad_rows: list = []
    not_utf8: dict[int, list[int]] = {}  # row read -> columns whose cell is not UTF-8

    def on_not_utf8(row: int, column: int) -> None:
        not_utf8.setdefault(row, []).append(column)

    try:
        if size <= _IN_MEMORY:
            batches = list(_batches(path, size, len(header), bad_rows.append, on_not_utf8))
            good = sum(b.num_rows for b in batches)
        else:  # a first pass checks and counts, the second converts
            good = sum(b.num_rows for b in _batches(path, size, len(header), bad_rows.append, on_not_utf8))
            batches = _batches(path, size, len(header), lambda row: None)
    except (pa.ArrowInvalid, OSError) as e:
        _not_parseable(ctx, rel, path, size, e)
        return res

    skipped = _report_bad_rows(path, size, rel, bad_rows, ctx)
    seqs = _good_seqs(bad_rows, good + len(bad_rows)) if bad_rows else None
    for n, (row, columns) in enumerate(sorted(not_utf8.items())):
        if n == _SHOWN_BAD_LINES:
            ctx.log.add(
                Issue(
                    rel,
                    "bad_value",
                    f"{len(not_utf8) - n} more rows with cells that are not UTF-8 text: "
                    "read with U+FFFD for the bad bytes",
                    count=len(not_utf8) - n,
                )
            )
            break
        data_row = int(seqs[row]) if seqs is not None and row < len(seqs) else row
        ctx.log.add(
            Issue(
                rel,
                "bad_value",
                f"data row {data_row + 1}: column(s) "
                f"{', '.join(header[j].strip() for j in columns if j < len(header))} "
                "not UTF-8 text: read with U+FFFD for the bad bytes; the row is kept",
            )
        )

    state = _State(kind, rel, lay, tables, ctx, res)
    state.level0 = level0
    if level0:
        res.notes.append(
            f"{rel}: no Stream ID and no Task ID (torch_npu level0): its rows name no execution "
            "themselves; their operators join the exported execution starting at their start "
            "(docs/formats.md#export-level0), and give no task_runs"
        )
    if "device" not in lay.roles:
        if ctx.default_device is None:
            state.fallback_device = 0
            res.notes.append(
                f"{rel}: no Device_id column and no device from the folder or profiler_info: device 0 assumed"
            )
        else:
            state.fallback_device = ctx.default_device
    else:
        state.fallback_device = ctx.default_device if ctx.default_device is not None else 0
    if "task_metrics" in tables and not lay.metrics:
        res.notes.append(
            f"{kind}: no metric columns (collected without aic-metrics): no task_metrics from it"
        )
    if lay.not_kept:
        res.notes.append(f"{kind}: columns {', '.join(lay.not_kept)} not kept (no canonical column)")
    if "duration" not in lay.roles and "stop" not in lay.roles:
        res.notes.append(f"{rel}: no duration column: task end times are NULL")

    seq0 = 0
    try:
        for b in batches:
            seq = (
                seqs[seq0 : seq0 + b.num_rows]
                if seqs is not None
                else np.arange(seq0, seq0 + b.num_rows, dtype=np.int64)
            )
            state.convert(b, seq)
            seq0 += b.num_rows
    except (pa.ArrowInvalid, OSError) as e:  # a large file that changed between its two passes
        ctx.log.add(
            Issue(
                rel,
                "unreadable_file",
                f"changed while read ({e}): rows before data row {seq0} were written, the rest not",
                byte_length=size - skipped,
            )
        )
        state.finish()
        return res
    state.finish()
    ctx.log.decoded(size - skipped)
    return res


# -- reading -------------------------------------------------------------------------------------


def _opened_header(
    path: Path, size: int | None, rel: str, ctx: ExportContext
) -> tuple[int | None, list[str]]:
    """(the file's size, its header), or an empty header after logging why the file is not read
    (``unreadable_file``: no header to read, or an empty file). ``size`` None: the size now."""
    try:
        if size is None:
            size = path.stat().st_size
        header = _header(path, size)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        ctx.log.add(
            Issue(
                rel,
                "unreadable_file",
                f"header not readable ({e}): file not read",
                byte_offset=0,
                byte_length=file_size(path),
            )
        )
        return size, []
    if not header:
        ctx.log.add(
            Issue(rel, "unreadable_file", "empty file: no header, no rows", byte_offset=0, byte_length=size)
        )
    return size, header


def _header(path: Path, size: int) -> list[str]:
    with open_measured(path, size) as f:
        first = f.readline(1 << 20)
    text = first.decode("utf-8-sig").rstrip("\r\n")
    if not text.strip():
        return []
    return next(csv.reader(io.StringIO(text)))


def _not_parseable(ctx, rel: str, path: Path, size: int, e: Exception) -> None:
    """The issue of a CSV file Arrow cannot parse: not read, where it stopped."""
    ctx.log.add(
        Issue(
            rel,
            "unreadable_file",
            f"not parseable as CSV: {e}: file not read",
            byte_offset=_row_offset(path, size, str(e)),
            byte_length=size,
        )
    )


def _batches(path: Path, size: int, ncols: int, on_bad, on_not_utf8=None):
    """The data rows of the file's first ``size`` bytes as batches of text columns. A byte
    that is not UTF-8 reaches pyarrow as a NUL (``_Utf8Masked``: pyarrow hands a ragged row to
    the handler as text, and one it cannot decode would cost the whole file); once the file has
    had such a byte, a NUL in a cell is one: the cell is read with U+FFFD in its place (one bad
    row must not cost the file), and ``on_not_utf8(row, column)`` hears of each such cell (row:
    its index among the rows read)."""
    names = [f"c{i}" for i in range(ncols)]

    def handler(row):
        on_bad(row)
        return "skip"

    with open_measured(path, size) as fh:
        masker = _Utf8Masked(fh)
        yield from _text_batches(
            pacsv.open_csv(
                io.BufferedReader(masker, buffer_size=1 << 20),
                read_options=pacsv.ReadOptions(
                    column_names=names, skip_rows=1, use_threads=False, block_size=_BLOCK
                ),
                parse_options=pacsv.ParseOptions(invalid_row_handler=handler),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: pa.binary() for n in names},
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            ),
            names,
            on_not_utf8,
            masker,
        )


class _Utf8Masked(io.RawIOBase):
    """A byte stream with every byte that is not part of UTF-8 text replaced by a NUL: the same
    length, so byte offsets stay those of the file. ``masked`` says whether it replaced any."""

    def __init__(self, raw):
        self.raw = raw
        self.carry = b""  # the start of a character cut at the end of a read
        self.pending = b""
        self.done = False
        self.masked = False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self.pending and not self.done:
            data = self.raw.read(1 << 20)
            self.done = not data
            data, self.carry = self.carry + data, b""
            try:  # the usual case: text as it is, the bytes passed on unchanged
                _, used = codecs.utf_8_decode(data, "strict", self.done)
                self.pending, self.carry = data[:used], data[used:]
            except UnicodeDecodeError:
                text, used = codecs.utf_8_decode(data, "surrogateescape", self.done)
                self.pending, self.carry = _SURROGATE.sub("\0", text).encode("utf-8"), data[used:]
                self.masked = True
        n = min(len(b), len(self.pending))
        b[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


_SURROGATE = re.compile("[\udc80-\udcff]")


def _text_batches(reader, names: list[str], on_not_utf8, masker: _Utf8Masked | None = None):
    read = 0
    for b in reader:
        cols = []
        for j, c in enumerate(b.columns):
            try:
                c = c.cast(pa.string())
                if masker is not None and masker.masked and pc.any(pc.match_substring(c, "\0")).as_py():
                    for i in np.flatnonzero(pc.match_substring(c, "\0").to_numpy(zero_copy_only=False)):
                        if on_not_utf8 is not None:
                            on_not_utf8(read + int(i), j)
                    c = pc.replace_substring(c, "\0", "\ufffd")
                cols.append(c)
            except pa.ArrowInvalid:
                cells = c.to_pylist()
                for i, v in enumerate(cells):
                    try:
                        v.decode("utf-8")
                    except UnicodeDecodeError:
                        if on_not_utf8 is not None:
                            on_not_utf8(read + i, j)
                cols.append(pa.array([v.decode("utf-8", "replace") for v in cells], pa.string()))
        read += b.num_rows
        yield pa.RecordBatch.from_arrays(cols, names=names)


def _report_bad_rows(path: Path, size: int, rel: str, bad_rows: list, ctx: ExportContext) -> int:
    """One bad_text_line issue per ragged row (the first few; the rest counted in one), with byte
    offsets found in the file. Returns the bytes skipped."""
    if not bad_rows:
        return 0
    total = 0
    rest_n, rest_bytes, rest_offset = 0, 0, None
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        cursor = 0
        for i, row in enumerate(bad_rows):
            text = (row.text or "").encode("utf-8")
            if b"\0" in text:  # bytes that were not UTF-8, masked (_Utf8Masked): any such byte
                m = re.compile(
                    b"[\\x80-\\xff]".join(re.escape(part) for part in text.split(b"\0")), re.S
                ).search(mm, cursor, size)
                at = m.start() if m else -1
            else:
                at = mm.find(text, cursor, size) if text else -1
            length = len(text)
            if at >= 0:
                end = at + length
                length += (
                    2 if mm[end : end + 2] == b"\r\n" else (1 if mm[end : end + 1] in (b"\n", b"\r") else 0)
                )
                cursor = at + length
            offset = at if at >= 0 else None
            total += length
            if i < _SHOWN_BAD_LINES:
                line = f" (line {row.number})" if row.number is not None else ""
                ctx.log.add(
                    Issue(
                        rel,
                        "bad_text_line",
                        f"row{line} has {row.actual_columns} cells, the header {row.expected_columns}: "
                        f"ragged, quoted wrongly or cut short; row skipped",
                        byte_offset=offset,
                        byte_length=length,
                    )
                )
            else:
                rest_n += 1
                rest_bytes += length
                rest_offset = offset if rest_offset is None else rest_offset
    if rest_n:
        ctx.log.add(
            Issue(
                rel,
                "bad_text_line",
                f"{rest_n} more rows with a cell count other than the header's: skipped",
                byte_offset=rest_offset,
                byte_length=rest_bytes,
                count=rest_n,
            )
        )
    return total


def _good_seqs(bad_rows: list, total: int) -> np.ndarray | None:
    """Data-row indices of the rows pyarrow returned, counting the skipped ones, so ``seq`` is
    the row's index in the file; None when the skipped rows' positions are not known."""
    idx = [r.number - 2 for r in bad_rows if r.number is not None]
    if len(idx) != len(bad_rows) or len(set(idx)) != len(idx) or any(i < 0 or i >= total for i in idx):
        return None
    return np.delete(np.arange(total, dtype=np.int64), idx)


_ROW = re.compile(r"Row #(\d+)")


def data_row_offset(path: Path, size: int, data_row: int) -> int | None:
    """Byte offset of data row ``data_row`` (0 = the first after the header), counting lines."""
    return _row_offset(path, size, f"Row #{data_row + 2}")


def _row_offset(path: Path, size: int, message: str) -> int | None:
    """Byte offset of the line pyarrow names in an error ("Row #N", 1 = the header)."""
    m = _ROW.search(message)
    if not m:
        return None
    n = int(m.group(1))
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            at = 0
            for _ in range(n - 1):
                nl = mm.find(b"\n", at, size)
                if nl < 0:
                    return None
                at = nl + 1
            return at
    except (OSError, ValueError):
        return None


# -- converting ----------------------------------------------------------------------------------


class _State:
    """Per-file conversion: batches in, canonical rows out, bad cells counted for one issue each."""

    def __init__(
        self, kind: str, rel: str, lay: Layout, tables: list[str], ctx: ExportContext, res: SourceResult
    ):
        self.kind, self.rel, self.lay, self.tables, self.ctx, self.res = kind, rel, lay, tables, ctx, res
        self.fallback_device = 0
        self.level0 = False  # no stream and task columns: rows keyed by (device, start)
        self.bad: dict[int, int] = {}  # column index -> cells that were not numbers
        self.no_key = 0
        self.no_key_names: list[str] = []
        self.no_start = 0
        self.metric_names = [export_values.metric_name(lay.header[i]) for i in lay.metrics]
        self.metric_labels = [lay.header[i].replace("\ufeff", "").strip() for i in lay.metrics]

    def _raw(self, i: int) -> pa.Array:
        a = self.batch.column(i)
        return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a

    def _num(self, role: str, conv) -> pa.Array | None:
        i = self.lay.roles.get(role)
        if i is None:
            return None
        out, bad = conv(self._raw(i))
        self._count(i, bad)
        return out

    def _count(self, i: int, bad: pa.Array) -> None:
        n = pc.sum(bad).as_py() or 0
        if n:
            self.bad[i] = self.bad.get(i, 0) + n

    def convert(self, batch: pa.RecordBatch, seq: np.ndarray) -> None:
        self.batch = batch
        n = batch.num_rows
        if n == 0:
            return
        if self.level0:
            stream = task = pa.nulls(n, pa.int64())
        else:
            stream = self._num("stream", export_values.to_int32)
            task = self._num("task", export_values.to_int32)
        start = self._num("start", export_values.us_to_ns)
        dur = self._num("duration", export_values.us_to_ns)
        if dur is not None:
            end = pc.add(start, dur)
        elif "stop" in self.lay.roles:
            end = self._num("stop", export_values.us_to_ns)
        else:
            end = pa.nulls(n, pa.int64())
        if "device" in self.lay.roles:
            dev = self._num("device", export_values.to_int32)
            dev = pc.fill_null(dev, self.fallback_device)
        else:
            dev = pa.array(np.full(n, self.fallback_device, dtype=np.int64))
        self.res.devices |= set(pc.unique(dev).to_pylist())

        if self.level0:  # keyed by (device, start)
            has_key = pa.array(np.ones(n, dtype=bool))
        else:
            has_key = pc.and_(pc.is_valid(stream), pc.is_valid(task))
        keep = pc.and_(has_key, pc.is_valid(start))
        n_no_key = n - (pc.sum(has_key).as_py() or 0)
        if n_no_key:
            self.no_key += n_no_key
            names = self._strings("op_name")
            if names is not None and len(self.no_key_names) < 3:
                for s in pc.unique(pc.filter(names, pc.invert(has_key))).to_pylist():
                    if s is not None and s not in self.no_key_names and len(self.no_key_names) < 3:
                        self.no_key_names.append(s)
        kept = pc.sum(keep).as_py() or 0
        self.no_start += (n - n_no_key) - kept
        if kept == 0:
            return

        def f(a):
            return pc.filter(a, keep)

        self.batch = pa.RecordBatch.from_arrays([f(c) for c in batch.columns], names=batch.schema.names)
        # from here on columns are read from the kept rows only
        dev, stream, task, start, end = f(dev), f(stream), f(task), f(start), f(end)
        seq = seq[np.asarray(keep.to_numpy(zero_copy_only=False), dtype=bool)]
        mn = pc.min(start).as_py()
        if mn is not None and (self.res.start_ns is None or mn < self.res.start_ns):
            self.res.start_ns = mn

        context = self._num("context", export_values.to_int)
        if context is not None:
            context = pc.if_else(pc.equal(context, NO_CONTEXT), pa.nulls(kept, pa.int64()), context)
        model = self._num("model", export_values.to_int)
        ttype = self._strings("task_type") if "task_type" in self.lay.roles else self._strings("core")
        core = self._strings("core") if "core" in self.lay.roles else ttype
        common = {"device_id": dev, "source_file": self.rel, "seq": seq, "stream_id": stream, "task_id": task}

        if "task_runs" in self.tables and not self.level0:
            self._write(
                "task_runs",
                {
                    **common,
                    "start_ns": start,
                    "end_ns": end,
                    "source": self.kind,
                    "task_type_name": ttype,
                    "context_id": context,
                    "model_id": model,
                },
            )
        if "task_ops" in self.tables:
            cols = {
                **common,
                "source": "export",
                "start_ns": start,
                "context_id": context,
                "model_id": model,
                "task_type": ttype,
                "accelerator_core": core,
                "block_dim": self._num("block_dim", export_values.to_int32),
                "mix_block_dim": self._num("mix_block_dim", export_values.to_int32),
                # the exporter's Wait Time as it printed it (docs/formats.md#export-wait)
                "wait_ns": self._num("wait", export_values.us_to_ns),
            }
            for role in STRINGS:
                cols[role] = self._strings(role)
            self._write("task_ops", cols)
        if "task_metrics" in self.tables and self.lay.metrics:
            m = len(self.lay.metrics)
            vals = []
            for i in self.lay.metrics:
                v, bad = export_values.to_float(self._raw(i))
                self._count(i, bad)
                vals.append(v)
            rows = pa.array(np.tile(np.arange(kept, dtype=np.int64), m))
            which = pa.array(np.repeat(np.arange(m, dtype=np.int64), kept))
            self._write(
                "task_metrics",
                {
                    "device_id": pc.take(dev, rows),
                    "source_file": self.rel,
                    "seq": seq[rows.to_numpy()],
                    "stream_id": pc.take(stream, rows),
                    "task_id": pc.take(task, rows),
                    "context_id": pc.take(context, rows) if context is not None else None,
                    "start_ns": pc.take(start, rows),
                    "metric": pc.take(pa.array(self.metric_names, pa.string()), which),
                    "label": pc.take(pa.array(self.metric_labels, pa.string()), which),
                    "value": pa.concat_arrays(vals),
                },
            )

    def _strings(self, role: str) -> pa.Array | None:
        i = self.lay.roles.get(role)
        if i is None:
            return None
        if role in export_values.SHAPE_COLUMNS:  # a scalar's empty shape stays ""
            return export_values.clean_shapes(self._raw(i))
        return export_values.clean(self._raw(i))

    def _write(self, table: str, cols: dict) -> None:
        cols = {k: v for k, v in cols.items() if v is not None}
        self.ctx.sink.write(table, cols)
        self.res.add_rows(table, len(cols["seq"]))

    def finish(self) -> None:
        log, rel = self.ctx.log, self.rel
        if self.no_key:
            eg = f" (e.g. {', '.join(self.no_key_names)})" if self.no_key_names else ""
            log.add(
                Issue(
                    rel,
                    "no_task_key",
                    f"{self.no_key} row(s) with no Stream ID / Task ID{eg}: communication ops and other "
                    f"host-side rows that ran no device task of their own; they name no execution, so "
                    f"they are not in task_runs, task_ops or task_metrics",
                    count=self.no_key,
                )
            )
        if self.no_start:
            log.add(
                Issue(
                    rel,
                    "bad_value",
                    f"{self.no_start} row(s) with no start time: they name no execution and are skipped",
                    count=self.no_start,
                )
            )
        for i, n in sorted(self.bad.items()):
            log.add(
                Issue(
                    rel,
                    "bad_value",
                    f"{n} cell(s) of column '{self.lay.header[i].strip()}' are not "
                    f"numbers of the expected kind: NULL",
                    count=n,
                )
            )


# -- the exporters' totals: api_statistic and step_trace_time ------------------------------------

# kinds read by read_totals: the exporters' totals, and msprof's AI CPU summary (one row per AI
# CPU task, the same cell rules: docs/formats.md#export-aicpu)
TOTALS_KINDS = {"api_statistic": "api_totals", "step_trace_time": "step_times", "aicpu": "aicpu_tasks"}
HOST_DEVICE = 64
# kind -> role -> (header keys, converter); the roles of REQUIRED_TOTALS must be present
TOTALS_ROLES: dict[str, dict[str, tuple[tuple[str, ...], str]]] = {
    "api_statistic": {
        "device_id": (("device_id", "deviceid"), "device"),
        "level": (("level",), "text"),
        "api_name": (("apiname",), "text"),
        "time_ns": (("time(us)",), "us"),
        "count": (("count",), "int"),
        "avg_ns": (("avg(us)",), "us"),
        "min_ns": (("min(us)",), "us"),
        "max_ns": (("max(us)",), "us"),
        "variance_us2": (("variance",), "float"),
    },
    "step_trace_time": {
        "device_id": (("device_id", "deviceid"), "device"),
        "step_id": (("step",), "int"),
        "computing_ns": (("computing",), "us"),
        "communication_not_overlapped_ns": (("communication(notoverlapped)",), "us"),
        "overlapped_ns": (("overlapped",), "us"),
        "communication_ns": (("communication",), "us"),
        "free_ns": (("free",), "us"),
        "stage_ns": (("stage",), "us"),
        "bubble_ns": (("bubble",), "us"),
        "communication_not_overlapped_exclude_receive_ns": (
            ("communication(notoverlappedandexcludereceive)",),
            "us",
        ),
        "preparing_ns": (("preparing",), "us"),
    },
    "aicpu": {
        "device_id": (("device_id", "deviceid"), "device"),
        "start_ns": (("timestamp(us)",), "us"),
        "node_name": (("node",), "text"),
        "compute_ns": (("compute_time(us)",), "us"),
        "memcpy_ns": (("memcpy_time(us)",), "us"),
        "task_ns": (("task_time(us)",), "us"),
        "dispatch_ns": (("dispatch_time(us)",), "us"),
        "total_ns": (("total_time(us)",), "us"),
        "stream_id": (("streamid",), "int"),
        "task_id": (("taskid",), "int"),
    },
}
# a row without one of these is no row of the table: skipped and counted (bad_row, a loss)
REQUIRED_TOTALS = {
    "api_statistic": ("level", "api_name", "time_ns", "count"),
    "step_trace_time": ("step_id",),
    "aicpu": ("start_ns",),
}
# columns the file must have to be read at all
REQUIRED_TOTALS_COLUMNS = {
    "api_statistic": ("level", "api_name", "time_ns", "count"),
    "step_trace_time": ("step_id", "computing_ns", "free_ns", "stage_ns"),
    "aicpu": ("start_ns", "task_ns"),
}


def read_totals(path: Path, kind: str, ctx: ExportContext, size: int | None = None) -> SourceResult:
    """An exporter's summary of totals (``api_statistic`` into ``api_totals``, ``step_trace_time``
    into ``step_times``), read when the export holds no events to compute them from
    (docs/formats.md#export-totals); msprof's ``aicpu`` summary into ``aicpu_tasks``, its rows
    AI CPU tasks, end = Timestamp + Task_time (docs/formats.md#export-aicpu). Every cell is converted as the task CSVs' are (``values``);
    a row whose key or count is not a value (an empty level, a step that is no integer) is
    skipped and counted (``bad_row``, a loss), a bad optional cell is NULL (``bad_value``); a
    file without the columns it needs is not read (``unreadable_file``)."""
    path = Path(path)
    rel = ctx.rel(path)
    res = SourceResult()
    table = TOTALS_KINDS[kind]
    size, header = _opened_header(path, size, rel, ctx)
    if not header:
        return res
    keys = [export_values.column_key(h) for h in header]
    cols: dict[str, int] = {}
    for role, (names, _conv) in TOTALS_ROLES[kind].items():
        at = next((i for i, k in enumerate(keys) if k in names), None)
        if at is not None:
            cols[role] = at
    missing = [r for r in REQUIRED_TOTALS_COLUMNS[kind] if r not in cols]
    if missing:
        ctx.log.add(
            Issue(
                rel,
                "unreadable_file",
                f"no column for {', '.join(missing)}, so its rows cannot fill {table}: file not read "
                f"(header: {','.join(h.strip() for h in header)[:300]})",
                byte_offset=0,
                byte_length=size,
            )
        )
        return res
    bad_rows: list = []
    not_utf8: set[int] = set()
    try:
        batches = list(_batches(path, size, len(header), bad_rows.append, lambda row, col: not_utf8.add(row)))
    except (pa.ArrowInvalid, OSError) as e:
        _not_parseable(ctx, rel, path, size, e)
        return res
    skipped = _report_bad_rows(path, size, rel, bad_rows, ctx)
    good = sum(b.num_rows for b in batches)
    seqs = _good_seqs(bad_rows, good + len(bad_rows)) if bad_rows else None
    if not_utf8:
        ctx.log.add(
            Issue(
                rel,
                "bad_value",
                f"{len(not_utf8)} row(s) with cells that are not UTF-8 text: read with U+FFFD for the bad bytes",
                count=len(not_utf8),
            )
        )
    # API calls are the host's (as an export's API events are, device 64); a step is a device's
    if table == "api_totals":
        fallback = HOST_DEVICE
    else:
        fallback = ctx.default_device if ctx.default_device is not None else 0
    bad_cells: dict[str, int] = {}
    dropped = 0
    first_dropped: int | None = None
    seq0 = 0
    for b in batches:
        n = b.num_rows
        seq = seqs[seq0 : seq0 + n] if seqs is not None else np.arange(seq0, seq0 + n, dtype=np.int64)
        seq0 += n
        if n == 0:
            continue
        out: dict[str, pa.Array] = {}
        for role, (_names, conv) in TOTALS_ROLES[kind].items():
            if role not in cols:
                continue
            raw = b.column(cols[role])
            if conv == "text":
                out[role] = export_values.clean(raw)
                continue
            if conv == "device":
                text = export_values.clean(raw)
                host = pc.fill_null(pc.equal(pc.utf8_lower(text), "host"), False)
                v, bad = export_values.to_int32(pc.if_else(host, pa.nulls(n, pa.string()), text))
                v = pc.if_else(host, pa.scalar(HOST_DEVICE, pa.int64()), v)
            elif conv == "us":
                v, bad = export_values.us_to_ns(raw)
            elif conv == "int":
                v, bad = export_values.to_int(raw)
            else:
                v, bad = export_values.to_float(raw)
            nbad = pc.sum(bad).as_py() or 0
            if nbad and role not in REQUIRED_TOTALS[kind]:
                bad_cells[header[cols[role]].strip()] = bad_cells.get(header[cols[role]].strip(), 0) + nbad
            out[role] = v
        keep = pa.array(np.ones(n, dtype=bool))
        for role in REQUIRED_TOTALS[kind]:
            keep = pc.and_(keep, pc.is_valid(out[role]))
        kept = pc.sum(keep).as_py() or 0
        dropped += n - kept
        mask = np.asarray(keep.to_numpy(zero_copy_only=False), dtype=bool)
        if kept < n and first_dropped is None:
            first_dropped = int(seq[~mask][0])
        if not kept:
            continue
        out = {k: pc.filter(v, keep) for k, v in out.items()}
        dev = out.pop("device_id", None)
        dev = pc.fill_null(dev, fallback) if dev is not None else pa.array(np.full(kept, fallback, np.int64))
        if table == "aicpu_tasks":
            task = out.pop("task_ns", None)
            out["end_ns"] = pc.add(out["start_ns"], task) if task is not None else None
            out["record_format"] = "export"
        res.devices |= {d for d in pc.unique(dev).to_pylist() if d != HOST_DEVICE}
        ctx.sink.write(table, {"device_id": dev, "source_file": rel, "seq": seq[mask], **out})
        res.add_rows(table, kept)
    if dropped:
        need = " or ".join(header[cols[r]].strip() for r in REQUIRED_TOTALS[kind])
        ctx.log.add(
            Issue(
                rel,
                "bad_row",
                f"{dropped} row(s) without a usable {need} (empty, N/A or not a number of its kind; "
                f"the first is data row {first_dropped + 1}): not in {table}, lost",
                byte_offset=data_row_offset(path, size, first_dropped),
                count=dropped,
            )
        )
    for name, nbad in sorted(bad_cells.items()):
        ctx.log.add(
            Issue(
                rel,
                "bad_value",
                f"{nbad} cell(s) of column '{name}' are not numbers of the expected kind: NULL",
                count=nbad,
            )
        )
    ctx.log.decoded(size - skipped)
    return res
