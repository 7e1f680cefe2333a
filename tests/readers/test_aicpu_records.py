"""AI CPU task records of generation 2 (docs/formats.md#aicpu-text, #aicpu-binary) decoded from
bytes written here by hand; expected values worked out by hand from those bytes.

The clock: 50 MHz (20 ns a tick), device counter 1,000 at host 5,000,000 ns, so a tick count
t is 5,000,000 + (t - 1,000) * 20 ns.
"""

from __future__ import annotations

import random
import struct

import pyarrow as pa

from pipeline.readers.clock import DeviceClock
from pipeline.readers.issues import IssueLog
from pipeline.readers.prof.aicpu import read_aicpu
from pipeline.readers.prof.files import Stream
from pipeline.readers.slices import SliceFile
from pipeline.warehouse.contracts import contract
from pipeline.warehouse.sink import to_table

CLOCK = DeviceClock(50.0, 1_000, 5_000_000)


def ns(tick: int) -> int:
    return 5_000_000 + (tick - 1_000) * 20


class MemSink:
    def __init__(self):
        self.parts: list[pa.Table] = []

    def write(self, table: str, columns: dict) -> None:
        assert table == "aicpu_tasks"
        self.parts.append(to_table(contract("raw", table), columns))

    def rows(self) -> list[dict]:
        return pa.concat_tables(self.parts).to_pylist() if self.parts else []


def _read(tmp_path, slices: list[bytes]):
    files = []
    for i, data in enumerate(slices):
        p = tmp_path / f"DATA_PREPROCESS.dev.AICPU.3.slice_{i}"
        p.write_bytes(data)
        files.append(SliceFile(p, p.name, len(data)))
    sink, log = MemSink(), IssueLog()
    read_aicpu(Stream("aicpu", 3, "", files, list(range(len(files)))), 3, CLOCK, sink, log)
    return sink.rows(), log


def _thread(
    thread: int, submit: int, schedule: int, before: int, after: int, dispatch: int, total: int
) -> bytes:
    return (
        f"Thread[{thread:2d}] process device[0]:aicpu[ 0] task end, tickDrvTopHalf={submit},"
        f"tickDrvBottomHalf={schedule}, tickBeforeRun={before},tickAfterRun={after}, "
        f"dispatchTime={dispatch} us, totalTime={total} us."
    ).encode()


def test_text_records_with_and_without_node_records(tmp_path):
    t0 = _thread(1, 2_000, 2_010, 2_100, 2_600, 2, 12)
    node3 = b"Node:GetNext, Run start:100 2100, Run end:110 2600"
    t1 = _thread(12, 3_000, 3_005, 3_050, 3_300, 1, 6)
    node6 = b"Node:Default/DropoutGenMask-op281, Run start:200 4000, Compute start:201 4050, Memcpy start:205 4250, Memcpy end:207 4350, Run end:208 4400"  # noqa: E501
    t2 = _thread(3, 3_900, 3_910, 4_000, 4_400, 2, 10)
    raw = b"\0".join([t0, node3, t1, node6, t2]) + b"\0"
    # cut the stream in the middle of the second Thread record: one stream across two slices
    cut = len(t0) + 1 + len(node3) + 1 + 40
    rows, log = _read(tmp_path, [raw[:cut], raw[cut:]])
    assert not log.issues
    assert log.bytes_decoded == len(raw)
    assert [r["seq"] for r in rows] == [0, 1, 2]
    assert [r["node_name"] for r in rows] == [None, "GetNext", "Default/DropoutGenMask-op281"]
    assert [r["aicpu_thread"] for r in rows] == [1, 12, 3]
    assert [r["record_format"] for r in rows] == ["text"] * 3
    assert [r["stream_id"] for r in rows] == [None] * 3
    first = rows[0]
    assert (first["submit_syscnt"], first["schedule_syscnt"]) == (2_000, 2_010)
    assert (first["before_run_syscnt"], first["after_run_syscnt"]) == (2_100, 2_600)
    assert (first["start_ns"], first["end_ns"]) == (ns(2_100), ns(2_600)) == (5_022_000, 5_032_000)
    assert (first["submit_ns"], first["before_run_ns"], first["after_run_ns"]) == (
        5_020_000,
        5_022_000,
        5_032_000,
    )
    assert (first["dispatch_ns"], first["total_ns"]) == (2_000, 12_000)
    assert first["compute_ns"] is None and first["memcpy_ns"] is None
    # the second's Node record has three marks: no compute / memcpy; it starts in slice 0
    assert rows[1]["compute_ns"] is None and rows[1]["source_file"] == "DATA_PREPROCESS.dev.AICPU.3.slice_0"
    # the third's has six: compute = memcpy start - compute start = 205 - 201 us, memcpy = 207 - 205 us
    assert (rows[2]["compute_ns"], rows[2]["memcpy_ns"]) == (4_000, 2_000)
    assert rows[2]["source_file"] == "DATA_PREPROCESS.dev.AICPU.3.slice_1"


