"""AI CPU task records of generation 2 (``DATA_PREPROCESS.[dev.]AICPU.<dev>.slice_N``) into
``aicpu_tasks``.

The stream is one of two layouts, told apart by its first two bytes (docs/formats.md#aicpu-text,
#aicpu-binary):

* text: NUL-separated records. A ``Thread[...] ... task end, tickDrvTopHalf=...`` record per
  task, each optionally preceded by a ``Node:<name>, Run start:<us> <ticks>, ... Run end:<us>
  <ticks>`` record naming it (a node record applies to the thread record right after it);
* binary: 128-byte records, host magic 0x5A5A and data tag 60, with stream and task ids
  (``pipeline/layouts/prof.py``, ``AICPU_TASK``).

Both are decoded a chunk at a time with numpy / Arrow compute: the text is split at its NULs
and every piece matched by one regular expression per record kind. A piece that is neither
kind and a node record with no thread record after it (``bad_text_line``), and a binary record
of another data tag (``counted_tag``) are reported with their bytes, never dropped silently.
Which operator a record belongs to is the SQL's (``sql/intermediate/int_aicpu_ops.sql``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.layouts import HOST_MAGIC
from pipeline.layouts import prof as prof_layouts
from pipeline.readers.clock import DeviceClock
from pipeline.readers.decode import reject_records, report_bytes, runs_of_true
from pipeline.readers.hiprof.device import ns
from pipeline.readers.issues import Issue, IssueLog
from pipeline.readers.prof.files import Stream
from pipeline.readers.prof.records import read_fixed
from pipeline.readers.slices import SliceStream

I64 = np.int64
_SP = r"\s*"
# Numbers are bounded so that every one fits an int64 after its conversion (ticks < 10^18, us
# times 1000): a record with a longer number is no record of either kind (bad_text_line).
THREAD_RX = (
    r"^\s*Thread\[\s*(?P<thread>\d{1,9})\]\s*process device\[\s*\d{1,9}\]:aicpu\[\s*\d{1,9}\]\s*task end,"
    + "".join(
        rf"{_SP}{key}={_SP}(?P<{name}>\d{{1,18}}),"
        for key, name in (
            ("tickDrvTopHalf", "submit"),
            ("tickDrvBottomHalf", "schedule"),
            ("tickBeforeRun", "before"),
            ("tickAfterRun", "after"),
        )
    )
    + rf"{_SP}dispatchTime={_SP}(?P<dispatch>\d{{1,12}}){_SP}us,{_SP}totalTime={_SP}(?P<total>\d{{1,12}}){_SP}us\.?\s*$"
)
_MARK = r":\s*(?P<{0}_us>\d{{1,15}})\s+(?P<{0}>\d{{1,18}})\s*"
NODE_RX = (
    r"^\s*Node:(?P<name>[^,]*),\s*Run start"
    + _MARK.format("rs")
    + r"(?:,[^,:]*"
    + _MARK.format("cs")
    + r",[^,:]*"
    + _MARK.format("ms")
    + r",[^,:]*"
    + _MARK.format("me")
    + r")?,\s*Run end"
    + _MARK.format("re")
    + r"$"
)


def is_binary(s: Stream) -> bool:
    """The stream starts with the host magic (0x5A5A): 128-byte records, else text."""
    for f in s.files:
        if f.size:
            with open(f.path, "rb") as fh:
                head = fh.read(2)
            return len(head) == 2 and int.from_bytes(head, "little") == HOST_MAGIC
    return False


def read_aicpu(s: Stream, dev: int, clock: DeviceClock, sink, log: IssueLog) -> None:
    if is_binary(s):
        _read_binary(s, dev, clock, sink, log)
    else:
        _read_text(s, dev, clock, sink, log)


def _ns(clock: DeviceClock, syscnt: np.ndarray) -> pa.Array:
    """Run-clock ns of device ticks; NULL where the tick is 0 (not written) or the clock unknown."""
    out = ns(clock, syscnt)
    if isinstance(out, pa.Array):
        return out
    return pa.array(out, pa.int64(), mask=np.asarray(syscnt) == 0)


def _rows(cols: dict, clock: DeviceClock, dev: int, fmt: str) -> dict:
    n = len(cols["seq"])
    return {
        "device_id": np.full(n, dev, np.int32),
        "record_format": fmt,
        **cols,
        "submit_ns": _ns(clock, cols["submit_syscnt"]),
        "start_ns": _ns(clock, cols["start_syscnt"]),
        "end_ns": _ns(clock, cols["end_syscnt"]),
        "before_run_ns": _ns(clock, cols["before_run_syscnt"]),
        "after_run_ns": _ns(clock, cols["after_run_syscnt"]),
    }


# --- binary ----------------------------------------------------------------------------------


def _read_binary(s: Stream, dev: int, clock: DeviceClock, sink, log: IssueLog) -> None:
    layout = prof_layouts.AICPU_TASK
    stream, batches = read_fixed(s.files, layout, log, dev, aged=True, host_magic=True)
    for b in batches:
        b = reject_records(
            stream,
            log,
            dev,
            b,
            b.records["tag"] != prof_layouts.AICPU_TASK_TAG,
            layout.size,
            "counted_tag",
            f"record(s) of a data tag other than {prof_layouts.AICPU_TASK_TAG} (an AI CPU task) "
            "decoded and counted, not stored",
        )
        r = b.records
        if not len(r):
            continue
        us = {k: r[k].astype(I64) for k in ("compute_start_us", "memcpy_start_us", "memcpy_end_us")}
        cols = {
            "source_file": stream.source_files(b.offsets),
            "seq": b.seq,
            "stream_id": (r["stream_id"] % 2048).astype(np.int32),
            "task_id": r["task_id"].astype(np.int32),
            "node_name": pa.nulls(len(r), pa.string()),
            "aicpu_thread": r["thread_id"].astype(I64),
            "submit_syscnt": r["submit_syscnt"].astype(I64),
            "schedule_syscnt": r["schedule_syscnt"].astype(I64),
            "before_run_syscnt": r["before_run_syscnt"].astype(I64),
            "after_run_syscnt": r["after_run_syscnt"].astype(I64),
            "start_syscnt": r["run_start_syscnt"].astype(I64),
            "end_syscnt": r["run_end_syscnt"].astype(I64),
            "dispatch_ns": r["dispatch_us"].astype(I64) * 1000,
            "total_ns": r["total_us"].astype(I64) * 1000,
            "compute_ns": (us["memcpy_start_us"] - us["compute_start_us"]) * 1000,
            "memcpy_ns": (us["memcpy_end_us"] - us["memcpy_start_us"]) * 1000,
        }
        sink.write("aicpu_tasks", _rows(cols, clock, dev, "binary"))


# --- text ------------------------------------------------------------------------------------


def _read_text(s: Stream, dev: int, clock: DeviceClock, sink, log: IssueLog) -> None:
    """Chunk by chunk: a chunk is cut after its last NUL, and before a Node record that ends
    it, so that a record and the node record naming it are decoded together."""
    stream = SliceStream(s.files, log=log, device_id=dev)
    carry, carry_at, seq0 = b"", 0, 0
    for offset, data in stream.chunks():
        buf = carry + data
        start = carry_at if carry else offset
        cut = buf.rfind(b"\0") + 1
        if cut:
            prev = buf.rfind(b"\0", 0, cut - 1) + 1
            if buf[prev : cut - 1].lstrip().startswith(b"Node:"):
                cut = prev
        if cut:
            seq0 = _text_pieces(buf[:cut], start, seq0, stream, dev, clock, sink, log)
        carry, carry_at = buf[cut:], start + cut
    if carry:
        seq0 = _text_pieces(carry, carry_at, seq0, stream, dev, clock, sink, log)


def _ints(a: pa.Array) -> np.ndarray:
    return pc.cast(pc.cast(a, pa.string()), pa.int64()).to_numpy(zero_copy_only=False)


def _text_pieces(buf: bytes, start: int, seq0: int, stream, dev, clock, sink, log) -> int:
    """The records of ``buf`` (stream offset ``start``) into rows; returns the next seq."""
    pieces = buf.split(b"\0")
    if pieces and not pieces[-1]:
        pieces.pop()  # the NUL that ends the last record
    n = len(pieces)
    lengths = np.fromiter(map(len, pieces), I64, n)
    offsets = start + np.concatenate(([0], np.cumsum(lengths + 1)[:-1])).astype(I64)
    arr = pa.array(pieces, pa.binary())
    blank = ~pc.match_substring_regex(arr, r"\S").to_numpy(zero_copy_only=False)
    thread = pc.extract_regex(arr, THREAD_RX)
    node = pc.extract_regex(arr, NODE_RX)
    is_thread = thread.is_valid().to_numpy(zero_copy_only=False)
    is_node = node.is_valid().to_numpy(zero_copy_only=False) & ~is_thread
    nxt_thread = np.zeros(n, bool)
    nxt_thread[:-1] = is_thread[1:]
    named = np.zeros(n, bool)  # a thread record with its node record right before it
    named[1:] = is_thread[1:] & is_node[:-1]
    bad = ~(is_thread | is_node | blank)
    lone = is_node & ~nxt_thread
    skipped = _report(bad, offsets, lengths, stream, log, dev, "bad_text_line",
                      "AI CPU text record(s) neither a Thread nor a Node record; skipped")  # fmt: skip
    skipped += _report(lone, offsets, lengths, stream, log, dev, "bad_text_line",
                       "AI CPU Node record(s) with no Thread record after them; skipped")  # fmt: skip
    log.decoded(len(buf) - skipped)
    idx = np.flatnonzero(is_thread)
    if not len(idx):
        return seq0
    t = thread.filter(pa.array(is_thread))
    node_of = np.where(named, np.arange(n) - 1, -1)[idx]
    nd = node.take(pa.array(np.maximum(node_of, 0)))
    has = pa.array(node_of >= 0)
    names = _names(
        pc.if_else(has, nd.field("name"), pa.nulls(len(idx), pa.binary())),
        stream,
        offsets[np.where(node_of >= 0, node_of, idx)],
        log,
        dev,
    )

    def node_us(field):
        """A mark's us of the node record; NULL without a node record or that mark."""
        v = nd.field(field)
        keep = pc.and_(has, pc.greater(pc.binary_length(v), 0))
        return pc.cast(pc.cast(pc.if_else(keep, v, pa.nulls(len(idx), pa.binary())), pa.string()), pa.int64())

    before, after = _ints(t.field("before")), _ints(t.field("after"))
    cols = {
        "source_file": stream.source_files(offsets[idx]),
        "seq": seq0 + np.arange(len(idx), dtype=I64),
        "stream_id": pa.nulls(len(idx), pa.int32()),
        "task_id": pa.nulls(len(idx), pa.int32()),
        "node_name": names,
        "aicpu_thread": _ints(t.field("thread")),
        "submit_syscnt": _ints(t.field("submit")),
        "schedule_syscnt": _ints(t.field("schedule")),
        "before_run_syscnt": before,
        "after_run_syscnt": after,
        "start_syscnt": before,
        "end_syscnt": after,
        "dispatch_ns": _ints(t.field("dispatch")) * 1000,
        "total_ns": _ints(t.field("total")) * 1000,
        "compute_ns": pc.multiply(pc.subtract(node_us("ms_us"), node_us("cs_us")), 1000),
        "memcpy_ns": pc.multiply(pc.subtract(node_us("me_us"), node_us("ms_us")), 1000),
    }
    sink.write("aicpu_tasks", _rows(cols, clock, dev, "text"))
    return seq0 + len(idx)