def test_text_pieces_that_are_no_record_are_reported_with_their_bytes(tmp_path):
    good = _thread(1, 2_000, 2_010, 2_100, 2_600, 2, 12)
    # not UTF-8, and a tick of 25 digits (no int64 holds it): neither is a record
    junk = b"garbage \xff\xfe here\0" + _thread(1, 10**24, 2_010, 2_100, 2_600, 2, 12)
    lone = b"Node:Orphan, Run start:1 1, Run end:2 2"
    # a Node record names the Thread record right after it: the last one names none
    raw = good + b"\0" + junk + b"\0" + good + b"\0" + lone + b"\0"
    rows, log = _read(tmp_path, [raw])
    assert len(rows) == 2 and [r["seq"] for r in rows] == [0, 1]
    got = [(i.kind, i.byte_offset, i.byte_length, i.count) for i in log.issues]
    assert got == [
        ("bad_text_line", len(good) + 1, len(junk), 2),
        ("bad_text_line", 2 * len(good) + 2 + len(junk) + 1, len(lone), 1),
    ]
    assert "no Thread record after them" in log.issues[1].message
    assert log.bytes_decoded + log.bytes_skipped() == len(raw)
    assert log.bytes_skipped() == len(junk) + len(lone)


def _binary(stream: int, task: int, tag: int = 60, magic: int = 0x5A5A) -> bytes:
    fields = [
        magic, tag, stream, task,
        100, 2_100,  # run start: us, ticks
        101, 104, 105,  # compute start, memcpy start, memcpy end (us)
        110, 2_600,  # run end: us, ticks
        7, 0,  # thread, device
        2_000, 2_010, 2_100, 2_600,  # submit, schedule, before run, after run (ticks)
        0, 2, 12,  # kernel type, dispatch us, total us
    ]  # fmt: skip
    rec = struct.pack("<HHHHQQQQQQQIIQQQQIII", *fields)
    return rec + bytes(128 - len(rec))


def test_binary_records_and_one_of_another_tag(tmp_path):
    raw = _binary(2053, 9) + _binary(4, 10, tag=61) + _binary(4, 11)
    rows, log = _read(tmp_path, [raw[:200], raw[200:]])  # a record across the slice boundary
    assert [(r["stream_id"], r["task_id"], r["seq"]) for r in rows] == [(5, 9, 0), (4, 11, 2)]  # 2053 % 2048
    r = rows[0]
    assert r["record_format"] == "binary" and r["aicpu_thread"] == 7 and r["node_name"] is None
    assert (r["start_ns"], r["end_ns"]) == (ns(2_100), ns(2_600))
    assert r["submit_ns"] == ns(2_000)
    assert (r["dispatch_ns"], r["total_ns"], r["compute_ns"], r["memcpy_ns"]) == (2_000, 12_000, 3_000, 1_000)
    # the record of tag 61 spans both slices: one issue per slice, its bytes in each
    assert [(i.kind, i.source_file[-7:], i.byte_offset, i.byte_length) for i in log.issues] == [
        ("counted_tag", "slice_0", 128, 72),
        ("counted_tag", "slice_1", 0, 56),
    ]
    assert log.bytes_decoded == 256 and log.bytes_skipped() == 128


def test_a_node_name_not_utf8_and_random_bytes(tmp_path):
    node = b"Node:Bad\xffName, Run start:1 2100, Run end:2 2600"
    raw = node + b"\0" + _thread(1, 2_000, 2_010, 2_100, 2_600, 2, 12) + b"\0"
    rows, log = _read(tmp_path, [raw])
    assert [r["node_name"] for r in rows] == ["Bad\ufffdName"]
    assert [(i.kind, i.byte_offset, i.count) for i in log.issues] == [("bad_value", 0, 1)]
    assert log.bytes_decoded == len(raw)  # the record is read, its bad byte shown as U+FFFD
    # bytes of no layout: every byte decoded or reported, nothing raised
    rng = random.Random(5)
    for i in range(30):
        junk = bytes(rng.choice(b"Node:Thread[] ,=0123456789\0\xff\n") for _ in range(rng.randint(1, 400)))
        rows, log = _read(tmp_path / str(i), [junk]) if (tmp_path / str(i)).mkdir() is None else None
        assert log.bytes_decoded + log.bytes_skipped() == len(junk)