def _names(raw: pa.Array, stream, offsets: np.ndarray, log: IssueLog, dev: int) -> pa.Array:
    """Node names as text, decoded once per distinct name; bytes that are not UTF-8 become U+FFFD
    and are reported (``bad_value``, with the first such record's offset)."""
    uniq = pc.unique(raw)
    text = [None if v is None else v.decode("utf-8", "replace").strip() for v in uniq.to_pylist()]
    bad = {
        i
        for i, v in enumerate(uniq.to_pylist())
        if v is not None and "\ufffd" in text[i] and b"\xef\xbf\xbd" not in v
    }
    where = pc.index_in(raw, uniq)
    if bad:
        hit = np.isin(where.to_numpy(zero_copy_only=False), list(bad))
        rel, off = stream.locate(int(offsets[np.flatnonzero(hit)[0]]))
        log.add(
            Issue(
                rel,
                "bad_value",
                f"{int(hit.sum())} AI CPU Node record name(s) with bytes that are not UTF-8: read with U+FFFD",
                device_id=dev,
                byte_offset=off,
                count=int(hit.sum()),
            )
        )
    return pa.array(text, pa.string()).take(where)


def _report(mask, offsets, lengths, stream, log, dev, kind, message) -> int:
    """One issue per run of skipped records (their bytes, without the NULs after them); the
    bytes skipped."""
    total = 0
    for i, k in runs_of_true(mask):
        nbytes = int(offsets[i + k - 1] + lengths[i + k - 1] - offsets[i])
        report_bytes(stream, log, dev, int(offsets[i]), nbytes, kind, f"{k} {message}", k)
        total += nbytes
    return total
